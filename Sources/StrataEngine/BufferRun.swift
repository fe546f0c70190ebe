/// One immutable sorted run of a tree's write buffer (docs/WRITE-BUFFER.md): the puts and
/// deletes of one or more transactions, newest per key, in key order.
///
/// The entries are laid out as a leaf lays them out, so a run is searched with a leaf's
/// search and lent from with a leaf's lend (a lookup that finds its key here hands out a
/// `TreeReader.Location` like one that found it in the tree). A delete is kept as an entry
/// with an empty value and its bit set in `deleted`: a *tombstone*, hiding any older entry
/// of the key in an older run or in the tree.
///
/// A run never changes once built, so snapshots share it freely.
final class BufferRun: @unchecked Sendable {
    /// The entries in key order. Owned by no transaction: no mutator ever changes it.
    let entries: LeafNode
    /// One bit per entry: set for a tombstone.
    private let deleted: [UInt64]
    /// How many of the entries are tombstones.
    let tombstones: Int

    fileprivate init(entries: LeafNode, deleted: [UInt64], tombstones: Int) {
        self.entries = entries
        self.deleted = deleted
        self.tombstones = tombstones
    }

    var count: Int { entries.count }

    /// Whether entry `i` is a tombstone.
    @inline(__always)
    func isDeleted(_ i: Int) -> Bool { deleted[i >> 6] & (1 << UInt64(i & 63)) != 0 }

    /// The index of `key`, or of the first larger key, and whether it is there.
    func search(_ key: UnsafeRawBufferPointer) -> (index: Int, found: Bool) { entries.search(key) }

    /// The key of entry `i`, lent: the run never changes, so the bytes stay valid as long
    /// as the run lives.
    @inline(__always)
    func key(at i: Int) -> UnsafeRawBufferPointer { entries.withUnchangingEntry(i) { key, _ in key } }

    /// The entries of `newer` and `older` in one run, `newer`'s winning where both hold a
    /// key. Tombstones stay: an older run or the tree may still hold their keys.
    static func merging(newer: BufferRun, older: BufferRun, limits: NodeLimits) -> BufferRun {
        var builder = Builder(capacity: newer.entries.storage.count + older.entries.storage.count)
        var i = 0, j = 0
        while i < newer.count || j < older.count {
            let order = i == newer.count ? 1 : j == older.count ? -1 : compareBytes(newer.key(at: i), older.key(at: j))
            if order <= 0 {
                builder.append(entry: i, of: newer, limits: limits)
                i += 1
                if order == 0 { j += 1 }
            } else {
                builder.append(entry: j, of: older, limits: limits)
                j += 1
            }
        }
        return builder.finish()
    }

    /// Builds a run from entries appended in ascending key order.
    struct Builder {
        private let leaf = LeafNode(owner: 0)
        private var deleted: [UInt64] = []
        private var tombstones = 0

        init(capacity: Int = 0) {
            leaf.storage.reserveCapacity(capacity + 1)
        }

        /// Appends `key` (greater than every key appended before) with `value`, or as a
        /// tombstone when `value` is nil.
        mutating func append(key: UnsafeRawBufferPointer, value: ValueSlot?, limits: NodeLimits) {
            let i = leaf.count
            assert(i == 0 || compareBytes(leaf.withUnchangingEntry(i - 1) { k, _ in k }, key) < 0, "a run's keys ascend")
            if i & 63 == 0 { deleted.append(0) }
            if value == nil {
                deleted[i >> 6] |= 1 << UInt64(i & 63)
                tombstones += 1
            }
            leaf.insert(at: i, key: key, value: value ?? .inline(UnsafeRawBufferPointer(start: nil, count: 0)), limits: limits)
        }

        mutating func append(entry i: Int, of run: BufferRun, limits: NodeLimits) {
            let deleted = run.isDeleted(i)
            run.entries.withUnchangingEntry(i) { key, value in append(key: key, value: deleted ? nil : value, limits: limits) }
        }

        /// The run, its key heads taken after the prefix all its keys share.
        consuming func finish() -> BufferRun {
            leaf.rebuildHeads()
            return BufferRun(entries: leaf, deleted: deleted, tombstones: tombstones)
        }
    }
}

/// What a write buffer holds for a key.
enum BufferHit {
    /// Nothing: the tree decides.
    case absent
    /// A tombstone: the key is deleted, whatever the tree holds.
    case deleted
    /// A value, where it lies.
    case entry(TreeReader.Location)
}

/// The runs of one tree's write buffer, newest first: immutable, shared by the snapshots
/// and transactions that see them. A tree with no buffered writes has none (nil), so its
/// lookups pay one test of a reference.
final class SortedRuns: @unchecked Sendable {
    let runs: [BufferRun]
    /// Entries over all runs, tombstones included (a key in two runs counts twice).
    let entries: Int

    init(_ runs: [BufferRun]) {
        self.runs = runs
        self.entries = runs.reduce(0) { $0 + $1.count }
    }

    /// The newest entry of `key` in the runs.
    func find(_ key: UnsafeRawBufferPointer) -> BufferHit {
        for run in runs {
            let (index, found) = run.search(key)
            if found { return run.isDeleted(index) ? .deleted : .entry((run.entries, index)) }
        }
        return .absent
    }

    /// These runs with `run` added as the newest, merged as a binary counter merges: while
    /// the newest run is at least half the size of the one before it, the two become one.
    /// A buffer of n entries then has at most log2(n) runs (a lookup searches each), and an
    /// entry is copied into a merged run at most log2(n) times, each a sequential pass.
    func adding(_ run: BufferRun, limits: NodeLimits) -> SortedRuns {
        var runs = [run] + self.runs
        while runs.count >= 2, runs[0].count * 2 >= runs[1].count {
            let merged = BufferRun.merging(newer: runs[0], older: runs[1], limits: limits)
            runs.replaceSubrange(0 ... 1, with: [merged])
        }
        return SortedRuns(runs)
    }

    /// All runs as one, newest winning: what a merge into the tree applies in key order.
    func merged(limits: NodeLimits) -> BufferRun {
        var result = runs[runs.count - 1]
        for run in runs.dropLast().reversed() { result = BufferRun.merging(newer: run, older: result, limits: limits) }
        return result
    }
}
