import Dispatch
import Synchronization

extension Database {
    /// What a look at an idle writer's buffers did (`mergeBuffersWhileIdle`).
    enum IdleMergeStep: Equatable {
        /// Nothing left to merge or put in place (or the handle closed).
        case done
        /// A merge runs: look again later.
        case again
        /// The writer is at work: a transaction holds the gate, or a commit that left it has
        /// not returned. Commits have not paused; look again once they have.
        case writerBusy
    }

    /// Called once no commit came for `Options.writeBufferIdleMerge`, and when a merge beside
    /// the writer finishes: if the writer is free, puts the finished merges in place and
    /// publishes the result (the same commit, its trees merged: readers see the same
    /// entries), then starts a merge of whatever the buffers still hold. Never waits for the
    /// writer: a transaction in progress means commits have not stopped, and its commit
    /// installs the merges anyway.
    func mergeBuffersWhileIdle() -> IdleMergeStep {
        guard let merges = bufferMerges else { return .done }
        guard gate.tryEnter() else { return .writerBusy }
        defer { leaveGate() }
        guard !isClosed(), writer.poison == nil else { return .done }
        // A commit that has left the gate has not returned to its writer yet: it waits for
        // its sync, or releases the state its publish replaced. Its writer has not paused.
        // (Beside W1's load of 10M records, a look that took the gate while the writer
        // released a checkpointed transaction's trees, 0.4–1.4 s, started compactions due
        // only at a pause: two per load, each copying everything loaded so far.)
        guard commitsFinishing.load(ordering: .relaxed) == 0 else { return .writerBusy }
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
/// finds commits came since waits again, and so does one that finds the writer at work (a
/// transaction open, a commit waiting for its sync), as if a commit had just come; one that
/// finds a merge running looks again after `delay`, or as soon as the merge finishes.
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

    /// A commit returned to its writer: the `delay` of quiet a look waits for counts from
    /// now, not from when its frames were written (a checkpoint written in it, its sync and
    /// the release of what it replaced can outlast `delay`). When it left writes buffered
    /// (`leftBuffered`), a look follows once commits stop.
    func committed(leftBuffered: Bool = true) {
        let schedule = state.withLock { state in
            state.lastCommit = .now
            state.commits &+= 1
            return leftBuffered && Self.claimSchedule(&state)
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
            // The writer at work counts as a commit: the next look waits for quiet from here.
            if step == .writerBusy { state.lastCommit = .now }
            guard step == .done, state.commits == commits else { return true }
            state.scheduled = false
            return false
        }
        if again { self.look(after: step == .done ? .zero : delay) } else { pending.leave() }
    }
}
