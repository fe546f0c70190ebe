import Foundation

/// The outcome of `Database.compact()`.
public struct CompactionResult: Sendable, Equatable {
    /// The file's size before.
    public var bytesBefore: UInt64
    /// The file's size after: its live data, written compactly (and the commits made while
    /// it was copied).
    public var bytesAfter: UInt64
    /// Commits made while the live data was copied, carried over into the new file.
    public var commitsCarriedOver: Int = 0
    /// How many times writers were held up: 1 when the rounds beside them caught up, more
    /// when the rest was carried over in slices with writers let in between.
    public var writerHolds: Int = 0
    /// The longest hold, with what its time went on.
    public var longestHold: CompactionHold?

    /// The longest time writers were held up at once (`longestHold`'s): the swap, or a slice
    /// when writers kept the rounds beside them from catching up. The copy and the rounds
    /// run beside them.
    public var writerPause: Duration { longestHold?.duration ?? .zero }
}

extension Database {
    /// Rewrites the live data into a new file and swaps it in atomically, giving back the
    /// space of superseded pages and checkpointed log. Writers keep committing meanwhile.
    ///
    /// 1. The live data of a snapshot is copied into `PATH.compact` beside the writers,
    ///    which go on committing to the file.
    /// 2. The commits they made meanwhile are carried over into the new file (their
    ///    operations, re-addressed), in rounds, while there are many.
    /// 3. Holding writers back, the last few commits are carried over, the new file is
    ///    synced, renamed over `PATH`, and the directory synced. Only this step pauses
    ///    writers (`CompactionResult.writerPause`); readers never wait. When writers commit
    ///    as fast as the rounds carry (a bulk load), the rest is carried in slices, each
    ///    holding writers back only to append what they committed since the pass beside
    ///    them before it; each pass beside them appends what they added meanwhile and
    ///    replays everything appended, until what is left fits the last hold. When the
    ///    writers buffer their writes (`Options.writeBufferEntries`), the carried commits
    ///    go to the new file's write buffers as theirs do, merged into its trees beside the
    ///    writers; what is buffered at the swap, the writer merges as its own.
    ///
    /// A crash before the rename leaves the original intact, holding every acknowledged
    /// commit (the next open deletes the leftover); after it, the new file holds them all.
    /// Snapshots taken before keep reading the old file. One compaction runs at a time per
    /// handle; a second call waits for the first. `progress` receives (entries copied,
    /// entries in all trees).
    ///
    /// ```swift
    /// let result = try db.compact()
    /// print("\(result.bytesBefore) → \(result.bytesAfter) bytes; writers paused \(result.writerPause)")
    /// ```
    ///
    /// - Parameter progress: Called as entries are copied, on the compacting thread.
    /// - Returns: The file's size before and after, the commits carried over and the pause.
    /// - Throws: `StrataError.readOnly` on a read-only handle; `.closed` when the handle closes
    ///   meanwhile; `.io` when the new file cannot be written (the original is untouched
    ///   then); `.corruption` for damaged pages.
    @discardableResult
    public func compact(progress: ((UInt64, UInt64) -> Void)? = nil) throws -> CompactionResult {
        if isReadOnly { throw StrataError.readOnly(path: path) }
        return try compactions.withLock { _ in try compactHoldingTurn(progress: progress) }
    }


    /// `compact()` once this handle's compactions' turn is held. `rounds` decides when the
    /// rounds beside the writers stop (tests pass one that allows none).
    /// `beforeEachHold` runs beside the writers just before each hold, after the append
    /// beside them (tests commit there, as writers do meanwhile).
    func compactHoldingTurn(progress: ((UInt64, UInt64) -> Void)?, rounds: CarryOverRounds = CarryOverRounds(),
                            beforeEachHold: () -> Void = {}) throws -> CompactionResult {
        let (snapshot, copiedUpTo) = try withWriter { writer in (try self.snapshot(), writer.end) }
        let old = snapshot.store
        let before = try old.file.size()
        let temporaryPath = path + ".compact"
        try fileSystem.remove(temporaryPath)
        let file = try fileSystem.open(temporaryPath, mode: .readWrite)
        do {
            var target = try CompactionTarget(copying: snapshot, into: file, options: options, owners: (nextOwner(), nextOwner()),
                                              isCancelled: isClosed, progress: progress)
            var carried = copiedUpTo
            var rounds = rounds
            while rounds.another(tail: writerCounters().end - carried) {
                carried = try target.carryOver(from: old, range: carried ..< carried + rounds.tail)
            }
            var longest: CompactionHold?, holds = 0
            // The state the swap replaces (the old tree, its dirty nodes and cached pages):
            // freed after the writers are let go, on this thread (freed in the last hold it
            // was most of that hold: 118 of 138 ms at the end of a 3M-record load).
            var replaced: (Snapshot, PageStore)?
            var slices = SliceProgress()
            /// A slice, then the writers are let in (the gate hands itself to a waiting
            /// writer before this thread takes it again): the commits they made since the
            /// append beside them are appended (at most `sliceAppendBytes` of the old file:
            /// past a background checkpoint's page batches the rest is appended beside them
            /// next), and a commit of the backlog replayed (`SliceProgress`): about 0.5 ms
            /// per 1,000-record commit into the write buffers, 2 ms into the trees (when
            /// the writers buffer nothing, nor does the replay), where the slices beside a
            /// 10M-record load held it 4–13 ms when they replayed all they appended. The
            /// rest is replayed beside the writers.
            func appendSlice(_ writer: WriterState, _ hold: inout CompactionHold) throws {
                let unreplayed = target.unreplayedBytes
                let slice = try target.append(from: old, range: carried ..< writer.end, stoppingAfter: CarryOverRounds.sliceAppendBytes)
                hold.add(slice)
                carried = slice.end
                let appended = target.unreplayedBytes - unreplayed
                (hold.bytesReplayed, hold.replaying) = try target.replay(atLeast: slices.replayBytes(appended: appended), holding: true)
            }
            /// The last commits (and those appended beside the writers, not yet replayed),
            /// then the new file synced and renamed over the old, and its state put in the
            /// handle.
            func swap(_ writer: WriterState, _ hold: inout CompactionHold) throws {
                hold.add(try target.append(from: old, range: carried ..< writer.end))
                (hold.bytesReplayed, hold.replaying) = try target.replay(holding: true)
                let synced = ContinuousClock.now
                try target.sync()
                let renamed = ContinuousClock.now
                hold.syncing = renamed - synced
                guard try file.tryLockExclusive() else { throw StrataError.locked(path: temporaryPath) }
                try fileSystem.rename(temporaryPath, to: path)
                // The new file is in place; failing to make the rename durable is a sync failure.
                try writer.guarded(rollingBackTo: writer.end) { try fileSystem.syncDirectory(containing: path) }
                replaced = (writer.latest, writer.store)
                replaceStore(target.state, allocatedEnd: target.allocatedEnd)
                old.file.unlock()
                hold.renaming = ContinuousClock.now - renamed
            }
            while true {
                // Beside the writers: what was appended so far is replayed; then made durable,
                // with zeros ahead of it for what the holds carry and the writers' next
                // commits: the sync they wait for covers only what was carried since, written
                // over those zeros. Synced only once a mebibyte waits for it: the writers
                // commit while it runs. (A sync before every slice, slow beside a 10M-record
                // load's own writes, made slices that held the load 191 and 495 ms.)
                if slices.replaysBeside { _ = try target.replay() } else { try target.settleBuffers() }
                if try target.preallocate() || target.unsyncedBytes > CarryOverRounds.unsyncedBytes { try target.sync() }
                // Then what the writers committed meanwhile is appended, still beside them,
                // so that the hold finds only what they add while it does: the page batches
                // a background checkpoint placed between their commits are walked here,
                // never in a hold (walked in a slice, 209 MB of them held a 10M-record load
                // 220 ms).
                if slices.replaysBeside { carried = try target.append(from: old, range: carried ..< writerCounters().end).end }
                beforeEachHold()
                let hold = try withWriter { writer -> CompactionHold in
                    let paused = ContinuousClock.now
                    // Only compaction replaces the writer's file, and compactions take turns:
                    // this cannot happen, but if it did, carrying the old file's commits over
                    // would lose the new one's.
                    guard writer.store === old else {
                        throw StrataError.io(operation: "compact (the file was replaced meanwhile)", path: path, errno: EAGAIN)
                    }
                    // The last hold appends and replays at most a slice.
                    let left = writer.end - carried + target.unreplayedBytes
                    var hold = CompactionHold(kind: left > CarryOverRounds.sliceBytes ? .slice : .swap)
                    switch hold.kind {
                    case .slice: try appendSlice(writer, &hold)
                    case .swap: try swap(writer, &hold)
                    }
                    hold.duration = ContinuousClock.now - paused
                    return hold
                }
                holds += 1
                if hold.duration > longest?.duration ?? .zero { longest = hold }
                options.logger.debug("compaction held writers", metadata: ["path": "\(path)", "hold": "\(hold)"])
                if hold.kind == .swap {
                    withExtendedLifetime(replaced) {}
                    replaced = nil
                    return CompactionResult(bytesBefore: before, bytesAfter: target.state.end, commitsCarriedOver: target.commitsCarriedOver,
                                            writerHolds: holds, longestHold: longest)
                }
            }
        } catch {
            file.close()
            try? fileSystem.remove(temporaryPath)
            throw error
        }
    }
}

/// When carry-over rounds beside the writers stop and the holds begin: once the commits
/// left to carry are few, or when rounds stop gaining on writers that commit as fast as the
/// rounds carry. What is left then is carried in slices (`compactHoldingTurn`), the last
/// hold taking at most `sliceBytes`.
struct CarryOverRounds {
    /// Bytes of the old file the last round holds writers back for, at most (when the
    /// rounds catch up).
    static let finalBytes: UInt64 = 32 << 10
    /// Bytes at most that the last hold carries over (appends and replays, about 0.7 ms
    /// per 1,000-record W1 commit beside a 10M-record load) before it syncs and swaps; while
    /// more is left, a hold is a slice, which appends what writers added and replays a
    /// commit (`SliceProgress`).
    static let sliceBytes: UInt64 = 64 << 10
    /// Bytes of the old file at most that a slice appends (to the first frame boundary past
    /// it): about 2 ms of reading and appending commits, or more of walking past a
    /// checkpoint's page frames.
    static let sliceAppendBytes: UInt64 = 256 << 10
    /// Bytes carried in slices that may wait unsynced for the next: the last hold's sync
    /// covers at most this and its own slice (about 2 ms here).
    static let unsyncedBytes: UInt64 = 1 << 20
    /// Rounds in a row whose tail did not shrink before giving up on catching up.
    static let patience = 3
    static let maxRounds = 64

    /// At most `maxRounds` rounds (0: none beside the writers, every commit carried in slices).
    let maxRounds: Int
    private(set) var tail: UInt64 = 0
    private var shortest = UInt64.max
    private var rounds = 0
    private var stalled = 0

    init(maxRounds: Int = Self.maxRounds) {
        self.maxRounds = maxRounds
    }

    /// Whether to run another round over `tail` bytes, rather than the last. Stalled rounds
    /// are those that found the tail no shorter than the shortest before: writers adding
    /// about what each round carries make it wobble without gaining.
    mutating func another(tail next: UInt64) -> Bool {
        guard next > Self.finalBytes, rounds < maxRounds else { return false }
        stalled = next >= shortest ? stalled + 1 : 0
        guard stalled < Self.patience else { return false }
        shortest = min(shortest, next)
        rounds += 1
        tail = next
        return true
    }
}

/// How much a slice replays while it holds writers back. Each pass beside the writers
/// replays everything appended, but writers committing about as fast as it replays keep
/// the backlog from ever fitting the last hold (beside the 10M-record load, every time
/// while the replay wrote into the trees; rarely since it writes into the write buffers).
/// So each slice also replays one commit of the backlog; and after `limit` slices without
/// the swap, the passes beside the writers stop (`replaysBeside`) and each slice replays
/// what it appended and a commit more: the backlog then shrinks by a commit at every hold
/// while they add less than a slice appends (`CarryOverRounds.sliceAppendBytes`) between
/// two holds, and the compaction ends. (Appending all they added instead, a slice beside
/// the 10M-record load appended the 27 commits it made while the new file synced beside
/// it, and held it 39 ms.)
struct SliceProgress {
    static let limit = 32
    private(set) var slices = 0

    /// Whether passes beside the writers still append and replay between the holds.
    var replaysBeside: Bool { slices < Self.limit }

    /// The bytes this slice replays at least (to the end of the commit they end in), given
    /// the bytes it appended; counts it.
    mutating func replayBytes(appended: UInt64) -> UInt64 {
        defer { slices += 1 }
        return replaysBeside ? 1 : appended + 1
    }
}

/// The new file a compaction writes: the copied live data, then the commits carried over.
struct CompactionTarget {
    private(set) var state: RecoveredState
    private(set) var commitsCarriedOver = 0
    /// Where the commits `append` wrote end: past `state.end` while some wait for `replay`.
    private(set) var end: UInt64
    /// Where each appended commit not yet replayed ends (its value frames before it), in
    /// order: the places `replay` may stop at.
    private var unreplayedCommitEnds: [UInt64] = []
    /// Where the zeros `preallocate()` wrote end; at most `end` when none are left.
    private(set) var allocatedEnd: UInt64 = 0
    /// Where the file ended at its last sync.
    private var syncedEnd: UInt64 = 0
    private let options: Database.Options
    /// The owner that changes the new file's trees: they are this compaction's alone until
    /// the swap, so a leaf copied once is changed in place after (a new owner per round
    /// copied again every leaf each round touched).
    private let owner: UInt64
    /// The owner the replay runs under when it writes into the trees' write buffers (see
    /// `replay`): not the trees', so that a put never reads the leaf it would go to.
    private let bufferOwner: UInt64
    /// When the write buffers are merged into the trees: the writers' policy, merging on
    /// this thread; nil when the writers buffer nothing, and neither does the replay.
    private let mergePolicy: WriteBufferPolicy?

    /// Writes the live data of `snapshot` into `file` (emptied first) as one checkpoint of
    /// full pages, named by both slots, and synced.
    init(copying snapshot: Snapshot, into file: any StorageFile, options: Database.Options, owners: (trees: UInt64, buffers: UInt64),
         isCancelled: () -> Bool, progress: ((UInt64, UInt64) -> Void)?) throws {
        self.options = options
        (owner, bufferOwner) = owners
        mergePolicy = WriteBufferPolicy(options, merges: nil)
        let total = try snapshot.trees.values.reduce(0) { $0 + (try $1.exactCount(store: snapshot.store)) }
        var copied: UInt64 = 0
        try Recovery.initialize(file, pageSize: snapshot.store.limits.pageSize)
        let header = try FileHeader.decode(try file.read(count: FileHeader.size, at: 0), path: file.path)
        let store = PageStore(file: file, header: header, cacheBudget: options.cacheSize)
        var appender = FrameAppender(file: file, salt: header.salt, position: FileHeader.dataStart)
        var record = CheckpointRecord(sequence: snapshot.sequence, timeMilliseconds: Database.now(), previous: nil, trees: [])
        var trees: [String: TreeState] = [:]
        for name in snapshot.treeNames {
            var builder = TreeBuilder(writer: NodeWriter(store: store, appender: appender))
            var count: UInt64 = 0
            try snapshot.scan(name) { key, value in
                try builder.add(key: key, value: value)
                count += 1
                copied += 1
                // Checked often: `close()` waits for a background compaction to stop (4,096
                // entries between checks was a wait a closing app would notice).
                if copied & 0xFF == 0, isCancelled() { throw StrataError.closed(path: snapshot.store.path) }
                if copied & 0xFFF == 0 { progress?(copied, total) }
                return true
            }
            let root = try builder.finish()
            appender = builder.appender
            // The entries copied: the tree's count, write buffer included (one not yet
            // resolved, `TreeState.exactCount`, is resolved by the copy itself).
            record.trees.append(.init(name: name, entryCount: count, root: root?.address))
            trees[name] = TreeState(root: root?.kept, entryCount: count)
        }
        let address = try appender.append(.checkpoint, payload: record.encoded())
        try appender.flush()
        try file.sync()
        // Both slots name the one checkpoint: the new file has no older one to fall back on.
        let slots = CheckpointSlot.pair(first: 3, checkpoint: address, sequence: snapshot.sequence)
        for slot in slots { try file.write(slot.encoded(salt: header.salt), at: slot.fileOffset) }
        try file.sync()
        state = RecoveredState(
            store: store, trees: trees, sequence: snapshot.sequence, checkpoint: address, checkpointSequence: snapshot.sequence,
            slotGeneration: slots[1].generation, end: appender.position, tornBytes: 0, replayedCommits: 0)
        syncedEnd = state.end
        end = state.end
    }

    /// `append`, then `replay`: the commits in `range` carried over whole.
    mutating func carryOver(from source: PageStore, range: Range<UInt64>) throws -> UInt64 {
        let end = try append(from: source, range: range).end
        _ = try replay()
        return end
    }

    /// Appends the commits in `range` of `source` (the old file; its frames there are
    /// complete) to the new file, each with its sequence and time, its stored values written
    /// again as value frames of the new file. Checkpoint, page and value frames of the range
    /// are skipped: the commits say everything. With `limit`, stops at the first frame
    /// boundary at least `limit` bytes into the range. Returns where it stopped, and what it
    /// carried and spent. The new file's trees have them once `replay` has run.
    mutating func append(from source: PageStore, range: Range<UInt64>, stoppingAfter limit: UInt64? = nil) throws -> CarriedOver {
        var position = range.lowerBound
        var bytes: [UInt8] = []
        let start = end
        let began = ContinuousClock.now
        let commitsBefore = commitsCarriedOver
        while position < range.upperBound, position - range.lowerBound < limit ?? .max {
            let frame = try Recovery.readFrame(at: position, fileSize: range.upperBound, store: source)
            defer { position += UInt64(frame.bytes.count) }
            guard frame.header.type == .log else { continue }
            let context = source.context(position, "log frame")
            let payload = try Frame.payload(of: frame.bytes, header: frame.header, offset: position, salt: source.salt, context: context)
            var values = PendingValueFrames(start: start + UInt64(bytes.count), salt: state.store.salt)
            var log = LogBatchWriter()
            let batch = try LogBatchReader.read(payload, context: context) { operation in
                switch operation {
                case .put(let tree, let key, let value): log.put(tree: tree, key: key, value: value)
                case .putStored(let tree, let key, let address, let length):
                    let value = try source.readPayload(at: address, expecting: .value)
                    guard value.count == Int(length) else {
                        throw context.error("stored value is \(value.count) bytes, its put says \(length)")
                    }
                    let stored = value.withUnsafeBytes { values.append($0) }
                    log.put(tree: tree, key: key, storedAt: stored, length: length)
                case .delete(let tree, let key): log.delete(tree: tree, key: key)
                case .createTree(let tree): log.createTree(tree)
                case .dropTree(let tree): log.dropTree(tree)
                }
            }
            bytes += values.bytes
            bytes += Frame.encode(.log, payload: log.takePayload(sequence: batch.sequence, timeMilliseconds: batch.timeMilliseconds),
                                  offset: values.end, salt: state.store.salt, compress: true)
            unreplayedCommitEnds.append(start + UInt64(bytes.count))
            commitsCarriedOver += 1
        }
        var carried = CarriedOver(end: position, bytes: position - range.lowerBound, commits: commitsCarriedOver - commitsBefore)
        guard !bytes.isEmpty else { return carried }
        let written = ContinuousClock.now
        try state.store.file.write(bytes, at: start)
        end = start + UInt64(bytes.count)
        carried.reading = written - began
        carried.writing = ContinuousClock.now - written
        return carried
    }

    /// Replays the commits `append` wrote since the last replay into the new file's trees,
    /// as a reopen would: all of them, or with `atLeast`, those up to the first commit that
    /// ends that many bytes on. Returns the bytes and the time it took.
    ///
    /// When the writers buffer their writes (`Database.Options.writeBufferEntries`), the
    /// puts and deletes go to the trees' write buffers, as theirs do, under an owner other
    /// than the trees' so that no put reads the leaf it goes to. Replayed into the trees,
    /// each put of a commit read its leaf, mostly from the new file: about 2 ms per
    /// 1,000-record commit beside a 10M-record load, the floor of a slice, against 0.5 ms
    /// into the buffers. Beside the writers (not `holding`), buffers past the writers'
    /// limits are then merged into the trees, in key order, as the writer merges its own;
    /// what the swap leaves buffered, the writer takes over.
    mutating func replay(atLeast bytes: UInt64? = nil, holding: Bool = false) throws -> (bytes: UInt64, time: Duration) {
        let began = ContinuousClock.now
        let from = state.end
        if state.end < end {
            let through = bytes.map { bytes in unreplayedCommitEnds.first { $0 >= state.end + bytes } ?? end } ?? end
            let buffering = mergePolicy != nil
            _ = try Recovery.catchUp(&state, fileSize: through, owner: buffering ? bufferOwner : owner,
                                     buffer: buffering ? Self.replayBuffer : nil, options: options)
            guard state.end == through else {
                throw state.store.context(state.end, "carried-over commit").error("the compacted file's carried-over commits do not replay")
            }
            unreplayedCommitEnds.removeFirst(unreplayedCommitEnds.prefix { $0 <= through }.count)
        }
        if !holding { try settleBuffers() }
        return (state.end - from, ContinuousClock.now - began)
    }

    /// The write buffers' policy while commits replay into them: never due for a merge
    /// there (a hold replays a few commits; a merge into a 10M-record tree takes seconds),
    /// and leaving the merges of runs to `settleBuffers`.
    private static let replayBuffer: WriteBufferPolicy = {
        var policy = WriteBufferPolicy(minimumEntries: .max)
        policy.leavesRunMerges = true
        return policy
    }()

    /// Beside the writers: the buffers past the writers' limits merged into the trees, under
    /// the trees' owner, and the runs the replays added (merging none but the smallest,
    /// `WriteBufferPolicy.leavesRunMerges`) merged as their size classes fill.
    mutating func settleBuffers() throws {
        guard let mergePolicy else { return }
        var changes = TreeChanges(trees: state.trees, mutator: TreeMutator(store: state.store, owner: owner))
        changes.buffer = mergePolicy
        try changes.settleBuffers(policy: mergePolicy, newOwner: { owner })
        changes.mergeLeftRunTiers()
        state.trees = changes.trees
    }

    /// Writes `Database.preallocation` zeros past the end, as a durable commit does when it
    /// runs past them (FORMAT.md, "Preallocated space"), unless a slice still fits in those
    /// written before. This runs beside the writers; without it, the sync in the last hold
    /// also flushed the new file's size, and the first commit after the swap wrote the
    /// zeros (1 MiB) and flushed the size again: 3–5 ms here, against 0.05 ms for a commit
    /// inside preallocated space. Files without full durability get none, as their commits
    /// write none.
    ///
    /// - Returns: Whether it wrote zeros (which want a sync beside the writers).
    mutating func preallocate() throws -> Bool {
        guard options.durability == .full, allocatedEnd < end + CarryOverRounds.sliceBytes else { return false }
        let from = max(end, allocatedEnd)
        let through = end + Database.preallocation
        try state.store.file.write([UInt8](repeating: 0, count: Int(through - from)), at: from)
        allocatedEnd = through
        return true
    }

    /// Bytes appended that `replay` has not replayed yet.
    var unreplayedBytes: UInt64 { end - state.end }

    /// Bytes carried over since the last sync.
    var unsyncedBytes: UInt64 { end - syncedEnd }

    /// Makes the carried-over commits durable.
    mutating func sync() throws {
        try state.store.file.sync()
        syncedEnd = end
    }
}
