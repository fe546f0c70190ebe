/// Sorting by key head in linear time: what a replay (`KeyOrderedReplay`), a
/// transaction's pending writes (`PendingWrites.sortedRun`) and a write buffer's tail
/// (`BufferTail`) do to put operations in key order.
///
/// Why: both sorted with the standard library's comparison sort on (group, head), the key's
/// bytes only where heads tie. That was a quarter of an open after a crash at 1M (perf: the
/// sort's merges 12%, its insertion runs 3%, the comparisons the rest) and a tenth of a
/// buffered load's instructions (callgrind, W1 update at 200k). A least-significant-digit
/// radix sort orders them in a pass per byte of the head, and skips the bytes every head
/// shares: W1's ids are 8-byte big-endian numbers below 2^24, so five of a head's eight
/// bytes are the same for all, and three passes order a batch.
enum HeadSort {
    /// Below this many items a comparison sort is cheaper than the passes' histograms.
    static let smallest = 64

    /// Sorts `items` by `group`, then `head`, ascending; items with the same group and head
    /// by `areInIncreasingOrder` (which sees only such ties). Stable: items equal by all
    /// three keep their order. `T` must be a trivial type (plain numbers).
    @inline(__always)
    static func sort<T>(_ items: inout [T], group: (T) -> UInt32, head: (T) -> UInt64,
                        breakingTiesBy areInIncreasingOrder: (T, T) -> Bool) {
        precondition(_isPOD(T.self), "HeadSort moves items as plain bytes")
        guard items.count >= smallest else {
            items.sort { a, b in
                let (ga, gb) = (group(a), group(b))
                if ga != gb { return ga < gb }
                let (ha, hb) = (head(a), head(b))
                return ha != hb ? ha < hb : areInIncreasingOrder(a, b)
            }
            return
        }
        items.withUnsafeMutableBufferPointer { items in
            radixSort(items, group: group, head: head)
            sortTies(items, group: group, head: head, by: areInIncreasingOrder)
        }
    }

    /// `items` in the byte order of their keys, `key(item)` giving each one's bytes; stable:
    /// items with equal keys keep their order. By heads taken after the bytes all the keys
    /// share (`sharedHeadBytes`, `keyHead(_:after:)`), the bytes compared only where heads
    /// tie: the keys a transaction or a tail holds are often neighbours (ids written in
    /// turn), and heads of the whole keys tied them all (perf, W1 commit.durable: a tail's
    /// sort compared bytes at every step, ~90 µs for 256 keys).
    static func inKeyOrder(_ items: [Int32], key: (Int32) -> UnsafeRawBufferPointer) -> [Int32] {
        let skip = sharedHeadBytes(count: items.count) { key(items[$0]) }
        var order = items.map { (head: keyHead(key($0), after: skip), item: $0) }
        sort(&order, group: { _ in 0 }, head: \.head) { compareBytes(key($0.item), key($1.item)) < 0 }
        return order.map(\.item)
    }

    /// The digits of an item's sort key, least significant first: the head's eight bytes,
    /// then the group's four.
    private static let digits = 12

    @inline(__always)
    private static func digit(_ d: Int, group: UInt32, head: UInt64) -> Int {
        d < 8 ? Int(truncatingIfNeeded: head &>> UInt64(d &* 8)) & 255 : Int(truncatingIfNeeded: group &>> UInt32((d &- 8) &* 8)) & 255
    }

    /// Orders `items` by (group, head), stably: one counting pass per digit that not every
    /// item shares, from the least significant.
    @inline(__always)
    private static func radixSort<T>(_ items: UnsafeMutableBufferPointer<T>, group: (T) -> UInt32, head: (T) -> UInt64) {
        let n = items.count
        let scratch = UnsafeMutableBufferPointer<T>.allocate(capacity: n)
        defer { scratch.deallocate() }
        withUnsafeTemporaryAllocation(of: Int.self, capacity: digits * 256) { counts in
            counts.initialize(repeating: 0)
            // Every digit's histogram in one pass over the items.
            for item in items {
                let (g, h) = (group(item), head(item))
                for d in 0 ..< digits { counts[d &* 256 &+ digit(d, group: g, head: h)] &+= 1 }
            }
            var (source, destination) = (items, scratch)
            for d in 0 ..< digits {
                let bucket = UnsafeMutableBufferPointer(rebasing: counts[d * 256 ..< d * 256 + 256])
                // A digit every item shares leaves the order as it is.
                if bucket[digit(d, group: group(source[0]), head: head(source[0]))] == n { continue }
                var start = 0
                for b in 0 ..< 256 {
                    let count = bucket[b]
                    bucket[b] = start
                    start &+= count
                }
                for item in source {
                    let b = digit(d, group: group(item), head: head(item))
                    destination[bucket[b]] = item
                    bucket[b] &+= 1
                }
                swap(&source, &destination)
            }
            if source.baseAddress != items.baseAddress {
                _ = items.update(fromContentsOf: source)
            }
        }
    }

    /// Sorts each run of items with one group and head by `areInIncreasingOrder`.
    @inline(__always)
    private static func sortTies<T>(_ items: UnsafeMutableBufferPointer<T>, group: (T) -> UInt32, head: (T) -> UInt64,
                                    by areInIncreasingOrder: (T, T) -> Bool) {
        var start = 0
        while start < items.count {
            let (g, h) = (group(items[start]), head(items[start]))
            var end = start + 1
            while end < items.count, head(items[end]) == h, group(items[end]) == g { end += 1 }
            if end - start > 1 {
                var run = UnsafeMutableBufferPointer(rebasing: items[start ..< end])
                run.sort(by: areInIncreasingOrder)
            }
            start = end
        }
    }
}
