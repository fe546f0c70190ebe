import Testing
@testable import StrataEngine

/// The array moves a leaf makes without going through the arrays' generic paths
/// (`insertMoving`, `init(copying:at:room:)`), and the page size a split leaves each half.
@Suite("A leaf's array moves and split sizes")
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
}
