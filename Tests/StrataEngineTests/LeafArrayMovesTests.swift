import Testing
@testable import StrataEngine

/// The array moves a leaf makes without going through the arrays' generic paths
/// (`insertMoving`, `init(copying:at:room:)`), its entries written in arrival order with
/// starts in key order, and the page size a split leaves each half.
@Suite("A leaf's array moves, layout and split sizes")
struct LeafArrayMovesTests {
    @Test("insertMoving puts the element where insert(_:at:) does, at every index", arguments: [0, 1, 2, 7, 33])
    func insertMovingMatchesInsert(count: Int) {
        for index in 0 ... count {
            var moved = (0 ..< count).map { UInt32($0 * 10) }
            var inserted = moved
            moved.insertMoving(99, at: index)
            inserted.insert(99, at: index)
            #expect(moved == inserted, "index \(index) of \(count)")
        }
    }

    @Test("a copy from an element address holds the same elements, with the room asked for")
    func copyFromElementAddress() {
        let source: [UInt64] = (0 ..< 40).map { $0 &* 0x9E37_79B9_7F4A_7C15 }
        let copy = [UInt64](copying: source.count, at: source.elementsAddress, room: 8)
        #expect(copy == source)
        #expect(copy.capacity >= source.count + 8)
        let empty = [UInt64](copying: 0, at: nil, room: 8)
        #expect(empty.isEmpty && empty.capacity >= 8)
    }

    @Test("a split leaves each half the page size its entries measure, and the two add up to the whole")
    func splitKeepsPageSizesExact() {
        let limits = NodeLimits(pageSize: 4096)
        let leaf = LeafNode(owner: 1)
        var rng = SeededGenerator(seed: 7)
        // Values past maxInlineValue count as overflow references in the page size: a split
        // that got either half's size from the other's by bytes would be off.
        for i in 0 ..< 60 {
            let key = Array("key\(1000 + i)".utf8)
            let value = [UInt8](repeating: UInt8(i), count: Int.random(in: 0 ... 1_500, using: &rng))
            key.withUnsafeBytes { key in value.withUnsafeBytes { value in
                leaf.insert(at: i, key: key, value: .inline(value), limits: limits)
            } }
        }
        let whole = leaf.measuredPageBytes(limits: limits)
        #expect(leaf.pageBytes == whole)
        let right = leaf.splitOff(from: leaf.balancedSplitIndex(), owner: 1, limits: limits)
        #expect(leaf.pageBytes == leaf.measuredPageBytes(limits: limits))
        #expect(right.pageBytes == right.measuredPageBytes(limits: limits))
        #expect(leaf.pageBytes + right.pageBytes - 1 == whole)
    }

    /// Checks `leaf` against `model` (key → value): its entries in key order, its page
    /// payload decoding to the same, its page size measured, its dead bytes under a quarter.
    private func expectMatches(_ leaf: LeafNode, _ model: [[UInt8]: [UInt8]], limits: NodeLimits, _ step: String) throws {
        let expected = model.sorted { compareBytes($0.key, $1.key) < 0 }
        let entries = (0 ..< leaf.count).map { i in leaf.withEntry(i) { key, value -> ([UInt8], [UInt8]) in
            guard case .inline(let bytes) = value else { return (Array(key), []) }
            return (Array(key), Array(bytes))
        } }
        #expect(entries.map(\.0) == expected.map(\.key), "keys, \(step)")
        #expect(entries.map(\.1) == expected.map(\.value), "values, \(step)")
        #expect(leaf.pageBytes == leaf.measuredPageBytes(limits: limits), "page size, \(step)")
        #expect(leaf.deadBytes * 4 < max(leaf.storage.count, 4), "dead bytes, \(step)")
        #expect(!leaf.isPacked || leaf.checkedIsPacked, "a leaf said packed is, \(step)")
        let page = try PageCodec.decodeLeaf(leaf.pagePayload, address: FrameAddress(offset: 1 << 20, length: 1), limits: limits,
                                            context: CorruptionContext(path: "test", offset: 1 << 20, structure: "leaf"))
        #expect(page.isPacked && page.checkedIsPacked && page.storage == leaf.pagePayload, "page, \(step)")
        #expect((0 ..< page.count).map { page.key(at: $0) } == expected.map(\.key), "page keys, \(step)")
        for (key, _) in expected.prefix(5) {
            #expect(key.withUnsafeBytes { leaf.search($0).found }, "search, \(step)")
        }
    }

    @Test("inserts anywhere, replaced values of every size, removals, copies and splits keep a leaf's entries in key order and its page exact")
    func arrivalOrderLayoutMatchesModel() throws {
        let limits = NodeLimits(pageSize: 4096)
        var rng = SeededGenerator(seed: 46)
        var leaf = LeafNode(owner: 1)
        var model: [[UInt8]: [UInt8]] = [:]
        func value() -> [UInt8] { [UInt8](repeating: UInt8.random(in: 0 ... 255, using: &rng), count: Int.random(in: 0 ... 60, using: &rng)) }
        for step in 0 ..< 3_000 {
            let key = Array("k\(Int.random(in: 0 ..< 90, using: &rng))".utf8)
            let (index, found) = key.withUnsafeBytes { leaf.search($0) }
            switch Int.random(in: 0 ..< 10, using: &rng) {
            case 0 ..< 5 where !found:
                let v = value()
                key.withUnsafeBytes { k in v.withUnsafeBytes { leaf.insert(at: index, key: k, value: .inline($0), limits: limits) } }
                model[key] = v
            case 0 ..< 7 where found:
                let v = value()
                v.withUnsafeBytes { leaf.replaceValue(at: index, with: .inline($0), limits: limits) }
                model[key] = v
            case 7 ..< 9 where found:
                leaf.removeEntry(at: index, limits: limits)
                model[key] = nil
            case 9 where leaf.count >= 2:
                // A split, the halves joined again: the right half appended to the left.
                let right = leaf.splitOff(from: leaf.balancedSplitIndex(), owner: 1, limits: limits)
                try expectMatches(right, model.filter { compareBytes($0.key, right.key(at: 0)) >= 0 }, limits: limits, "right half at \(step)")
                leaf.append(contentsOf: right)
            case 9:
                leaf = leaf.copy(owner: 1, limits: limits)
            default:
                continue
            }
            try expectMatches(leaf, model, limits: limits, "step \(step)")
        }
        #expect(model.count > 20)
    }

    @Test("a leaf filled in key order stays packed, its storage its page; an insert before its end unpacks it, and the page is the same")
    func packedUntilAnInsertBeforeTheEnd() throws {
        let limits = NodeLimits(pageSize: 4096)
        let ordered = LeafNode(owner: 1), shuffled = LeafNode(owner: 1)
        let keys = (0 ..< 30).map { Array("key\(100 + $0)".utf8) }
        for (i, key) in keys.enumerated() {
            key.withUnsafeBytes { ordered.insert(at: i, key: $0, value: .inline($0), limits: limits) }
        }
        #expect(ordered.isPacked && ordered.storage == ordered.pagePayload)
        for key in keys.reversed() {
            key.withUnsafeBytes { shuffled.insert(at: 0, key: $0, value: .inline($0), limits: limits) }
        }
        #expect(!shuffled.isPacked && shuffled.storage != shuffled.pagePayload)
        #expect(shuffled.pagePayload == ordered.pagePayload)
    }
}
