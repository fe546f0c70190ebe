import Synchronization

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
    /// Per entry: a tombstone.
    private let deleted: EntryFlags
    /// Per entry: a count not yet resolved (`PendingWrites.unresolved`).
    let unresolved: EntryFlags
    /// How many of the unresolved entries' keys the tree lacks: what they add to its
    /// count. Found by looking each up once, when a count first asks (then kept: the tree
    /// gains or loses such a key only when the buffer is merged into it, which ends the run).
    private let absentUnresolved = Mutex<Int?>(nil)
    /// Which keys the run may hold: a lookup searches only the runs whose filter passes.
    /// Nil for a run of `unfilteredEntries` or fewer, which a lookup searches outright.
    private let filter: BloomFilter?
    /// Whether a merge away from the writer has taken this run (`BufferMerge`): the writer
    /// then never merges it with newer runs, or the merge could not be installed (it finds
    /// the runs it took by identity).
    private let taken = Atomic<Bool>(false)
    /// Whether a merge of runs beside the writer has claimed this run (`RunsMerge`): the
    /// writer then never merges it with other runs itself.
    private let claimed = Atomic<Bool>(false)

    fileprivate init(entries: LeafNode, deleted: EntryFlags, unresolved: EntryFlags, filter: BloomFilter?) {
        self.entries = entries
        self.deleted = deleted
        self.unresolved = unresolved
        self.filter = filter
    }

    /// A run of `entries`, already in ascending key order with one entry per key, taken
    /// as they are (a builder's, or `PendingWrites.takenAsRun`): nothing may change them
    /// afterwards.
    convenience init(taking entries: LeafNode, deleted: EntryFlags, unresolved: EntryFlags) {
        guard entries.count > Self.unfilteredEntries else {
            self.init(entries: entries, deleted: deleted, unresolved: unresolved, filter: nil)
            return
        }
        var filter = BloomFilter(keys: entries.count)
        for i in 0 ..< entries.count {
            filter.insert(hash: BloomFilter.hash(entries.withUnchangingEntry(i) { key, _ in key }))
        }
        self.init(entries: entries, deleted: deleted, unresolved: unresolved, filter: filter)
    }

    /// The most entries a run keeps no filter for: its search compares a few key heads, in
    /// about the time the filter's probes take, and the filter was an allocation, a free and
    /// a hash of each key for every one-record commit's run and for every small run its tier
    /// merges built (callgrind, W1 commit.durable).
    static let unfilteredEntries = 16

    var count: Int { entries.count }

    var isTaken: Bool { taken.load(ordering: .relaxed) }

    /// Marks the run as taken by a merge away from the writer. Called with the writer held.
    func markTaken() { taken.store(true, ordering: .relaxed) }

    var isClaimed: Bool { claimed.load(ordering: .relaxed) }

    /// Marks the run as claimed by a merge of runs beside the writer. Called with the
    /// writer held.
    func markClaimed() { claimed.store(true, ordering: .relaxed) }

    /// Whether the writer may merge this run with others: no merge beside it has the run.
    var isMovable: Bool { !isTaken && !isClaimed }

    /// Whether entry `i` is a tombstone.
    @inline(__always)
    func isDeleted(_ i: Int) -> Bool { deleted[i] }

    /// What this run's unresolved entries add to the count of the tree at `root`.
    func countOfUnresolved(store: PageStore, root: NodeRef?) throws -> Int {
        if let known = absentUnresolved.withLock({ $0 }) { return known }
        var absent = 0
        for i in 0 ..< count where unresolved[i] {
            if try TreeReader.locate(store: store, root: root, key: key(at: i)) == nil { absent += 1 }
        }
        absentUnresolved.withLock { $0 = absent }
        return absent
    }

    /// The index of `key`, or of the first larger key, and whether it is there.
    func search(_ key: UnsafeRawBufferPointer) -> (index: Int, found: Bool) { entries.search(key) }

    /// Where the run's filter lies (`SortedRuns.find`); nil when it keeps none.
    var filterProbe: BloomFilter.Probe? { filter?.probe }

    /// The key of entry `i`, lent: the run never changes, so the bytes stay valid as long
    /// as the run lives.
    @inline(__always)
    func key(at i: Int) -> UnsafeRawBufferPointer { entries.withUnchangingEntry(i) { key, _ in key } }

    /// The entries of `runs` (newest first) in one run, the newest entry of each key
    /// winning. Tombstones stay: an older run or the tree may still hold their keys. An
    /// older entry's unresolved count (`unresolved`) moves to the newest entry of its key.
    /// One run is that run.
    ///
    /// Each run is read through a `RunReader`, which keeps its next key and that key's head:
    /// choosing the smallest compares heads and reads bytes only where they tie. Reading
    /// each run's next key through the run (an array of references, a closure per key) on
    /// every comparison was 9% of the writer's time in W1's insert.batch at 1M (perf).
    static func merging(_ runs: [BufferRun]) -> BufferRun {
        if runs.count == 1 { return runs[0] }
        var builder = Builder(bytes: runs.reduce(0) { $0 + $1.entries.bytes.count }, entries: runs.reduce(0) { $0 + $1.count })
        return withExtendedLifetime(runs) {
            var readers = runs.map(RunReader.init)
            while true {
                // The smallest key among the runs' next entries, from the newest run holding it.
                var winner = -1
                for r in readers.indices where !readers[r].isAtEnd {
                    if winner < 0 || readers[r].precedes(readers[winner]) { winner = r }
                }
                guard winner >= 0 else { break }
                var unresolved = readers[winner].isUnresolved
                for r in winner + 1 ..< readers.count where !readers[r].isAtEnd && readers[r].holdsSameKey(as: readers[winner]) {
                    unresolved = unresolved || readers[r].isUnresolved
                    readers[r].advance()
                }
                builder.append(entry: readers[winner].entry, key: readers[winner].key,
                               deleted: readers[winner].isDeleted, unresolved: unresolved)
                readers[winner].advance()
            }
            return builder.finish()
        }
    }

    /// A position in a run for `merging`, holding no reference: the caller keeps the run.
    private struct RunReader {
        private let run: Unmanaged<BufferRun>
        private let bytes: UnsafeRawBufferPointer
        private let starts: UnsafePointer<UInt32>?
        private let count: Int
        private(set) var position = 0
        /// The key at `position`, and its head (`keyHead`).
        private(set) var key = UnsafeRawBufferPointer(start: nil, count: 0)
        private var head: UInt64 = 0

        init(_ run: BufferRun) {
            self.run = .passUnretained(run)
            bytes = run.entries.bytes
            starts = run.entries.startsBase?.assumingMemoryBound(to: UInt32.self)
            count = run.count
            readKey()
        }

        var isAtEnd: Bool { position == count }

        /// The bytes of the entry at `position`, as encoded.
        var entry: UnsafeRawBufferPointer {
            let start = Int(starts.unsafelyUnwrapped[position])
            return UnsafeRawBufferPointer(rebasing: bytes[start ..< LeafNode.entry(in: bytes, at: start).end])
        }

        var isDeleted: Bool { run._withUnsafeGuaranteedRef { $0.deleted[position] } }
        var isUnresolved: Bool { run._withUnsafeGuaranteedRef { $0.unresolved[position] } }

        /// Whether this reader's key sorts before `other`'s.
        @inline(__always)
        func precedes(_ other: RunReader) -> Bool {
            head != other.head ? head < other.head : compareBytes(key, other.key) < 0
        }

        @inline(__always)
        func holdsSameKey(as other: RunReader) -> Bool {
            head == other.head && compareBytes(key, other.key) == 0
        }

        mutating func advance() {
            position += 1
            readKey()
        }

        private mutating func readKey() {
            guard position < count else { return }
            key = LeafNode.key(in: bytes, at: Int(starts.unsafelyUnwrapped[position]))
            head = keyHead(key)
        }
    }

    /// Builds a run from entries appended in ascending key order, each copied as it is
    /// encoded in its source leaf (a run's entries are a leaf's, so a merge copies bytes
    /// and decodes nothing but keys; through `LeafNode.insert` it measured each entry's
    /// sizes again and grew the leaf's four arrays one entry at a time).
    struct Builder {
        private var storage: [UInt8] = [LeafTag.pageKind]
        private var starts: [UInt32] = []
        private var deleted: EntryFlags
        private var unresolved: EntryFlags

        /// A builder with room for `bytes` bytes of entries, `entries` of them.
        init(bytes: Int, entries: Int) {
            storage.reserveCapacity(bytes + 1)
            starts.reserveCapacity(entries)
            deleted = EntryFlags(capacity: entries)
            unresolved = EntryFlags(capacity: entries)
        }

        /// Appends entry `i` of `source` (its key greater than every key appended before),
        /// as a tombstone when `deleted`, with its count unresolved when `unresolved`.
        mutating func append(entry i: Int, of source: LeafNode, deleted isDeleted: Bool, unresolved isUnresolved: Bool) {
            let range = source.entryRange(i)
            append(entry: UnsafeRawBufferPointer(rebasing: source.bytes[range]), key: LeafNode.key(in: source.bytes, at: range.lowerBound),
                   deleted: isDeleted, unresolved: isUnresolved)
        }

        /// Appends `entry`, an entry as a leaf encodes it, whose key is `key` (greater than
        /// every key appended before).
        mutating func append(entry: UnsafeRawBufferPointer, key: UnsafeRawBufferPointer, deleted isDeleted: Bool, unresolved isUnresolved: Bool) {
            let n = starts.count
            deleted.append(isDeleted, at: n)
            unresolved.append(isUnresolved, at: n)
            assert(n == 0 || compareBytes(storage.withUnsafeBytes { LeafNode.key(in: $0, at: Int(starts[n - 1])) }, key) < 0,
                   "a run's keys ascend")
            starts.append(UInt32(storage.count))
            storage.append(contentsOf: entry)
        }

        /// The run: its key heads taken after the prefix all its keys share, and the
        /// filter of its keys.
        consuming func finish() -> BufferRun {
            let storage = self.storage, starts = self.starts
            let heads = storage.withUnsafeBytes { raw in KeyHeads(count: starts.count) { LeafNode.key(in: raw, at: Int(starts[$0])) } }
            // Never a page: its page size is not kept.
            let leaf = LeafNode(owner: 0, storage: storage, starts: starts, heads: heads, pageBytes: 0)
            return BufferRun(taking: leaf, deleted: deleted, unresolved: unresolved)
        }
    }
}

/// What a write buffer holds for a key.
extension [BufferRun] {
    /// Where `runs` lie in these runs, side by side and in order, found by identity; nil
    /// when they do not: how a merge made away from the writer, or a filter over runs it
    /// took, finds its runs in a later state.
    func span(of runs: [BufferRun]) -> Range<Int>? {
        guard let head = runs.first, let first = firstIndex(where: { $0 === head }), count - first >= runs.count,
              zip(self[first...], runs).allSatisfy({ $0 === $1 }) else { return nil }
        return first ..< first + runs.count
    }
}

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
    /// The runs' entries as encoded, in bytes.
    let bytes: Int
    /// What a lookup tests, in the runs' order, side by side: each run's filter (nil: it
    /// keeps none), or, for the runs a merge into the tree took, one filter over them all
    /// (`TakenRunsFilter`). The runs, and the taken filter kept here, hold the filters'
    /// words as long as these runs live.
    private let steps: [LookupStep]
    /// The filter over runs a merge into the tree took, when these runs hold them side by
    /// side; `adding` passes it on.
    let takenFilter: TakenRunsFilter?
    /// Where `tier` neighbouring runs of `smallestMergedBeside` entries or more are of one
    /// size class: the windows `tierWindow` may offer, once their runs are movable. Found
    /// once, since the runs never change: every commit asks (`TreeChanges.startMergingRuns`),
    /// and most commits leave the runs as they were (they append to the tail).
    private let tierCandidates: [Int]

    /// - Parameter takenFilter: A filter over runs a merge into the tree took, used where
    ///   `runs` hold them side by side.
    init(_ runs: [BufferRun], takenFilter: TakenRunsFilter? = nil) {
        self.runs = runs
        self.entries = runs.reduce(0) { $0 + $1.count }
        self.bytes = runs.reduce(0) { $0 + $1.entries.bytes.count }
        let span = takenFilter.flatMap { runs.span(of: $0.runs) }
        self.takenFilter = span == nil ? nil : takenFilter
        var steps = runs.indices.map { LookupStep(probe: runs[$0].filterProbe, runs: $0 ..< $0 + 1) }
        if let span, let takenFilter {
            steps.replaceSubrange(span, with: CollectionOfOne(LookupStep(probe: takenFilter.probe, runs: span)))
        }
        self.steps = steps
        self.tierCandidates = runs.count < Self.tier ? [] : (0 ... runs.count - Self.tier).filter { start in
            runs[start].count >= Self.smallestMergedBeside
                && runs[start ..< start + Self.tier].allSatisfy { Self.sizeClass($0) == Self.sizeClass(runs[start]) }
        }
    }

    /// The newest entry of `key` in the runs; `hash` is its `BloomFilter.hash`.
    ///
    /// Every run's filter block is asked for before any is tested: a load at 10M records
    /// holds a dozen runs or more, and each run's test waited for its object, then its
    /// filter's words, then the block, one run after another (perf, W1 insert.batch at 10M:
    /// 11% of the writer's time in this function).
    func find(_ key: UnsafeRawBufferPointer, hash: UInt64) -> BufferHit {
        steps.withUnsafeBufferPointer { steps in
            for step in steps { step.probe?.prefetch(hash: hash) }
            for step in steps {
                if let probe = step.probe, !probe.mayContain(hash: hash) { continue }
                for i in step.runs {
                    let run = runs[i]
                    // The runs a merge took, past their common filter: each run's own.
                    if step.runs.count > 1, let probe = run.filterProbe, !probe.mayContain(hash: hash) { continue }
                    let (index, found) = run.search(key)
                    if found { return run.isDeleted(index) ? .deleted : .entry((run.entries, index)) }
                }
            }
            return .absent
        }
    }

    /// What `find` tests before searching `runs`, newest first: a run's filter, or one
    /// filter over several runs; nil: search them.
    private struct LookupStep {
        let probe: BloomFilter.Probe?
        let runs: Range<Int>
    }

    /// These runs with `run` added as the newest, merged size-tiered: whenever the four
    /// newest runs are of one size class (powers of four), they become one. An entry is
    /// copied into a merged run about log4(n) times in a buffer of n entries, each copy a
    /// sequential pass, and a lookup passes at most three runs' filters per size class.
    /// (Merging as a binary counter, two runs at a time, copied each entry log2(n) times:
    /// 12% of W1's insert.batch with a buffer; callgrind, 100k records.)
    ///
    /// With `mergesBesideWriter`, runs of `smallestMergedBeside` entries or more are merged
    /// here only when the runs the writer may move pass three times `mostRuns`: below that,
    /// a merge beside the writer does it (`mergeWindow`, `RunsMerge`), and the commit only
    /// adds the run. (Run merging on the writer's thread was 14% of its time in W1's
    /// insert.batch at 1M, perf.) Smaller runs are merged here either way. Runs a merge
    /// into the tree took do not count: they leave the buffer when it is installed, and
    /// the writer could not merge them anyway. (Counted, they held a 10M-record load's
    /// buffer past the bound for most of its length, and the writer merged 11.7M entries
    /// itself, 9% of its samples.)
    ///
    /// Only the newest runs that no merge beside the writer has (`BufferRun.isMovable`) are
    /// merged here: such a merge finds its runs by identity.
    ///
    /// The filter over runs a merge into the tree took (`TakenRunsFilter`) goes on with
    /// the new runs while they hold those runs.
    func adding(_ run: BufferRun, mergesBesideWriter: Bool = false) -> SortedRuns {
        // One array, the new run first; the writer merges within its first `window` runs,
        // the new one and the movable ones after it. (Built as a window, then joined to the
        // rest, the runs were copied into three arrays per commit: a tenth of a one-record
        // durable commit's settling, callgrind.)
        var runs: [BufferRun] = []
        runs.reserveCapacity(self.runs.count + 1)
        runs.append(run)
        runs.append(contentsOf: self.runs)
        var window = 1 + self.runs.prefix(while: \.isMovable).count
        let mergesAll = !mergesBesideWriter || window > 3 * Self.mostRuns
        while window >= Self.tier, runs[1 ..< Self.tier].allSatisfy({ Self.sizeClass($0) == Self.sizeClass(runs[0]) }),
              mergesAll || runs[0].count < Self.smallestMergedBeside {
            runs.replaceSubrange(0 ..< Self.tier, with: CollectionOfOne(BufferRun.merging(Array(runs[0 ..< Self.tier]))))
            window -= Self.tier - 1
        }
        // Runs of mixed sizes (a large transaction's between small ones) could pile up
        // unmerged: past a dozen, they all become one. Beside the writer, only the newest
        // small runs do, up to three times that: the large ones are the merge beside the
        // writer's (`mergeWindow`). Merging them all here, a buffer of 65,536 entries left
        // by a load was copied every dozen one-record commits (W1 commit.durable at 1M: 59%
        // of the commits' samples in `BufferRun.merging`, perf).
        if window > Self.mostRuns {
            let small = mergesAll ? window : runs[..<window].prefix(while: { $0.count < Self.smallestMergedBeside }).count
            if small > 1 { runs.replaceSubrange(0 ..< small, with: CollectionOfOne(BufferRun.merging(Array(runs[0 ..< small])))) }
        }
        return SortedRuns(runs, takenFilter: takenFilter)
    }

    /// These runs with the merges `adding` leaves to a merge beside the writer made here:
    /// each tier due (`tierWindow`), then, past `mostRuns`, all of them. What a compaction
    /// does beside the writers with the runs its holds added (a hold that merged them, four
    /// of one size class into one and so on up, took 38 ms beside a 10M-record load).
    func mergingLeftTiers() -> SortedRuns {
        var merged = self
        while let window = merged.tierWindow() {
            var runs = merged.runs
            runs.replaceSubrange(window, with: CollectionOfOne(BufferRun.merging(Array(runs[window]))))
            merged = SortedRuns(runs)
        }
        return merged.runs.count > Self.mostRuns ? SortedRuns([BufferRun.merging(merged.runs)]) : merged
    }

    /// The runs a merge beside the writer makes one (`RunsMerge`): a tier due
    /// (`tierWindow`), else, when more than twice `mostRuns` of the newest runs are ones the
    /// writer may move, all of those. Runs of many sizes (a 10M-record load's buffer holds
    /// up to three of each of six size classes, and merges of all of them leave sizes that
    /// fit no tier) pass that bound with no tier due; merged here, the writer does not
    /// have to (`adding`).
    func mergeWindow() -> Range<Int>? {
        if let tier = tierWindow() { return tier }
        let movable = runs.prefix(while: \.isMovable).count
        return movable > 2 * Self.mostRuns ? 0 ..< movable : nil
    }

    /// Where `tier` neighbouring runs that the writer may move are of one size class, and
    /// not small (`smallestMergedBeside`), the newest such first.
    func tierWindow() -> Range<Int>? {
        for start in tierCandidates {
            let window = start ..< start + Self.tier
            if runs[window].allSatisfy(\.isMovable) { return window }
        }
        return nil
    }

    private static func sizeClass(_ run: BufferRun) -> Int { (Int.bitWidth - run.count.leadingZeroBitCount) / 2 }

    private static let tier = 4
    private static let mostRuns = 12
    /// Runs this small are merged by the commit that makes them due, even with merges
    /// beside the writer: four of them merge in microseconds, less than starting a thread
    /// and handing them over costs. (One-record durable commits, W1 commit.durable at 1M,
    /// started a thread for every few commits: 4.1k commits/s against 7.3k with every
    /// merge of runs in the commit.)
    static let smallestMergedBeside = 256
}
