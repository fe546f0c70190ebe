/// When a tree's buffered writes are merged into it (`Database.Options.writeBufferEntries`).
struct WriteBufferPolicy {
    /// The fewest entries a tree's buffer holds before it is merged.
    let minimumEntries: Int
    /// The bytes (entries as encoded) past which a handle's buffers, all trees' together,
    /// are merged, the largest first: a share of the cache budget, since runs live in
    /// memory beside the cache. A single tree's buffer is held to it within a transaction
    /// too.
    var bytesLimit = Int.max
    /// The most entries a buffer holds, whatever the tree's size.
    static let maximumEntries = 1 << 21

    /// Where merges beside the writer run; nil: the writer merges on its own thread.
    var merges: BackgroundBufferMerges?
    /// Whether the merges of large runs are left to the owner of the changes, who makes
    /// them elsewhere (`SortedRuns.mergingLeftTiers`), as with merges beside the writer: a
    /// compaction's holds, which add runs its passes beside the writers merge.
    var leavesRunMerges = false

    /// The policy `options` asks for, merging beside the writer in `merges`; nil when they
    /// ask for no buffer.
    init?(_ options: Database.Options, merges: BackgroundBufferMerges?) {
        guard let entries = options.writeBufferEntries else { return nil }
        minimumEntries = entries
        bytesLimit = max(1 << 20, options.cacheSize / 16)
        self.merges = merges
    }

    init(minimumEntries: Int) { self.minimumEntries = minimumEntries }

    /// How many entries the buffer of a tree of `treeEntries` may hold: a fixed size stops
    /// paying as the tree grows, since a merge of *n* entries into a tree of many more
    /// leaves copies about *n* leaves (docs/WRITE-BUFFER.md), so it grows with the tree.
    func limit(treeEntries: UInt64) -> Int {
        // (A count taken below zero by wrapping, `TreeState.entryCount`, gives the maximum.)
        min(max(minimumEntries, Int(clamping: treeEntries / 8)), Self.maximumEntries)
    }

    /// Whether a buffer of `entries` entries and `bytes` bytes is due for a merge into a tree
    /// of `treeEntries`: past the limits, or, with `hard`, past the most a buffer may hold
    /// while a merge beside the writer runs (twice the limits: the writer fills a second
    /// buffer's worth meanwhile).
    func isDue(entries: Int, bytes: Int, treeEntries: UInt64, hard: Bool) -> Bool {
        let factor = hard && merges != nil ? 2 : 1
        return entries > factor * limit(treeEntries: treeEntries) || bytes > factor * bytesLimit
    }
}

/// Buffered writes (docs/WRITE-BUFFER.md). A write transaction's put copies a leaf the
/// first time it changes one that the committed tree shares; a transaction of 1,000
/// scattered keys copies ~1,000 leaves. Buffered, such a put goes to the transaction's
/// pending writes, sorted into a run at commit, and the runs are merged into the tree in
/// key order once they are large, so each leaf is copied about once per merge.
///
/// A write to a key the buffer does not hold, whose path in the tree this transaction owns
/// already (a leaf it copied or made), goes straight into the tree: nothing newer hides
/// it there, and it copies nothing. A write to a key the buffer holds goes to the pending
/// writes, newer than any run. `insert` and `delete` look their key up, and answer as
/// they do unbuffered; a replacing put of a key the buffer lacks leaves whether it added
/// a key to the merge (`PendingWrites.unresolved`), so counts stay exact.
extension TreeChanges {
    mutating func bufferedPut(at index: Dictionary<String, TreeState>.Index, key: UnsafeRawBufferPointer, value: ValueSlot,
                              replacing: Bool, policy: WriteBufferPolicy) throws -> Bool {
        if let load = treeLoad(at: index) {
            // A tree this transaction found empty: the writes are all it holds. A replacing
            // put before anything asked for a key need not know whether its key was
            // written; the build keeps the newest write of each and counts them.
            if replacing && !load.isIndexed {
                load.appendUnindexed(key, value, limits: mutator.limits)
                return false
            }
            let hash = BloomFilter.hash(key)
            let present = load.find(key, hash: hash).map { !load.isDeleted($0) } ?? false
            if present && !replacing { return false }
            load.write(key, hash: hash, value, limits: mutator.limits)
            if !present { trees.values[index].entryCount &+= 1 }
            return !present
        }
        let hash = BloomFilter.hash(key)
        let present: Bool?
        if let buffered = bufferHit(at: index, key: key, hash: hash) {
            present = buffered
        } else {
            // The common case of a transaction that owns the key's path already (a single
            // large transaction): in place, in one walk. (A probe, then the put, walked
            // twice: insert.single-tx at 1M fell from 425.8k to 277.1k records/s.)
            if case .branch(let top)? = trees.values[index].root?.unretained,
               let inserted = try mutator.putInPlace(top: top, key: key, value: value, replacing: replacing, copying: false) {
                if inserted { trees.values[index].entryCount &+= 1 }
                return inserted
            }
            // A replacing put into a tree it shares need not know whether the key is there:
            // its effect on the count is left to the merge (`unresolved`), which finds the
            // key's leaf anyway. Looking each put's key up was a descent that missed the CPU
            // cache at every level below the top, 15% of W1's insert.batch at 1M (perf).
            if replacing && rootIsShared(at: index) {
                present = nil
            } else {
                switch try treePresence(at: index, key: key) {
                case .owned: return try putInTreeCounting(at: index, key: key, value: value, replacing: replacing)
                case .shared(let isPresent): present = isPresent
                }
            }
        }
        if present == true && !replacing { return false }
        pendingWrites(at: index).write(key, hash: hash, value, unresolved: present == nil, limits: mutator.limits)
        if present == false { trees.values[index].entryCount &+= 1 }
        try mergeIfDue(at: index, policy: policy)
        return present == false
    }

    mutating func bufferedDelete(at index: Dictionary<String, TreeState>.Index, key: UnsafeRawBufferPointer,
                                 policy: WriteBufferPolicy) throws -> Bool {
        let hash = BloomFilter.hash(key)
        if let load = treeLoad(at: index) {
            guard let i = load.find(key, hash: hash), !load.isDeleted(i) else { return false }
            load.write(key, hash: hash, nil, limits: mutator.limits)
            trees.values[index].entryCount &-= 1
            return true
        }
        if let present = bufferHit(at: index, key: key, hash: hash) {
            guard present else { return false }
        } else {
            switch try treePresence(at: index, key: key) {
            case .owned: return try deleteInTreeCounting(at: index, key: key)
            case .shared(let present):
                guard present else { return false }
            }
        }
        pendingWrites(at: index).write(key, hash: hash, nil, limits: mutator.limits)
        trees.values[index].entryCount &-= 1
        try mergeIfDue(at: index, policy: policy)
        return true
    }

    /// Whether the buffer holds `key` (true for a value, false for a tombstone); nil when
    /// it does not, and the tree decides. `hash` is the key's `BloomFilter.hash`.
    private mutating func bufferHit(at index: Dictionary<String, TreeState>.Index, key: UnsafeRawBufferPointer, hash: UInt64) -> Bool? {
        withState(at: index) { state in
            if let i = state.pending?.find(key, hash: hash) { return !state.pending!.isDeleted(i) }
            switch state.findCommitted(key, hash: hash) {
            case .entry: return true
            case .deleted: return false
            case .absent: return nil
            }
        }
    }

    /// Runs `body` on the state of the tree at `index` in place. Reading it through
    /// `Dictionary.Values`' getter copied the whole state, retaining and releasing its
    /// root, runs and pending writes: ~5% of a buffered load's time at 1M (perf).
    @inline(__always)
    private mutating func withState<R>(at index: Dictionary<String, TreeState>.Index, _ body: (inout TreeState) throws -> R) rethrows -> R {
        try body(&trees.values[index])
    }

    /// What the tree says of a key the buffer lacks, for a write deciding where it goes.
    private enum TreePresence {
        /// A write there copies nothing: this transaction owns the key's path.
        case owned
        /// A write there would copy; whether the tree holds the key.
        case shared(present: Bool)
    }

    /// Whether no path in the tree at `index` is this transaction's: a transaction that
    /// changed any node of the tree copied the path to it, the root included, so a root not
    /// this transaction's means none is. An empty tree is not shared: its first root is new.
    private mutating func rootIsShared(at index: Dictionary<String, TreeState>.Index) -> Bool {
        let owner = mutator.owner
        return withState(at: index) { !($0.root?.isOwned(by: owner) ?? true) }
    }

    private mutating func treePresence(at index: Dictionary<String, TreeState>.Index, key: UnsafeRawBufferPointer) throws -> TreePresence {
        let mutator = mutator
        let shared = rootIsShared(at: index)
        return try withState(at: index) { state in
            if shared { return .shared(present: try TreeReader.locate(store: mutator.store, root: state.root, key: key) != nil) }
            let probe = try mutator.probe(root: state.root, key: key)
            return probe.owned ? .owned : .shared(present: probe.present)
        }
    }

    /// The pending writes of the tree at `index` when this transaction found it empty and
    /// unbuffered and is filling it (`TreeLoad.swift`): they start at its first write, and
    /// are built into the tree when the transaction is done with them (`flushPending`).
    @inline(__always)
    private mutating func treeLoad(at index: Dictionary<String, TreeState>.Index) -> PendingWrites? {
        withState(at: index) { state in
            if let pending = state.pending { return pending.buildsTree ? pending : nil }
            guard state.root == nil, !state.isBuffered else { return nil }
            let load = PendingWrites(buildsTree: true)
            state.pending = load
            return load
        }
    }

    private mutating func pendingWrites(at index: Dictionary<String, TreeState>.Index) -> PendingWrites {
        withState(at: index) { state in
            if let pending = state.pending { return pending }
            let pending = PendingWrites()
            state.pending = pending
            return pending
        }
    }

    /// Whether the buffer of the tree at `index` is due for a merge (`WriteBufferPolicy.isDue`).
    private mutating func isDue(at index: Dictionary<String, TreeState>.Index, policy: WriteBufferPolicy, hard: Bool) -> Bool {
        withState(at: index) { state in
            policy.isDue(entries: state.bufferedEntries + (state.pending?.keys ?? 0),
                         bytes: state.bufferedBytes + (state.pending?.entries.bytes.count ?? 0),
                         treeEntries: state.entryCount, hard: hard)
        }
    }

    /// Merges the buffer of the tree at `index` when it holds the most it may. With merges
    /// beside the writer, the one running is waited for, and what they finished installed,
    /// first: that may be enough.
    private mutating func mergeIfDue(at index: Dictionary<String, TreeState>.Index, policy: WriteBufferPolicy) throws {
        guard isDue(at: index, policy: policy, hard: true) else { return }
        if let merges = policy.merges {
            merges.waitUntilIdle()
            installFinishedMerges(merges)
            guard isDue(at: index, policy: policy, hard: true) else { return }
        }
        try mergeBuffer(at: index)
    }

    /// Installs the merges finished beside the writer where they still apply
    /// (`BufferMerge.installed`), and the filters over the runs a merge running took
    /// where the runs are still there (`TakenRunsFilter`).
    /// - Returns: Whether any merge applied.
    @discardableResult
    mutating func installFinishedMerges(_ merges: BackgroundBufferMerges) -> Bool {
        for (name, filter) in merges.takeTakenFilters() {
            guard let index = trees.index(forKey: name), let runs = trees.values[index].runs,
                  runs.runs.span(of: filter.runs) != nil else { continue }
            trees.values[index].runs = SortedRuns(runs.runs, takenFilter: filter)
        }
        var any = false
        for (name, merge) in merges.takeFinished() {
            guard let index = trees.index(forKey: name),
                  let installed = merge.installed(in: trees.values[index], store: mutator.store) else { continue }
            trees.values[index] = installed
            any = true
        }
        for merge in merges.takeFinishedRuns() {
            guard let index = trees.index(forKey: merge.tree), let installed = merge.installed(in: trees.values[index]) else { continue }
            trees.values[index] = installed
            any = true
        }
        return any
    }

    /// Starts a merge of runs beside the writer (`RunsMerge`) for the first tree whose
    /// buffer has runs to merge, unless one runs.
    private func startMergingRuns(_ merges: BackgroundBufferMerges) {
        guard !merges.isMergingRuns else { return }
        for (name, state) in trees {
            guard let runs = state.runs, let window = runs.mergeWindow() else { continue }
            merges.startMergingRuns(Array(runs.runs[window]), of: name)
            return
        }
    }

    /// Moves the transaction's pending writes to the tree at `index` into its buffer: at
    /// commit, and before a cursor, which reads in key order. Appended to the tail when
    /// they fit (`BufferTail`); otherwise the tail is sealed into a run, and they start a
    /// new tail, or, too many for one, become a run of their own, the newest.
    mutating func flushPending(at index: Dictionary<String, TreeState>.Index) {
        guard let pending = trees.values[index].pending else { return }
        trees.values[index].pending = nil
        guard !pending.isEmpty else { return }
        if pending.buildsTree {
            // The tree was empty and unbuffered, and only these writes went to it since: the
            // build counts its keys, some of whose puts did not know whether they added one.
            assert(trees.values[index].root == nil && !trees.values[index].isBuffered)
            let built = pending.builtTree(mutator: mutator)
            trees.values[index].root = built.root
            trees.values[index].entryCount = UInt64(built.keys)
            return
        }
        if let tail = BufferTail.appending(pending, to: trees.values[index].tail) {
            trees.values[index].tail = tail
            return
        }
        sealTail(at: index)
        if let tail = BufferTail.appending(pending, to: nil) {
            trees.values[index].tail = tail
        } else {
            addRun(pending.takenAsRun(), at: index)
        }
    }

    /// Makes the tail of the tree at `index` its newest run, and starts none: the next
    /// small commit starts a new tail.
    private mutating func sealTail(at index: Dictionary<String, TreeState>.Index) {
        guard let tail = trees.values[index].tail else { return }
        trees.values[index].tail = nil
        addRun(tail.run, at: index)
    }

    private mutating func addRun(_ run: BufferRun, at index: Dictionary<String, TreeState>.Index) {
        let mergesElsewhere = buffer.map { $0.merges != nil || $0.leavesRunMerges } ?? false
        trees.values[index].runs = trees.values[index].runs?.adding(run, mergesBesideWriter: mergesElsewhere) ?? SortedRuns([run])
    }

    /// `flushPending` for the tree called `name`.
    mutating func flushPending(tree name: String) throws {
        flushPending(at: try position(of: name))
    }

    /// Prepares every tree's buffer for a commit: pending writes become runs, merges
    /// finished beside the writer are installed, and buffers past their policy's limit are
    /// merged: beside the writer when it can (one merge at a time; `newOwner` gives the
    /// merge its owner), else here. Beside the writer, runs that are due to become one
    /// are merged there too (`RunsMerge`).
    mutating func settleBuffers(policy: WriteBufferPolicy, newOwner: () -> UInt64) throws {
        flushAllPending()
        guard let merges = policy.merges else {
            for index in treePositions() where trees.values[index].isBuffered { try mergeIfDue(at: index, policy: policy) }
            for name in largestBuffers(over: policy.bytesLimit) { try mergeBuffer(at: try position(of: name)) }
            return
        }
        installFinishedMerges(merges)
        var due: [String: TreeState] = [:]
        for index in treePositions() where trees.values[index].isBuffered {
            try mergeIfDue(at: index, policy: policy)
            if isDue(at: index, policy: policy, hard: false) { due[trees.keys[index]] = trees.values[index] }
        }
        // The handle's buffers together: past twice the byte limit, the writer waits for
        // the merge beside it and merges the largest itself; past the limit, the largest
        // are due.
        if !largestBuffers(over: 2 * policy.bytesLimit).isEmpty {
            merges.waitUntilIdle()
            installFinishedMerges(merges)
            for name in largestBuffers(over: 2 * policy.bytesLimit) {
                try mergeBuffer(at: try position(of: name))
                due[name] = nil
            }
        }
        for name in largestBuffers(over: policy.bytesLimit) where due[name] == nil { due[name] = trees[name] }
        if !due.isEmpty, !merges.isRunning { merges.start(due, mutator: TreeMutator(store: mutator.store, owner: newOwner())) }
        startMergingRuns(merges)
    }

    /// `flushPending` for every tree with pending writes.
    mutating func flushAllPending() {
        for index in treePositions() where trees.values[index].pending != nil { flushPending(at: index) }
    }

    /// Merges the runs that writes added without merging large ones
    /// (`WriteBufferPolicy.leavesRunMerges`) as their size classes fill
    /// (`SortedRuns.mergingLeftTiers`), in every tree.
    mutating func mergeLeftRunTiers() {
        for index in treePositions() where trees.values[index].runs != nil {
            trees.values[index].runs = trees.values[index].runs?.mergingLeftTiers()
        }
    }

    /// Every tree's position, for a loop that changes trees' states in place. (A loop over
    /// `trees.keys` held a view of the dictionary, so the first change inside it copied the
    /// whole dictionary, and each name was hashed again to find its state: both once per
    /// commit, callgrind of one-record durable commits.) Changing a state in place keeps
    /// every position valid; nothing here adds or removes a tree.
    private func treePositions() -> [Dictionary<String, TreeState>.Index] {
        Array(trees.indices)
    }

    /// The trees whose runs, merged into their trees, bring the bytes of all buffers to
    /// `limit` or under, the largest first; none when they are there already.
    private func largestBuffers(over limit: Int) -> [String] {
        var total = trees.values.reduce(0) { $0 + $1.bufferedBytes }
        guard total > limit else { return [] }
        var names: [String] = []
        for (name, state) in trees.sorted(by: { $0.value.bufferedBytes > $1.value.bufferedBytes }) where total > limit {
            let bytes = state.bufferedBytes
            guard bytes > 0 else { break }
            names.append(name)
            total -= bytes
        }
        return names
    }

    /// Applies the buffered writes of the tree at `index` to it in key order (each leaf
    /// copied at most once: later writes to it find it this owner's) and empties its
    /// buffer. The entry count holds the writes already, but for the unresolved ones, whose
    /// effect the tree's answers settle here. A write that fails (a damaged page) leaves
    /// the tree half merged: the transaction can then only roll back (`failedMerge`).
    mutating func mergeBuffer(at index: Dictionary<String, TreeState>.Index) throws {
        flushPending(at: index)
        let runs = trees.values[index].sortedRuns
        guard !runs.isEmpty else { return }
        let all = BufferRun.merging(runs)
        var added: UInt64 = 0
        do {
            for i in 0 ..< all.count {
                let deleted = all.isDeleted(i)
                let changed = try all.entries.withUnchangingEntry(i) { key, value in
                    deleted ? try deleteInTree(at: index, key: key) : try putInTree(at: index, key: key, value: value, replacing: true)
                }
                // An unresolved put adds a key the tree lacked; an unresolved count carried
                // by a tombstone (a put of a new key, then its delete) adds back the one its
                // delete took away.
                if all.unresolved[i], changed != deleted { added += 1 }
            }
        } catch {
            failedMerge = "\(error)"
            throw error
        }
        trees.values[index].entryCount &+= added
        trees.values[index].runs = nil
        trees.values[index].tail = nil
    }

    /// `trees` with every write buffer merged into its tree by `mutator`, whose owner must
    /// be new: the nodes `trees` shares are copied, never changed. What a checkpoint, a
    /// compaction and the verifier start from, since they read trees alone.
    static func mergingBuffers(of trees: [String: TreeState], mutator: TreeMutator) throws -> [String: TreeState] {
        guard trees.values.contains(where: \.isBuffered) else { return trees }
        var changes = TreeChanges(trees: trees, mutator: mutator)
        changes.buffer = WriteBufferPolicy(minimumEntries: .max)
        for name in trees.keys where trees[name]!.isBuffered { try changes.mergeBuffer(at: try changes.position(of: name)) }
        return changes.trees
    }
}
