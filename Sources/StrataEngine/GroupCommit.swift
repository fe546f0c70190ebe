import Foundation

/// Durable commits from many threads share fdatasyncs (group commit), as PostgreSQL's and
/// InnoDB's log flushes do.
///
/// A committer writes its frames holding the writer's gate, then leaves the gate and waits
/// here until a sync covers its commit. When no sync is under way it runs one itself (it
/// leads), covering every commit written so far; committers that wrote meanwhile wait for
/// it and then for the next, which one of them leads. One thread committing alone pays one
/// sync per commit, as before; N threads committing at once pay about one sync per round.
///
/// Nothing is visible before it is durable: the leader publishes the newest state its sync
/// covered, and `commit()` returns only after that. So a reader never sees a commit that a
/// power loss could take back, and a committer sees its own commit once `commit()` returns.
/// The next writer builds on the newest state written (`WriterState.latest`), not on the
/// newest published, so a sync in flight never stalls the next transaction.
///
/// A failed sync is not retried (the kernel may have dropped the pages): every commit it
/// would have covered fails, and the next holder of the gate poisons the handle and cuts
/// the file back to the last durable commit (`Database.checkWritable`).
final class GroupCommit: @unchecked Sendable {
    /// The newest written commit's sequence, where its frames end, and the state it makes
    /// visible; nil when every written commit is durable.
    private struct Written {
        var sequence: UInt64
        var end: UInt64
        var snapshot: Snapshot
    }

    /// Why commits failed: the sync that failed, and where the last durable commit ends.
    struct Failure {
        var error: StrataError
        var durableEnd: UInt64
    }

    private let condition = NSCondition()
    private var written: Written?
    private var durableSequence: UInt64
    private var durableEnd: UInt64
    private var syncing = false
    private var failure: Failure?
    private var commits: UInt64 = 0
    private var syncs: UInt64 = 0
    /// Called (with the lock held) each time a committer starts waiting for another's sync:
    /// lets tests know that a commit is written and waiting, without sleeping.
    var onWait: (@Sendable () -> Void)? {
        get { condition.withLock { waitHook } }
        set { condition.withLock { waitHook = newValue } }
    }
    private var waitHook: (@Sendable () -> Void)?

    /// The durable state of a file just opened, checkpointed or replaced.
    init(sequence: UInt64, end: UInt64) {
        (durableSequence, durableEnd) = (sequence, end)
    }

    /// Records a commit whose frames are written (with the gate held): it becomes durable and
    /// visible with the next sync.
    func wrote(sequence: UInt64, end: UInt64, snapshot: Snapshot) {
        condition.withLock {
            written = Written(sequence: sequence, end: end, snapshot: snapshot)
            commits += 1
        }
    }

    /// Waits until commit `sequence` is durable and published, syncing `file` when no sync
    /// is under way.
    ///
    /// - Parameters:
    ///   - sequence: The commit's sequence.
    ///   - publish: Makes a state visible and returns the one it replaced; called with the
    ///     newest state a sync covered, one leader at a time, in commit order.
    /// - Throws: The failed sync's error (`StrataError.io`) when it covered this commit, or
    ///   any commit the handle wrote before it.
    func waitUntilDurable(_ sequence: UInt64, publish: (Snapshot) -> Snapshot?) throws {
        // The state this leader's publish replaced, released after the lock (the defers run
        // in reverse): a last release frees the nodes of a whole commit, and other
        // committers wait on the lock. A caller leads at most one sync: its own covers it.
        var replaced: Snapshot?
        defer { withExtendedLifetime(replaced) {} }
        condition.lock()
        defer { condition.unlock() }
        while true {
            if let failure { throw failure.error }
            if durableSequence >= sequence { return }
            if syncing {
                waitHook?()
                condition.wait()
                continue
            }
            guard let target = written else { return }   // unreachable: `sequence` was written
            let synced = runSync(target.snapshot.store.file)
            syncs += 1
            if synced {
                durableSequence = target.sequence
                durableEnd = target.end
                if written?.sequence == target.sequence { written = nil }
                replaced = publish(target.snapshot)
            }
            condition.broadcast()
        }
    }

    /// Runs one sync of `file` as the sync under way (called with the lock held; the lock is
    /// left while the sync runs): a failure is recorded as every unsynced commit's.
    ///
    /// - Returns: Whether the sync succeeded.
    private func runSync(_ file: any StorageFile) -> Bool {
        syncing = true
        condition.unlock()
        let result = Result { try file.sync() }
        condition.lock()
        syncing = false
        guard case .failure(let error) = result else { return true }
        let cause = (error as? StrataError) ?? .io(operation: "sync", path: file.path, errno: EIO)
        failure = Failure(error: cause, durableEnd: durableEnd)
        return false
    }

    /// Syncs `file` for a writer of pages beside the commits (a background checkpoint's
    /// pass, without the gate), taking its turn with the commits' syncs. Its failure is
    /// theirs: the kernel may have dropped their pages with its own, so every commit not
    /// yet durable fails and the next holder of the gate poisons the handle.
    ///
    /// - Throws: The sync's error, or that of a commit sync that failed before.
    func syncBesideCommits(_ file: any StorageFile) throws {
        condition.lock()
        defer { condition.unlock() }
        while syncing, failure == nil { condition.wait() }
        if let failure { throw failure.error }
        _ = runSync(file)
        condition.broadcast()
        if let failure { throw failure.error }
    }

    /// Syncs what is written and not yet durable (with the gate held, so nothing more is
    /// written meanwhile): a checkpoint, compaction or close then starts from a durable,
    /// published state.
    ///
    /// - Throws: The error of a sync that failed, now or before.
    func settle(publish: (Snapshot) -> Snapshot?) throws {
        let newest = condition.withLock { failure == nil ? written?.sequence : nil }
        if let newest { try waitUntilDurable(newest, publish: publish) }
        if let failure = currentFailure { throw failure.error }
    }

    /// Records a commit its writer synced on its own, with the gate held: files older than
    /// format 3 sync each commit before the next is written (`FileHeader.groupsCommits`).
    func syncedAlone(sequence: UInt64, end: UInt64) {
        condition.withLock {
            commits += 1
            syncs += 1
            if failure == nil { (durableSequence, durableEnd, written) = (sequence, end, nil) }
        }
    }

    /// Marks everything up to `end` durable with no sync of its own: the gate holder synced
    /// it (a checkpoint), or the file was replaced (a compaction) or re-read.
    func settled(sequence: UInt64, end: UInt64) {
        condition.withLock {
            guard failure == nil else { return }
            (durableSequence, durableEnd, written) = (sequence, end, nil)
        }
    }

    /// The end of the last durable commit: where the file is known synced up to.
    var currentDurableEnd: UInt64 { condition.withLock { durableEnd } }

    /// The failed sync, if one failed.
    var currentFailure: Failure? { condition.withLock { failure } }

    /// Durable commits recorded, and the syncs that made them durable.
    var counters: (commits: UInt64, syncs: UInt64) { condition.withLock { (commits, syncs) } }
}
