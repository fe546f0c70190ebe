import Foundation
import Synchronization

extension Database {
    /// When a writable handle compacts its file on its own, in the background.
    ///
    /// A copy-on-write B-tree never overwrites: each checkpoint writes the pages its commits
    /// changed and leaves the old ones behind, so under updates and random inserts the file
    /// grows past its live data. With this policy, a checkpoint that finds the file grown to
    /// `growth` times its size after the last compaction (or when the handle opened), and at
    /// least `minimumBytes`, starts `compact()` on a thread of its own. Writers keep
    /// committing while it copies; they wait only for its final step
    /// (`CompactionResult.writerPause`). So the file stays under `growth` times the live
    /// data it held at its last compaction.
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
    }

    /// Blocks until no background compaction (`Options.autoCompaction`) is running on this
    /// handle: before measuring the file, or before a command-line tool exits, so a
    /// compaction under way is finished rather than abandoned (an abandoned one is only
    /// wasted work: the next writable open deletes its unfinished file).
    ///
    /// ```swift
    /// try importAll(into: db)
    /// db.waitForBackgroundCompaction()
    /// ```
    public func waitForBackgroundCompaction() { background.wait() }

    /// Called by a checkpoint, holding the gate: starts a background compaction when the
    /// policy says the file is due and none is running.
    func compactInBackgroundIfDue(_ writer: WriterState) {
        guard let policy = options.autoCompaction, policy.isDue(size: writer.end, baseline: writer.compactedSize),
              background.start() else { return }
        let thread = Thread { [self] in
            defer { background.finish() }
            do {
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
                    "writerPause": "\(result.writerPause)"])
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
        }
    }

    func recordFailure() { state.withLock { $0.failed += 1 } }

    /// Blocks until no background compaction runs.
    func wait() { idle.wait() }

    var counters: (completed: UInt64, failed: UInt64, last: CompactionResult?) {
        state.withLock { ($0.completed, $0.failed, $0.last) }
    }
}
