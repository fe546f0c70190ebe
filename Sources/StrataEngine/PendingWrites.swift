/// A write transaction's own buffered writes to one tree, not yet sorted into a run
/// (docs/WRITE-BUFFER.md): the newest put or delete of each key, found by hashing the key.
///
/// Entries are appended to an unsorted leaf (a key written again gets a new entry, and the
/// old one is left behind), so a put costs an append and a hash, and a lookup that finds
/// its key here lends the value as any leaf lends one (`TreeReader.Location`). Sorting
/// waits for the commit, or for a cursor, which needs key order (`sortedRun`).
final class PendingWrites {
    /// The entries in the order written; only those the table points at are current.
    let entries = LeafNode(owner: 0)
    /// Per entry: a delete (a tombstone).
    private var deleted = EntryFlags()
    /// Per entry: the write of a key the buffer did not hold, whose presence in the tree
    /// was not looked up, so whether it adds to the tree's count is known only at the merge
    /// (or when a count asks: `TreeState.exactCount`). A later write of the key inherits it.
    private(set) var unresolved = EntryFlags()
    /// Open addressing, linear probing, at most half full: 0 for an empty slot, else a
    /// `Slot`. Small at first: most transactions write a few keys to a tree, and each
    /// allocates its own table. Empty while the table is put off (`isIndexed`).
    private var slots: [UInt64]
    /// The keys held (the table's used slots); only while `isIndexed`.
    private var indexedKeys = 0
    /// Whether these are the writes of a transaction that found the tree empty, unbuffered,
    /// and filled it (`TreeChanges.bufferedPut`): built into a tree of full leaves when the
    /// transaction is done with them (`builtTree`), not made a run.
    let buildsTree: Bool

    /// - Parameter buildsTree: `buildsTree`. Such writes start with no table: a load's
    ///   replacing puts need not know whether their key was written before
    ///   (`appendUnindexed`), and the build keeps the newest write of each key from the
    ///   sorted order alone. The table is made the first time something asks for a key
    ///   (`find`, `write`, `forEachCurrent`).
    init(buildsTree: Bool = false) {
        self.buildsTree = buildsTree
        slots = buildsTree ? [] : Array(repeating: 0, count: 16)
    }

    /// Whether the table over the entries exists. Until it does, every entry is a put, and
    /// a key may have several (the newest is current).
    var isIndexed: Bool { !slots.isEmpty }

    /// Whether nothing was written.
    var isEmpty: Bool { entries.count == 0 }

    /// The keys held: each key written counts once, whether its newest write is a put or a
    /// delete.
    var keys: Int {
        ensureIndexed()
        return indexedKeys
    }

    /// The entry written last for `key`.
    /// - Parameter hash: The key's `BloomFilter.hash`, which a write computes once for the
    ///   table and the runs' filters.
    func find(_ key: UnsafeRawBufferPointer, hash: UInt64) -> Int? {
        ensureIndexed()
        let mask = slots.count - 1
        var slot = Int(truncatingIfNeeded: hash) & mask
        while true {
            let stored = Slot(slots[slot])
            if stored.isEmpty { return nil }
            if stored.matches(hash), compareBytes(entries.withUnchangingEntry(stored.entry) { k, _ in k }, key) == 0 {
                return stored.entry
            }
            slot = (slot + 1) & mask
        }
    }

    /// A used slot: the entry (plus one, so that zero is empty) in its low 32 bits, the low
    /// 32 bits of the key's hash in its high ones. A probe compares keys only where the
    /// hashes agree, and growing the table needs no key: in a large first load
    /// (`TreeLoad.swift`) each key read was a miss, a fifth of the transaction's time at
    /// 10M records (perf), for probes passing other keys and for every rehash.
    private struct Slot {
        let bits: UInt64
        init(_ bits: UInt64) { self.bits = bits }
        init(entry: Int, hash: UInt64) { bits = hash << 32 | UInt64(entry + 1) }
        var isEmpty: Bool { bits == 0 }
        var entry: Int { Int(truncatingIfNeeded: bits & 0xFFFF_FFFF) - 1 }
        /// The low 32 bits of the key's hash: where it goes in a table of up to 2³² slots.
        var hash: UInt64 { bits >> 32 }
        func matches(_ hash: UInt64) -> Bool { self.hash == hash & 0xFFFF_FFFF }
    }

    /// Whether entry `i` is a delete.
    func isDeleted(_ i: Int) -> Bool { deleted[i] }

    /// Records the newest write of `key`: `value`, or a delete when it is nil;
    /// `unresolved`: its effect on the count is not known (see `unresolved`).
    func write(_ key: UnsafeRawBufferPointer, hash: UInt64, _ value: ValueSlot?, unresolved isUnresolved: Bool = false, limits: NodeLimits) {
        ensureIndexed()
        let i = append(key, value, limits: limits)
        index(i, key: key, hash: hash, unresolved: isUnresolved)
    }

    /// Records a put of `key` without looking it up: what a load's replacing put does while
    /// nothing has asked for a key (`isIndexed` false). Whether the key was written before,
    /// and so whether it adds to the count, is left to the build (`builtTree`) or to the
    /// table when one is made: the entry is unresolved.
    ///
    /// (Each put of a large first load probed the table at a random slot: at 10M records a
    /// 256 MB table, a cache and TLB miss per put.)
    func appendUnindexed(_ key: UnsafeRawBufferPointer, _ value: ValueSlot, limits: NodeLimits) {
        assert(buildsTree && !isIndexed, "only a load puts off its table")
        let i = append(key, value, limits: limits)
        unresolved.append(true, at: i)
    }

    /// Appends the entry and its delete flag; returns its number.
    private func append(_ key: UnsafeRawBufferPointer, _ value: ValueSlot?, limits: NodeLimits) -> Int {
        let i = entries.count
        // Entry numbers fit the table's 32 bits: a buffer is merged long before
        // (`WriteBufferPolicy.maximumEntries`).
        assert(i < Int(Int32.max))
        entries.insert(at: i, key: key, value: value ?? .inline(UnsafeRawBufferPointer(start: nil, count: 0)), limits: limits)
        deleted.append(value == nil, at: i)
        return i
    }

    /// Points the table at entry `i`, the newest write of `key`, and records its
    /// `unresolved` flag: a rewrite inherits its predecessor's.
    private func index(_ i: Int, key: UnsafeRawBufferPointer, hash: UInt64, unresolved isUnresolved: Bool) {
        let mask = slots.count - 1
        var slot = Int(truncatingIfNeeded: hash) & mask
        while slots[slot] != 0 {
            let stored = Slot(slots[slot])
            let previous = stored.entry
            if stored.matches(hash), compareBytes(entries.withUnchangingEntry(previous) { k, _ in k }, key) == 0 {
                unresolved.append(isUnresolved || unresolved[previous], at: i)
                slots[slot] = Slot(entry: i, hash: hash).bits
                return
            }
            slot = (slot + 1) & mask
        }
        unresolved.append(isUnresolved, at: i)
        slots[slot] = Slot(entry: i, hash: hash).bits
        indexedKeys += 1
        if indexedKeys * 2 > slots.count { grow() }
    }

    /// Makes the table over the entries written so far, unless it exists: each in the order
    /// written, so that the newest write of a key is the one the table points at.
    private func ensureIndexed() {
        guard !isIndexed else { return }
        let count = entries.count
        var size = 16
        while size < 2 * count { size *= 2 }
        slots = Array(repeating: 0, count: size)
        // `index` appends each entry's flag again, taking its predecessor's into account.
        let flags = unresolved
        unresolved = EntryFlags()
        for i in 0 ..< count {
            entries.withUnchangingEntry(i) { key, _ in index(i, key: key, hash: BloomFilter.hash(key), unresolved: flags[i]) }
        }
    }

    /// Calls `body` with each current entry, in no order.
    func forEachCurrent(_ body: (Int) throws -> Void) rethrows {
        ensureIndexed()
        for stored in slots where stored != 0 { try body(Slot(stored).entry) }
    }

    private func grow() {
        var larger = [UInt64](repeating: 0, count: slots.count * 2)
        let mask = larger.count - 1
        for stored in slots where stored != 0 {
            var slot = Int(truncatingIfNeeded: Slot(stored).hash) & mask
            while larger[slot] != 0 { slot = (slot + 1) & mask }
            larger[slot] = stored
        }
        slots = larger
    }

    /// The pending writes as a run, for a commit done with them (`TreeChanges.flushPending`):
    /// when every key was written once and in ascending order — a one-record commit, or keys
    /// written in order — the run takes the entries where they lie, with no copy and no
    /// sort; otherwise `sortedRun()`. Nothing may write to these pending writes afterwards:
    /// the run shares their entries, and runs never change.
    ///
    /// (A one-record durable commit built each tree's one-entry run through a builder, the
    /// entries copied, their heads taken again and the order sorted: 4.8k of the commit's
    /// 81k instructions per tree, callgrind, W1 commit.durable.)
    func takenAsRun() -> BufferRun {
        guard keys == entries.count, isInKeyOrder else { return sortedRun() }
        return BufferRun(taking: entries, deleted: deleted, unresolved: unresolved)
    }

    /// Whether the entries lie in ascending key order.
    private var isInKeyOrder: Bool {
        let leaf = entries
        return (0 ..< max(leaf.count - 1, 0)).allSatisfy { i in
            leaf.withUnchangingEntry(i + 1) { next, _ in leaf.compareKey(at: i, with: next) < 0 }
        }
    }

    /// The current write of every key, in key order, as a run. Sorted by key heads in linear
    /// time (`HeadSort.inKeyOrder`), the bytes compared only where heads tie: a sort comparing
    /// each pair's bytes was 6% of W1's insert.batch with a buffer (callgrind, 100k records).
    func sortedRun() -> BufferRun {
        let leaf = entries
        let order = currentInKeyOrder()
        var builder = BufferRun.Builder(bytes: leaf.bytes.count, entries: order.count)
        for entry in order {
            let i = Int(entry)
            builder.append(entry: i, of: leaf, deleted: isDeleted(i), unresolved: unresolved[i])
        }
        return builder.finish()
    }

    /// The entries of the current write of every key, in key order.
    ///
    /// Gathered in the order they were written, so that the sort reads their keys from
    /// one end of the entries to the other rather than in the table's (hash) order, which
    /// missed the cache at every key of a large load.
    private func currentInKeyOrder() -> [Int32] {
        inKeyOrder(currentInWrittenOrder())
    }

    /// Every entry, current or not, in key order; a key's entries in the order written.
    func allInKeyOrder() -> [Int32] {
        inKeyOrder(Array(0 ..< Int32(entries.count)))
    }

    private func inKeyOrder(_ items: [Int32]) -> [Int32] {
        let leaf = entries
        return HeadSort.inKeyOrder(items) { leaf.withUnchangingEntry(Int($0)) { key, _ in key } }
    }

    /// The current entries in the order written: every entry when no key was written twice
    /// (no table walk, nothing marked), else those the table points at.
    private func currentInWrittenOrder() -> [Int32] {
        let count = entries.count
        guard keys < count else { return Array(0 ..< Int32(count)) }
        var isCurrent = [Bool](repeating: false, count: count)
        for stored in slots where stored != 0 { isCurrent[Slot(stored).entry] = true }
        var current: [Int32] = []
        current.reserveCapacity(keys)
        for i in 0 ..< count where isCurrent[i] { current.append(Int32(i)) }
        return current
    }
}
