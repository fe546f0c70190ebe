import Foundation
import Synchronization

extension Database {
    /// Whether an automatic checkpoint (`Options.checkpointLogBytes`) writes its pages on a
    /// thread of its own while commits go on, or with the writer held.
    ///
    /// A checkpoint written with the writer held stops every commit while it encodes,
    /// compresses and writes each page changed since the last one: tens of milliseconds at
    /// a million records, a stall in an app's steady trickle of commits. In the background,
    /// a pass writes a snapshot's pages beside the writer (`CheckpointPass`); then the
    /// checkpoint proper holds the writer only to write the few nodes commits changed
    /// meanwhile, sync, and write the checkpoint frame and slot. The file format is the
    /// same either way.
    ///
    /// Nodes that commits change during the pass are written twice, so a writer that
    /// changes much of the tree while the pass runs (a bulk load) is better served by a
    /// checkpoint that holds it: the default chooses by the pace of the commits.
    ///
    /// ```swift
    /// var options = Database.Options()
    /// options.backgroundCheckpoints = .never   // every checkpoint holds the writer
    /// ```
    public enum BackgroundCheckpoints: Sendable, Equatable {
        /// Every checkpoint holds the writer while it writes.
        case never
        /// In the background when the commits are sparse: when, at the pace of the commits
        /// as the checkpoint fell due, the puts and deletes made during a checkpoint as long
        /// as the handle's last one would change at most an eighth as many nodes as it
        /// wrote (each operation changes one leaf at most), so the pass's work is seldom
        /// done twice. With nothing measured yet (a handle's first checkpoint), in the
        /// background. A pass is overtaken by a busy writer: once the commits made during
        /// it hold more than an eighth as many operations as the pages it has written (past
        /// its first thousand), or the log grows by a sixteenth of the checkpoint interval,
        /// the commit that did so checkpoints holding the writer (the pages the pass wrote
        /// are then dead bytes), and the next checkpoint decides by what that one measured.
        case whenCommitsAreSparse
        /// Every automatic checkpoint runs in the background (explicit `checkpoint()`
        /// calls and the one in `close()` still hold the writer), overtaken only when the
        /// log reaches twice the checkpoint interval (`Options.checkpointLogBytes`).
        case always
    }

    /// Whether the commit just written makes a checkpoint due (`checkpointDueHoldingGate`):
    /// the log since the last checkpoint reached the interval (`WriterState.checkpointDueBytes`)
    /// and no pass is running, or a pass is running and the log grew past the point where
    /// the pass is overtaken. Called with the gate held.
    func checkpointIsDue() -> Bool {
        guard writer.logBytes >= writer.checkpointDueBytes else { return false }
        guard checkpointPass.isRunning else { return true }
        return writer.logBytes >= writer.pass.overtakenAt || isOutpacingThePass()
    }

    /// Whether the commits made during the running pass change nodes faster than it
    /// writes them (`BackgroundCheckpoints.whenCommitsAreSparse`): more than an eighth as
    /// many puts and deletes as the pages it placed, past its first thousand pages. Each
    /// operation changes one leaf at most, which the checkpoint proper writes again.
    private func isOutpacingThePass() -> Bool {
        guard options.backgroundCheckpoints == .whenCommitsAreSparse else { return false }
        return (writer.operations - writer.pass.operationsAtStart) * 8 > UInt64(writer.pass.pagesPlaced + 1024)
    }

    /// Called by a commit with the gate held when `checkpointIsDue()`, once the commit is
    /// durable: starts a checkpoint pass in the background when the policy allows and none
    /// is running, else checkpoints now, overtaking a pass that is running (the bound on
    /// the next open's replay is the limit's purpose).
    func checkpointDueHoldingGate() throws {
        if checkpointPass.isRunning {
            checkpointPass.cancel()
        } else if checkpointsInBackground(), checkpointPass.start() {
            let limit = writer.checkpointDueBytes
            let overtakenAt = options.backgroundCheckpoints == .always
                ? 2 * limit : min(2 * limit, writer.logBytes + limit / 16)
            writer.pass = PassProgress(overtakenAt: overtakenAt, operationsAtStart: writer.operations)
            startCheckpointPass(of: writer.latest, store: writer.store)
            return
        }
        try checkpointHoldingGate()
    }

    /// Whether the policy puts this checkpoint in the background. Called with the gate held.
    private func checkpointsInBackground() -> Bool {
        // Older files may hold values over the inline limit in their leaves, which a pass
        // cannot write (`CheckpointPass.LeafNeedsValueFrame`).
        guard writer.store.header.storesValuesAtCommit else { return false }
        switch options.backgroundCheckpoints {
        case .never:
            return false
        case .always:
            return true
        case .whenCommitsAreSparse:
            guard let last = writer.lastCheckpoint, let nearlyDue = writer.nearlyDue else { return true }
            let elapsed = ContinuousClock.now - nearlyDue.at
            guard elapsed > .zero else { return false }
            // Operations at the pace since the checkpoint nearly fell due, over as long as
            // the last checkpoint took: an upper bound on the nodes they would change.
            let operations = Double(writer.operations - nearlyDue.operations)
            return operations * (last.duration / elapsed) * 8 < Double(last.pages)
        }
    }

    /// Runs a pass over `snapshot` on a thread of its own, then the checkpoint proper.
    /// Called with the gate held, after `checkpointPass.start()` succeeded.
    private func startCheckpointPass(of snapshot: Snapshot, store: PageStore) {
        let started = ContinuousClock.now
        // The runs the pass merges stay as they are until the checkpoint proper installs
        // the merge (`BufferRun.isTaken`).
        BackgroundBufferMerges.markTaken(snapshot.trees)
        let owner = nextOwner()
        let thread = Thread { [self] in
            var pass = CheckpointPass(store: store, place: { [self] frames, starts in
                try placeCheckpointFrames(&frames, starts: starts, store: store)
            }, sync: { [self] in try group.syncBesideCommits(store.file) })
            var completed = false
            do {
                let (merged, merges) = try mergingBuffers(of: snapshot, owner: owner)
                try pass.write(merged)
                // The pages reach the disk before the gate is taken: the checkpoint's own
                // sync then has little left to flush.
                try group.syncBesideCommits(store.file)
                completed = try finishCheckpointPass(pass, store: store, started: started, merges: merges)
            } catch is CheckpointPassStopped {
                // A checkpoint holding the writer or a compaction came first, or the handle closed.
            } catch let error as StrataError {
                // A failed write or sync poisons the handle (`placeCheckpointFrames`,
                // `GroupCommit.syncBesideCommits`); the next commit reports it.
                options.logger.error("background checkpoint failed; this handle refuses further writes until reopened",
                                     metadata: ["path": "\(path)", "error": "\(error)"])
            } catch {
                options.logger.warning("background checkpoint abandoned; the next due checkpoint decides afresh where it runs",
                                       metadata: ["path": "\(path)", "error": "\(error)"])
            }
            checkpointPass.finish(completed: completed)
        }
        thread.name = "strata checkpoint"
        thread.start()
    }

    /// `snapshot` with its write buffers merged into its trees, by `owner`, on the pass's
    /// thread: a buffered tree has few unwritten nodes, and without this the checkpoint
    /// proper merged and wrote the whole buffer holding the writer. Starts from the merges
    /// beside the writer finished or running, and leaves its own for the writer to install
    /// (`BackgroundBufferMerges.merge`).
    /// - Returns: The merged snapshot, and the merges that made it, in order, for the
    ///   checkpoint proper to install.
    private func mergingBuffers(of snapshot: Snapshot, owner: UInt64) throws -> (Snapshot, [[String: BufferMerge]]) {
        guard snapshot.trees.values.contains(where: \.isBuffered) else { return (snapshot, []) }
        let mutator = TreeMutator(store: snapshot.store, owner: owner)
        guard let bufferMerges else {
            let trees = try TreeChanges.mergingBuffers(of: snapshot.trees, mutator: mutator)
            return (Snapshot(store: snapshot.store, trees: trees, sequence: snapshot.sequence), [])
        }
        bufferMerges.waitUntilIdle()
        let finished = bufferMerges.peekFinished()
        var trees = finished.installed(in: snapshot.trees, store: snapshot.store)
        let own = bufferMerges.merge(trees.filter { $0.value.isBuffered }, mutator: mutator)
        trees = own.installed(in: trees, store: snapshot.store)
        // A merge that failed leaves its tree buffered: the checkpoint proper merges it, and
        // reports the damage.
        return (Snapshot(store: snapshot.store, trees: trees, sequence: snapshot.sequence), [finished, own])
    }

    /// Places a batch of the pass's frames at the log's end: seals each for its offset,
    /// writes them, and moves the end past them. A failed write poisons the handle and cuts
    /// the file back, as a failed commit does.
    ///
    /// - Throws: `CheckpointPassStopped` when the handle closed, the pass was cancelled or
    ///   the file compacted since it began (its pages would land in a file that no longer
    ///   holds its tree); `.poisoned`; `.io` when the write fails.
    private func placeCheckpointFrames(_ frames: inout [UInt8], starts: [Int], store: PageStore) throws -> UInt64 {
        checkpointPass.testHooks.withLock { $0.beforeEachBatch }?()
        try enterGate()
        defer { leaveGate() }
        guard !isClosed(), !checkpointPass.isCancelled, writer.store === store else { throw CheckpointPassStopped() }
        try checkWritable()
        let base = writer.end
        let horizon = durableHorizon()
        frames.withUnsafeMutableBytes { raw in
            for (index, start) in starts.enumerated() {
                let end = index + 1 < starts.count ? starts[index + 1] : raw.count
                Frame.seal(UnsafeMutableRawBufferPointer(rebasing: raw[start ..< end]), at: base + UInt64(start),
                           salt: store.salt, durableUpTo: horizon)
            }
        }
        try writer.guarded(rollingBackTo: base) { try store.file.write(frames, at: base) }
        writer.end = base + UInt64(frames.count)
        writer.allocatedEnd = max(writer.allocatedEnd, writer.end)
        writer.pass.pagesPlaced += starts.count
        return base
    }

    /// The checkpoint proper, with the gate held: writes the nodes changed since the pass's
    /// snapshot, refers to the rest by the addresses the pass gave them, and writes the
    /// checkpoint frame of the latest commit. Returns false when the pass no longer
    /// applies (a checkpoint or compaction came first, or the handle closed).
    private func finishCheckpointPass(_ pass: CheckpointPass, store: PageStore, started: ContinuousClock.Instant,
                                      merges: [[String: BufferMerge]]) throws -> Bool {
        checkpointPass.testHooks.withLock { $0.beforeFinishing }?()
        try enterGate()
        defer { leaveGate() }
        guard !isClosed(), !checkpointPass.isCancelled, writer.store === store else { return false }
        try checkWritable()
        let held = ContinuousClock.now
        do {
            try checkpointHoldingGate(known: pass.written, startedAt: started, merges: merges)
        } catch {
            writer.failedCheckpoints += 1
            throw error
        }
        checkpointPass.record(pause: ContinuousClock.now - held)
        return true
    }

    /// Blocks until no background checkpoint (`Options.backgroundCheckpoints`) runs on
    /// this handle: at the end of a bulk load whose cost should include its checkpoint, or
    /// before measuring the file. The commits are durable without it; a checkpoint only
    /// shortens the next open's replay.
    ///
    /// ```swift
    /// try importAll(into: db)
    /// db.waitForBackgroundCheckpoint()
    /// ```
    public func waitForBackgroundCheckpoint() { checkpointPass.wait() }
}

/// A running checkpoint pass as the writer measures it, with the gate held: when it is
/// overtaken (`BackgroundCheckpoints`).
struct PassProgress {
    /// The log size at which a checkpoint holding the writer overtakes the pass.
    var overtakenAt: UInt64 = .max
    /// `WriterState.operations` when the pass started: the commits' puts and deletes since
    /// are those it may have to write again.
    var operationsAtStart: UInt64 = 0
    /// Pages the pass has placed in the file.
    var pagesPlaced = 0
}

/// Why a pass stopped without writing its checkpoint: one holding the writer or a
/// compaction came first, or the handle closed. Not a failure.
struct CheckpointPassStopped: Error {}

/// The background checkpoint of one handle: at most one at a time, whether it was
/// cancelled, and what they did.
final class BackgroundCheckpointState: Sendable {
    private struct State {
        var running = false
        var cancelled = false
        var completed: UInt64 = 0
        var abandoned: UInt64 = 0
        var longestPause: Duration = .zero
    }

    /// Points where tests stop a pass, to commit while it runs.
    struct TestHooks {
        /// Called without the gate, before each batch of pages is placed.
        var beforeEachBatch: (@Sendable () -> Void)?
        /// Called without the gate, once every page is written and synced.
        var beforeFinishing: (@Sendable () -> Void)?
    }

    private let state = Mutex(State())
    let testHooks = Mutex(TestHooks())
    /// Left while a pass runs; `wait()` returns when none does.
    private let idle = DispatchGroup()

    /// Marks a pass as running; false when one already is.
    func start() -> Bool {
        let started = state.withLock { state in
            guard !state.running else { return false }
            state.running = true
            state.cancelled = false
            return true
        }
        if started { idle.enter() }
        return started
    }

    func finish(completed: Bool) {
        state.withLock {
            $0.running = false
            if completed { $0.completed += 1 } else { $0.abandoned += 1 }
        }
        idle.leave()
    }

    /// Tells the running pass to stop at its next batch: a checkpoint holding the writer
    /// (explicit, at close, or because the log ran far past the limit) takes over.
    func cancel() { state.withLock { if $0.running { $0.cancelled = true } } }

    var isRunning: Bool { state.withLock { $0.running } }
    var isCancelled: Bool { state.withLock { $0.cancelled } }

    func record(pause: Duration) { state.withLock { $0.longestPause = max($0.longestPause, pause) } }

    func wait() { idle.wait() }

    var counters: (completed: UInt64, abandoned: UInt64, longestPause: Duration) {
        state.withLock { ($0.completed, $0.abandoned, $0.longestPause) }
    }
}
