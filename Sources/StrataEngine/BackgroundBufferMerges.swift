import Foundation
import Logging
import Synchronization

extension Database {
    /// Blocks until no write buffer merge runs beside the writer on this handle
    /// (`Options.mergesWriteBufferInBackground`): before measuring a load whose cost should
    /// include its merges. The next commit puts a finished merge in place.
    ///
    /// ```swift
    /// try importAll(into: db)
    /// db.waitForWriteBufferMerge()
    /// ```
    public func waitForWriteBufferMerge() { bufferMerges?.waitUntilIdle() }
}

/// The merges of write buffers into their trees that run beside the writer, one at a time
/// per handle (docs/WRITE-BUFFER.md, step 3).
///
/// A commit whose tree's buffer passed its limit (`WriteBufferPolicy`) starts one over the
/// state it commits, and goes on; later commits add newer runs while it runs. The first
/// commit after it finished installs it (`BufferMerge.installed`), before its own writes
/// become runs, and drops the runs it took. A writer that fills the buffer to twice its
/// limit before the merge finishes waits for it: the buffer's memory stays bounded, and a
/// writer faster than the merge runs at the merge's pace, as it did with every merge on
/// its own thread.
///
/// The merge writes nothing to the file: it copies the leaves it changes in memory, as a
/// transaction would, and the next checkpoint writes them.
///
/// Beside those, one merge of runs at a time (`RunsMerge`) does the size-tiered merging of
/// a buffer's runs that the writer otherwise does at commit.
final class BackgroundBufferMerges: Sendable {
    private struct State {
        var running = false
        /// Merges finished and not yet handed to the writer, by tree.
        var finished: [String: BufferMerge] = [:]
        var completed: UInt64 = 0
        var failed: UInt64 = 0
        /// Whether a merge of runs runs.
        var mergingRuns = false
        /// Merges of runs finished and not yet handed to the writer.
        var finishedRuns: [RunsMerge] = []
        var completedRuns: UInt64 = 0
        /// Filters over the runs merges into trees took, by tree, not yet handed to the
        /// writer (`TakenRunsFilter`).
        var takenFilters: [String: TakenRunsFilter] = [:]
    }

    private let state = Mutex(State())
    /// Left while a merge runs; `waitUntilIdle()` returns when none does.
    private let idle = DispatchGroup()
    private let logger: Logger
    /// Told when a merge finishes, to put it in place if the writer is idle.
    private let idleWatch: IdleWatch?

    init(logger: Logger, idleWatch: IdleWatch? = nil) {
        self.logger = logger
        self.idleWatch = idleWatch
    }

    /// Starts merging the buffers of `trees` (a state the writer is committing, whose nodes
    /// nothing changes from now on) into copies made by `mutator`, whose owner must be new.
    /// Marks their runs taken. Called with the writer held.
    /// - Returns: false when a merge runs already.
    @discardableResult
    func start(_ trees: [String: TreeState], mutator: TreeMutator) -> Bool {
        guard claim() else { return false }
        Self.markTaken(trees)
        let work = UncheckedTrees(trees: trees)
        let thread = Thread { [self] in _ = mergeClaimed(work.trees, mutator: mutator) }
        thread.name = "strata buffer merge"
        thread.start()
        return true
    }

    /// Starts merging `runs`, neighbours in the buffer of `tree` that the writer may move
    /// (`SortedRuns.tierWindow`), into one. Marks them claimed. Called with the writer held.
    /// - Returns: false when a merge of runs runs already.
    @discardableResult
    func startMergingRuns(_ runs: [BufferRun], of tree: String) -> Bool {
        guard claim(\.mergingRuns) else { return false }
        runs.forEach { $0.markClaimed() }
        let work = UncheckedRuns(runs: runs)
        let thread = Thread { [self] in
            let merge = RunsMerge(tree: tree, sources: work.runs)
            state.withLock { state in
                state.mergingRuns = false
                state.finishedRuns.append(merge)
                state.completedRuns += 1
            }
            idle.leave()
            idleWatch?.lookSoon()
        }
        thread.name = "strata run merge"
        thread.start()
        return true
    }

    /// The merges of runs finished since the last call, handed over: the caller installs
    /// those that still apply.
    func takeFinishedRuns() -> [RunsMerge] {
        state.withLock { state in
            defer { state.finishedRuns = [] }
            return state.finishedRuns
        }
    }

    var isMergingRuns: Bool { state.withLock { $0.mergingRuns } }

    /// Merges the buffers of `trees` on the calling thread, once no other merge runs, and
    /// leaves the result for the writer too: what a checkpoint pass does before it writes
    /// (`Database.startCheckpointPass`). Their runs must be marked taken already, by the
    /// caller holding the writer when it took `trees`.
    /// - Returns: The merges made; a tree whose merge failed is left out.
    func merge(_ trees: [String: TreeState], mutator: TreeMutator) -> [String: BufferMerge] {
        while !claim() { waitUntilIdle() }
        return mergeClaimed(trees, mutator: mutator)
    }

    /// Marks the runs of `trees` taken (`BufferRun.markTaken`). Called with the writer held.
    static func markTaken(_ trees: [String: TreeState]) {
        for state in trees.values { state.runs?.runs.forEach { $0.markTaken() } }
    }

    /// Marks a merge as running in the lane `running` says (into a tree by default, or of
    /// runs); false when one already is.
    private func claim(_ running: WritableKeyPath<State, Bool> = \.running) -> Bool {
        let claimed = state.withLock { state in
            guard !state[keyPath: running] else { return false }
            state[keyPath: running] = true
            return true
        }
        if claimed { idle.enter() }
        return claimed
    }

    private func mergeClaimed(_ trees: [String: TreeState], mutator: TreeMutator) -> [String: BufferMerge] {
        var merges: [String: BufferMerge] = [:]
        var failure: (any Error)?
        for (name, tree) in trees {
            if let filter = tree.runs.flatMap({ TakenRunsFilter.covering($0.runs) }) {
                state.withLock { $0.takenFilters[name] = filter }
            }
            do {
                merges[name] = try BufferMerge.merging(tree, mutator: mutator)
            } catch {
                failure = error
            }
        }
        if let failure {
            // The writer's own merge of these runs meets the same damage and reports it to
            // the transaction (`TreeChanges.failedMerge`), and a checkpoint reports it too.
            logger.warning("a merge of buffered writes beside the writer failed; the writer merges them itself",
                           metadata: ["error": "\(failure)"])
        }
        state.withLock { state in
            state.running = false
            state.finished.merge(merges) { _, newer in newer }
            if failure != nil { state.failed += 1 } else { state.completed += 1 }
        }
        idle.leave()
        idleWatch?.lookSoon()
        return merges
    }

    /// The filters over taken runs built since the last call (`TakenRunsFilter`), handed
    /// over: the caller uses those whose runs it still holds.
    func takeTakenFilters() -> [String: TakenRunsFilter] {
        state.withLock { state in
            defer { state.takenFilters = [:] }
            return state.takenFilters
        }
    }

    /// The merges finished since the last call, handed over: the caller installs those
    /// that still apply.
    func takeFinished() -> [String: BufferMerge] {
        state.withLock { state in
            defer { state.finished = [:] }
            return state.finished
        }
    }

    /// The merges finished and not yet taken, left for the writer: what a checkpoint pass
    /// starts from.
    func peekFinished() -> [String: BufferMerge] { state.withLock { $0.finished } }

    var isRunning: Bool { state.withLock { $0.running } }

    /// Blocks until no merge runs, of runs or into a tree.
    func waitUntilIdle() { idle.wait() }

    var counters: (completed: UInt64, failed: UInt64, runs: UInt64) {
        state.withLock { ($0.completed, $0.failed, $0.completedRuns) }
    }

    /// Trees handed to the merge's thread: their nodes and runs never change again.
    private struct UncheckedTrees: @unchecked Sendable { let trees: [String: TreeState] }
    /// Runs handed to the thread merging them: they never change.
    private struct UncheckedRuns: @unchecked Sendable { let runs: [BufferRun] }
}
