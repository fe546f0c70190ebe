import Foundation
import Synchronization

extension Database {
    /// When a writable handle compacts its file on its own, in the background.
    ///
    /// A copy-on-write B-tree never overwrites: each checkpoint writes the pages its commits
    /// changed and leaves the old ones behind, so under updates and random inserts the file
    /// grows past its live data. With this policy, a checkpoint that finds the file grown to
    /// `growth` times its size after the last compaction, and at least `minimumBytes`,
    /// starts `compact()` on a thread of its own; so does opening a file already grown that
    /// far (its checkpoints, one at each close, name the one before them back to the last
    /// compaction's, which tells its size then), so growth that spread over many short
    /// sessions counts too. Writers keep committing while it copies; they wait only for its
    /// final step, or its slices when they commit as fast as it carries
    /// (`CompactionResult.writerPause`, `Statistics.longestBackgroundWriterPause`). So the
    /// file stays under `growth` times the live data it held at its last compaction.
    ///
    /// While commits keep coming (a bulk load), a due compaction waits for them to pause for
    /// `Options.writeBufferIdleMerge` (50 ms by default), unless the file reaches `growth`²
    /// times its live data, estimated as its compacted size grown in proportion to the
    /// entries its trees gained since (at most `growth` times): a compaction beside a load
    /// replays every commit the load makes meanwhile into its new file, and copies all the
    /// data loaded so far. So during a load the file may reach `growth`² times its live data
    /// (`growth`³ times its compacted size), and is brought back under `growth` times its
    /// compacted size once the load pauses. (With `writeBufferIdleMerge` nil, or no write
    /// buffer, it compacts at `growth` regardless.)
    /// Closing the handle stops a compaction under way (the next open starts it again).
    ///
    /// ```swift
    /// var options = Database.Options()
    /// options.autoCompaction = .init(growth: 1.5, minimumBytes: 256 << 20)  // or nil: only explicit compact()
    /// ```
    public struct AutoCompaction: Sendable, Equatable {
        /// How much the file may grow over its compacted size before it is compacted again.
        /// Must be over 1; 2 (the default) lets it reach twice its live data.
        public var growth: Double
        /// Files smaller than this are left alone: compacting them gives back little.
        public var minimumBytes: UInt64

        /// - Parameters:
        ///   - growth: the factor over the compacted size that starts a compaction (over 1).
        ///   - minimumBytes: the least file size worth compacting; 64 MiB by default.
        public init(growth: Double = 2, minimumBytes: UInt64 = 64 << 20) {
            self.growth = max(growth, 1.05)
            self.minimumBytes = minimumBytes
        }

        /// Whether a file of `size` bytes, `baseline` after its last compaction, is due.
        func isDue(size: UInt64, baseline: UInt64) -> Bool {
            size >= minimumBytes && Double(size) >= growth * Double(baseline)
        }

        /// Whether it is due even while commits keep coming (`compactInBackgroundIfDue`):
        /// grown to `growth`² times its live data, estimated as `baseline` grown by
        /// `entryGrowth` (the entries its trees hold over those they held then), taken
        /// between 1 and `growth`.
        ///
        /// Why the estimate: a load's live data grows. W1's load writes its file at about
        /// 2.9 times the bytes it commits (log and checkpoints) while its tree grows by 0.4
        /// times them, so measured against the compacted size alone it is overdue each time
        /// its data has grown by ~40%, and each compaction copies everything loaded so far;
        /// against the estimate, each time its data has about doubled. The cap keeps the
        /// bound within `growth`³ times the compacted size when new entries are much smaller
        /// than the old ones.
        func isOverdue(size: UInt64, baseline: UInt64, entryGrowth: Double) -> Bool {
            let liveData = WriterState.liveData(baseline: baseline, entryGrowth: entryGrowth, cap: growth)
            return size >= minimumBytes && Double(size) >= growth * growth * liveData
        }
    }

    /// Blocks until no background compaction (`Options.autoCompaction`) is running on this
    /// handle: before measuring the file, or before a command-line tool exits, so a
    /// compaction under way is finished rather than abandoned (an abandoned one is only
    /// wasted work: the next writable open deletes its unfinished file). A compaction that
    /// is due but waits for commits to pause starts now, and is waited for too.
    ///
    /// ```swift
    /// try importAll(into: db)
    /// db.waitForBackgroundCompaction()
    /// ```
    public func waitForBackgroundCompaction() {
        // Not by waiting for the pause: another thread may never stop committing. (The gate
        // is not taken inside this thread's own transaction: nothing starts then.)
        if !isReadOnly, gate.enter() {
            if !isClosed() { compactInBackgroundIfDue(writer, commitsPaused: true) }
            leaveGate()
        }
        background.wait()
    }

    /// Called holding the gate, by a checkpoint and by the look once commits pause
    /// (`commitsPaused`): starts a background compaction when the policy says the file is
    /// due and none is running.
    ///
    /// While commits keep coming, a due compaction waits for them to pause (for
    /// `Options.writeBufferIdleMerge`; the look then starts it), unless it is overdue
    /// (`AutoCompaction.isOverdue`: `growth`² times its estimated live data). A compaction
    /// beside a bulk load carries every
    /// commit the load makes meanwhile into its new file, replaying each: during a W1 load
    /// of 10M records, compactions ran back to back from the first third on, their
    /// carry-over costing more than their copy (perf), and the load ran at 196k–275k
    /// records/s over eight runs against 280k in one with no compaction. A handle with no look (the
    /// write buffer off, or `writeBufferIdleMerge` nil) compacts at `growth` as before.
    func compactInBackgroundIfDue(_ writer: WriterState, commitsPaused: Bool = false) {
        guard let policy = options.autoCompaction, policy.isDue(size: writer.end, baseline: writer.compactedSize) else { return }
        if !commitsPaused, let idleWatch,
           !policy.isOverdue(size: writer.end, baseline: writer.compactedSize, entryGrowth: writer.entryGrowthSinceCompaction) {
            idleWatch.committed()
            return
        }
        compactInBackground(policy)
    }

    /// Called when a writable handle has opened: a file that grew over several handles
    /// (each one's checkpoints, the one at close too, leaving superseded pages behind) is
    /// measured against its size after its last compaction, not its size at this open, and
    /// compacted in the background when it is due. Without this, an app whose every session
    /// grows the file by less than `growth` would never see it compacted.
    func compactInBackgroundIfGrownSinceLastCompaction(_ writer: WriterState) {
        guard let policy = options.autoCompaction, !isReadOnly, let checkpoint = writer.checkpoint,
              writer.end >= policy.minimumBytes else { return }
        let store = writer.store
        compactInBackground(policy) { [self] in
            // The walk reads old frames beside the writer: it takes no lock until it is done.
            let baseline = try Self.sizeAfterLastCompaction(latest: checkpoint, store: store, isCancelled: isClosed)
            try withWriter { writer in
                // A compaction meanwhile replaced the file: its own size is the baseline.
                if writer.store === store { writer.compactedSize = min(writer.compactedSize, baseline) }
            }
        }
    }

    /// The most checkpoint frames `sizeAfterLastCompaction` reads back. A longer chain is
    /// measured from its oldest frame read: a larger baseline, so compaction comes later,
    /// never sooner, than the policy says.
    static let checkpointChainLimit = 10_000

    /// The size of the file as its last compaction left it, read back: the checkpoint chain
    /// from `latest` leads to the oldest checkpoint, which names no previous one (the one a
    /// compaction wrote, or a new file's first); that checkpoint wrote every page of the tree
    /// then, so the file header, the page and value frames before it and itself are the
    /// live data of that moment. For a compacted file this is where the file ended; for one
    /// never compacted it leaves out the log its first checkpoint made dead.
    ///
    /// Every checkpoint frame read is verified; the walk stops at one that fails (an old
    /// frame damaged after it was superseded) and measures to its end, as the verified
    /// frame after it names it. A frame header before the oldest checkpoint that does not
    /// parse gives the oldest checkpoint's end. Both err towards a larger baseline:
    /// compaction later, never sooner.
    static func sizeAfterLastCompaction(latest: FrameAddress, store: PageStore, isCancelled: () -> Bool) throws -> UInt64 {
        var oldest = latest
        for _ in 0 ..< checkpointChainLimit {
            if isCancelled() { throw StrataError.closed(path: store.path) }
            // Offsets fall along the chain (the decoder checks that each previous frame lies
            // before its successor), so the walk ends.
            guard let record = try? Recovery.readCheckpoint(at: oldest, store: store) else { return oldest.end }
            guard let previous = record.previous else {
                return try bytesKept(upTo: oldest, store: store, isCancelled: isCancelled) ?? oldest.end
            }
            oldest = previous
        }
        return oldest.end
    }

    /// The file header, the page and value frames before `checkpoint`, and the checkpoint
    /// frame: the frames walked by their headers alone. Nil when a header does not parse or
    /// a frame runs past the checkpoint.
    private static func bytesKept(upTo checkpoint: FrameAddress, store: PageStore, isCancelled: () -> Bool) throws -> UInt64? {
        var kept = FileHeader.dataStart + UInt64(checkpoint.length)
        var position = FileHeader.dataStart
        var frames = 0
        while position < checkpoint.offset {
            frames += 1
            // Checked often: `close()` waits for this thread to stop.
            if frames & 0x3F == 0, isCancelled() { throw StrataError.closed(path: store.path) }
            let bytes = try store.readBytes(count: FrameHeader.size, at: position)
            guard bytes.count == FrameHeader.size,
                  let header = try? bytes.withUnsafeBytes({ try FrameHeader.parse($0, context: store.context(position, "frame")) }),
                  position + UInt64(header.frameLength) <= checkpoint.offset else { return nil }
            if header.type == .page || header.type == .value { kept += UInt64(header.frameLength) }
            position += UInt64(header.frameLength)
        }
        return kept
    }

    /// Starts `compact()` on a thread of its own unless one is running; `prepare` runs
    /// first, on that thread. The compaction runs only if the policy still finds the file
    /// due once the thread holds the compactions' turn.
    private func compactInBackground(_ policy: AutoCompaction, prepare: (@Sendable () throws -> Void)? = nil) {
        guard background.start() else { return }
        let thread = Thread { [self] in
            defer { background.finish() }
            do {
                try prepare?()
                // A compaction that held the turn meanwhile (an explicit `compact()`) may have
                // done the work already.
                guard let result = try compactions.withLock({ _ -> CompactionResult? in
                    let counters = writerCounters()
                    guard policy.isDue(size: counters.end, baseline: counters.compactedSize) else { return nil }
                    return try compactHoldingTurn(progress: nil)
                }) else { return }
                background.record(result)
                options.logger.info("compacted the file in the background", metadata: [
                    "path": "\(path)", "bytesBefore": "\(result.bytesBefore)", "bytesAfter": "\(result.bytesAfter)",
                    "writerPause": "\(result.writerPause)", "longestHold": "\(result.longestHold.map(String.init(describing:)) ?? "none")"])
            } catch StrataError.closed {
                // The handle closed while it copied: nothing to do.
            } catch {
                background.recordFailure()
                options.logger.warning("background compaction failed; the file is unchanged and compaction will be tried again",
                                       metadata: ["path": "\(path)", "error": "\(error)"])
            }
        }
        thread.name = "strata compaction"
        thread.start()
    }
}

/// The background compaction of one handle: at most one at a time, and what they did.
final class BackgroundCompaction: Sendable {
    private struct State {
        var running = false
        var completed: UInt64 = 0
        var failed: UInt64 = 0
        var last: CompactionResult?
        var longestHold: CompactionHold?
    }

    private let state = Mutex(State())
    /// Left while a background compaction runs; `wait()` returns when none does.
    private let idle = DispatchGroup()

    /// Marks one as running; false when one already is.
    func start() -> Bool {
        let started = state.withLock { state in
            guard !state.running else { return false }
            state.running = true
            return true
        }
        if started { idle.enter() }
        return started
    }

    func finish() {
        state.withLock { $0.running = false }
        idle.leave()
    }

    func record(_ result: CompactionResult) {
        state.withLock {
            $0.completed += 1
            $0.last = result
            if let hold = result.longestHold, hold.duration > $0.longestHold?.duration ?? .zero { $0.longestHold = hold }
        }
    }

    func recordFailure() { state.withLock { $0.failed += 1 } }

    /// Blocks until no background compaction runs.
    func wait() { idle.wait() }

    var counters: (completed: UInt64, failed: UInt64, last: CompactionResult?, longestHold: CompactionHold?) {
        state.withLock { ($0.completed, $0.failed, $0.last, $0.longestHold) }
    }
}
