import Testing
@testable import StrataEngine

/// `HeadSort`, the radix sort replays and pending writes put operations in key order with,
/// checked against the standard library's stable sort on the same keys.
@Suite("Sorting by key head")
struct HeadSortTests {
    struct Item: Equatable {
        var group: UInt32
        var head: UInt64
        var tie: UInt32
        var position: UInt32
    }

    /// The standard library's stable sort by (group, head, tie): what `HeadSort` must match.
    static func reference(_ items: [Item]) -> [Item] {
        items.sorted { ($0.group, $0.head, $0.tie) < ($1.group, $1.head, $1.tie) }
    }

    static func sorted(_ items: [Item]) -> [Item] {
        var items = items
        HeadSort.sort(&items, group: \.group, head: \.head) { $0.tie < $1.tie }
        return items
    }

    @Test("random heads in every byte, few groups: the order of a stable comparison sort", arguments: [1, 2, 3] as [UInt64])
    func matchesStableSort(seed: UInt64) {
        var rng = SeededGenerator(seed: seed)
        for count in [0, 1, 2, 63, 64, 65, 1_000, 20_000] {
            let items = (0 ..< count).map { i in
                Item(group: UInt32.random(in: 0 ..< 3, using: &rng), head: rng.next(), tie: 0, position: UInt32(i))
            }
            #expect(Self.sorted(items) == Self.reference(items), "\(count) items")
        }
    }

    @Test("heads that share most bytes, and many equal heads: ties broken by the comparator, equal items kept in order")
    func tiesAndSharedBytes() {
        var rng = SeededGenerator(seed: 9)
        // W1's shape: big-endian ids below 2^24 (five shared bytes), plus equal heads whose
        // keys differ later (the comparator) and whole duplicates (kept in their order).
        let items = (0 ..< 30_000).map { i in
            Item(group: UInt32.random(in: 0 ..< 2, using: &rng) << 20, head: UInt64.random(in: 0 ..< 1 << 12, using: &rng) << 40,
                 tie: UInt32.random(in: 0 ..< 4, using: &rng), position: UInt32(i))
        }
        #expect(Self.sorted(items) == Self.reference(items))
    }

    @Test("items that all share one head and group are left to the comparator alone")
    func allEqualHeads() {
        let items = (0 ..< 500).map { i in Item(group: 7, head: 42, tie: UInt32((i * 37) % 11), position: UInt32(i)) }
        #expect(Self.sorted(items) == Self.reference(items))
    }
}
