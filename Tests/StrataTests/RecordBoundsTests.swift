import Foundation
import Strata
import Testing

/// Crafted record bytes end in `RecordError.corruptRecord`, never a trap, an out-of-bounds
/// read or a stack overflow; values a record could not hold are refused when written.
@Suite("Record bounds")
struct RecordBoundsTests {
    indirect enum Tree: Codable, Equatable {
        case leaf
        case node([Tree])

        static func chain(_ depth: Int) -> Tree { (0 ..< depth).reduce(.leaf) { tree, _ in .node([tree]) } }
    }

    struct Nested: Codable, Equatable {
        var tree: Tree
    }

    static func isCorrupt(_ error: any Error) -> Bool {
        if case RecordError.corruptRecord = error { return true }
        return false
    }

    @Test("100,000 nested arrays are reported as corrupt, not a stack overflow")
    func deeplyNestedBytes() {
        let bytes = [RecordTag.unkeyed.rawValue, 1].repeated(100_000) + [RecordTag.null.rawValue]
        #expect { try RecordValue.decode(bytes, fields: FieldTable(names: []), collection: "c") } throws: { Self.isCorrupt($0) }
        #expect { try RecordDecoder.decode([Int].self, from: bytes, fields: FieldTable(names: []), collection: "c") } throws: { _ in true }
    }

    @Test("fixed-size values cut off at the end of the record are corrupt", arguments: [RecordTag.uuid, .bool, .double, .float, .date])
    func truncatedFixedValues(tag: RecordTag) {
        // An array holding one value of `tag` whose bytes are missing.
        let bytes: [UInt8] = [RecordTag.unkeyed.rawValue, 1, tag.rawValue]
        #expect { try RecordValue.decode(bytes, fields: FieldTable(names: []), collection: "c") } throws: { Self.isCorrupt($0) }
    }

    @Test("a value nesting deeper than the limit is refused when encoded; one at the limit round-trips")
    func encodingDepth() throws {
        var fields = FieldTable(names: [])
        #expect {
            try RecordEncoder.encode(Nested(tree: .chain(RecordLimits.maxNestingDepth)), fields: &fields, collection: "c")
        } throws: { error in
            guard case RecordError.unencodable(_, let reason) = error else { return false }
            return reason.contains("nests deeper than \(RecordLimits.maxNestingDepth)")
        }
        let shallow = Nested(tree: .chain(RecordLimits.maxNestingDepth / 4))
        let bytes = try RecordEncoder.encode(shallow, fields: &fields, collection: "c")
        #expect(try RecordDecoder.decode(Nested.self, from: bytes, fields: fields, collection: "c") == shallow)
        _ = try RecordValue.decode(bytes, fields: fields, collection: "c")
    }
}

extension Array {
    func repeated(_ times: Int) -> [Element] { Array((0 ..< times).map { _ in self }.joined()) }
}
