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

    @Test("every tag byte reads as its own case, and a byte past the last tag is corrupt")
    func tagBytes() throws {
        for tag in RecordTag.allCases {
            // An array holding one value of `tag`, cut off after its tag byte.
            let bytes: [UInt8] = [RecordTag.unkeyed.rawValue, 1, tag.rawValue]
            let value = try? RecordValue.decode(bytes, fields: FieldTable(names: []), collection: "c")
            if tag == .null { #expect(value == .array([.null])) }
        }
        #expect(RecordTag.allCases.map(\.rawValue) == Array(0 ... UInt8(RecordTag.allCases.count - 1)))
        for byte in UInt8(RecordTag.allCases.count) ... 255 {
            #expect { try RecordValue.decode([byte], fields: FieldTable(names: []), collection: "c") } throws: { Self.isCorrupt($0) }
        }
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

/// The bytes FORMAT.md section 15 documents for dictionaries and optionals.
@Suite("Record bytes as documented")
struct DocumentedRecordBytesTests {
    struct Holder: Codable, Equatable {
        var byInt: [Int: String]
        var byPoint: [Point: Int]
        var maybe: Int?
        var list: [Int?]
    }

    struct Point: Codable, Hashable { var x: Int }

    @Test("Int-keyed dictionaries are maps with string keys; other keys alternate in an array; nil fields are omitted, nil elements are tag 0")
    func dictionariesAndOptionals() throws {
        var fields = FieldTable()
        let value = Holder(byInt: [1: "a"], byPoint: [Point(x: 2): 3], maybe: nil, list: [nil, 4])
        let bytes = try RecordEncoder.encode(value, fields: &fields, collection: "c")
        let record = try RecordValue.decode(bytes, fields: fields, collection: "c")
        #expect(record.value(at: "byInt") == .map([.init(name: "1", value: .string("a"))]))
        #expect(record.value(at: "byPoint") == .array([.object([.init(name: "x", value: .int(2))]), .int(3)]))
        #expect(record.value(at: "maybe") == nil)
        #expect(record.value(at: "list") == .array([.null, .int(4)]))
        #expect(try RecordDecoder.decode(Holder.self, from: bytes, fields: fields, collection: "c") == value)
    }
}
