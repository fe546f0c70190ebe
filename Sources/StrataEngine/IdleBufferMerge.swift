import Dispatch
import Synchronization

extension Database {
    /// What a look at an idle writer's buffers did (`mergeBuffersWhileIdle`).
    enum IdleMergeStep: Equatable {
        /// Nothing left to merge or put in place (or the handle closed).
        case done
        /// The writer was busy, or a merge runs: look again later.
        case again
    }

    /// Called once no commit came for `Options.writeBufferIdleMerge`, and when a merge beside
    /// the writer finishes: if the writer is free, puts the finished merges in place and
    /// publishes the result (the same commit, its trees merged: readers see the same
    /// entries), then starts a merge of whatever the buffers still hold. Never waits for the
    /// writer: a transaction in progress means commits have not stopped, and its commit
    /// installs the merges anyway.
    func mergeBuffersWhileIdle() -> IdleMergeStep {
        guard let merges = bufferMerges else { return .done }
        guard gate.tryEnter() else { return .again }
        defer { leaveGate() }
        guard !isClosed(), writer.poison == nil else { return .done }
        // Commits written and not yet synced go out first: what is published next must not
        // hold a commit that is not durable.
        do { try settleHoldingGate() } catch { return .done }   // poisoned: the next write reports it
        // A compaction that waited for commits to pause starts now.
        compactInBackgroundIfDue(writer, commitsPaused: true)
        var changes = TreeChanges(trees: writer.latest.trees, mutator: TreeMutator(store: writer.store, owner: nextOwner()))
        if changes.installFinishedMerges(merges) {
            writer.latest = Snapshot(store: writer.store, trees: changes.trees, sequence: writer.latest.sequence)
            publish(writer.latest)
        }
        let buffered = changes.trees.filter { $0.value.isBuffered }
        guard !buffered.isEmpty else { return .done }
        // A merge running (into a tree, or of runs) calls back when it finishes.
        if !merges.isRunning, !merges.isMergingRuns {
            merges.start(buffered, mutator: TreeMutator(store: writer.store, owner: nextOwner()))
        }
        return .again
    }

    /// Blocks until the merge `Options.writeBufferIdleMerge` schedules after the last
    /// commit has run and been put in place (or found the writer busy and handed it on to
    /// the next commit): for tests that read a settled store.
    func waitForIdleMerge() { idleWatch?.waitUntilSettled() }
}

/// Watches a handle's commits and, once none came for `delay`, has its write buffers merged
/// into their trees (`Database.mergeBuffersWhileIdle`): readers of a store whose writes have
/// stopped then read trees alone.
///
/// One look is scheduled at a time. A commit moves the moment it waits for; a look that
/// finds commits came since waits again, and one that finds work in flight (a merge
/// running, the writer busy) looks again after `delay`, or as soon as the merge finishes.
final class IdleWatch: Sendable {
    private struct State {
        var lastCommit = ContinuousClock.now
        /// Commits seen; a look compares it before and after, so none slips past unlooked.
        var commits: UInt64 = 0
        var scheduled = false
        var look: (@Sendable () -> Database.IdleMergeStep)?
    }

    let delay: Duration
    private let state = Mutex(State())
    /// Entered while a look is scheduled; `waitUntilSettled()` returns once none is.
    private let pending = DispatchGroup()

    init(delay: Duration) { self.delay = delay }

    /// Sets what a look does, once the handle exists (it holds the handle weakly).
    func attach(_ look: @escaping @Sendable () -> Database.IdleMergeStep) {
        state.withLock { $0.look = look }
    }

    /// A commit left buffered writes: a look follows once commits stop for `delay`.
    func committed() {
        let schedule = state.withLock { state in
            state.lastCommit = .now
            state.commits &+= 1
            return Self.claimSchedule(&state)
        }
        if schedule { pending.enter(); look(after: delay) }
    }

    /// A merge beside the writer finished: a look soon puts it in place if the writer is idle.
    func lookSoon() {
        let schedule = state.withLock { Self.claimSchedule(&$0) }
        if schedule { pending.enter(); look(after: .zero) }
    }

    func waitUntilSettled() { pending.wait() }

    private static func claimSchedule(_ state: inout State) -> Bool {
        guard !state.scheduled else { return false }
        state.scheduled = true
        return true
    }

    private func look(after wait: Duration) {
        let (seconds, attoseconds) = wait.components
        let nanoseconds = Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000)
        DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(nanoseconds)) { [self] in fire() }
    }

    private func fire() {
        let (quietFor, commits, look) = state.withLock { (ContinuousClock.now - $0.lastCommit, $0.commits, $0.look) }
        if quietFor < delay { return self.look(after: delay - quietFor) }
        let step = look?() ?? .done
        let again = state.withLock { state in
            guard step == .done, state.commits == commits else { return true }
            state.scheduled = false
            return false
        }
        if again { self.look(after: step == .again ? delay : .zero) } else { pending.leave() }
    }
}
