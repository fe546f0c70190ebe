import Foundation
import Synchronization
import Testing
@testable import StrataEngine

@Suite("Compaction in the background")
struct AutoCompactionTests {
    /// Overwrites 500 keys 120 times, checkpointing every 32 KiB of log: without compaction
    /// the file keeps every superseded page.
    private func overwrite(_ db: Database) throws {
        for round in 0 ..< 120 {
            try db.write { tx in
                try tx.createTree("t", ifNotExists: true)
                for i in 0 ..< 500 { try tx.put([UInt8](repeating: UInt8(round), count: 100), forKey: Key(i).bytes, in: "t") }
            }
        }
    }

    private func options(_ policy: Database.AutoCompaction?) -> Database.Options {
        var options = smallOptions(pageSize: 4096, checkpointLogBytes: 32 << 10)
        options.autoCompaction = policy
        return options
    }

    @Test("a file whose data keeps being overwritten is compacted in the background, with no call to compact()")
    func overwrittenFileIsCompacted() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let unattended = try Database(path: directory.file("off.strata"), options: options(nil))
        try overwrite(unattended)
        let compacting = try Database(path: directory.file("on.strata"), options: options(.init(growth: 2, minimumBytes: 256 << 10)))
        try overwrite(compacting)
        compacting.waitForBackgroundCompaction()

        let statistics = try compacting.statistics()
        #expect(statistics.backgroundCompactions >= 1)
        #expect(statistics.failedBackgroundCompactions == 0)
        let last = try #require(statistics.lastBackgroundCompaction)
        #expect(last.bytesAfter < last.bytesBefore / 2)
        #expect(try unattended.statistics().backgroundCompactions == 0)
        // The policy's bound: twice the compacted size, and a checkpoint's worth of slack.
        // (Measured to the last frame: a file also holds up to 1 MiB of zeros preallocated
        // for the log.)
        let end = compacting.writerCounters().end
        #expect(end < 2 * last.bytesAfter + 256 << 10)
        #expect(end * 3 < unattended.writerCounters().end)
        #expect(try allEntries(compacting.snapshot(), "t").elementsEqual(allEntries(unattended.snapshot(), "t"), by: ==))
        try compacting.close()
        try unattended.close()
        let reopened = try Database(path: directory.file("on.strata"), options: options(nil))
        #expect(try allEntries(reopened.snapshot(), "t").allSatisfy { $0.1 == [UInt8](repeating: 119, count: 100) })
        #expect(try reopened.snapshot().count(in: "t") == 500)
        try reopened.close()
    }

    /// Rewrites 50 of 500 keys with values that do not compress (a checkpoint every six or
    /// so rounds), then waits for a compaction it started.
    private func rewriteSome(_ db: Database, round: Int) throws -> WriterCounters {
        var generator = SeededGenerator(seed: UInt64(round))
        try db.write { tx in
            try tx.createTree("t", ifNotExists: true)
            for i in 0 ..< 50 { try tx.put(generator.bytes(words: 12), forKey: Key((round * 50 + i) % 500).bytes, in: "t") }
        }
        db.background.wait()
        return db.writerCounters()
    }

    /// A handle compacting at three times its compacted size whose commits never pause
    /// (its look comes an hour after the last), once compacted and then grown until a
    /// compaction is due at a checkpoint: waiting for the pause. Returns it and its rounds.
    private func dueAndWaiting(_ directory: TemporaryDirectory) throws -> (Database, round: Int) {
        var options = options(.init(growth: 3, minimumBytes: 4 << 10))
        options.writeBufferIdleMerge = .seconds(3600)
        let db = try Database(path: directory.file(), options: options)
        var round = 0
        // A new file's baseline is its header: the first compaction is overdue at once.
        while try db.statistics().backgroundCompactions == 0, round < 100 {
            round += 1
            _ = try rewriteSome(db, round: round)
        }
        #expect(try db.statistics().backgroundCompactions == 1)
        // Due (three times the compacted size) and not overdue at a checkpoint, where the
        // policy is asked.
        let baseline = db.writerCounters().compactedSize
        var counters = db.writerCounters()
        while counters.end < 3 * baseline || counters.checkpointSequence != counters.sequence, round < 200 {
            round += 1
            counters = try rewriteSome(db, round: round)
        }
        #expect(counters.end >= 3 * baseline && counters.end < 9 * baseline)
        return (db, round)
    }

    @Test("while commits keep coming, a due compaction waits for them to pause, unless the file reaches growth² its live data")
    func dueCompactionWaitsForCommitsToPause() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let (db, start) = try dueAndWaiting(directory)
        var round = start
        defer { try? db.close() }
        func compactions() throws -> UInt64 { try db.statistics().backgroundCompactions }
        #expect(try compactions() == 1)

        // The commits pause: the look starts it, and the file is back under three times its data.
        // (A checkpoint written beside the last commits takes the gate to place its pages;
        // the look, finding the gate taken, would count the writer busy: it waits for it.)
        db.checkpointPass.wait()
        _ = db.mergeBuffersWhileIdle()
        db.background.wait()
        #expect(try compactions() == 2)
        let last = try #require(try db.statistics().lastBackgroundCompaction)
        #expect(db.writerCounters().end < 3 * last.bytesAfter)

        // Commits that never pause: compacted once the file reaches nine times its data.
        let baseline = db.writerCounters().compactedSize
        while try compactions() == 2, round < 400 {
            round += 1
            _ = try rewriteSome(db, round: round)
        }
        #expect(try compactions() == 3)
        let overdue = try #require(try db.statistics().lastBackgroundCompaction)
        #expect(overdue.bytesBefore >= 9 * baseline)
        #expect(try db.snapshot().count(in: "t") == 500)
    }

    @Test("while commits keep coming, a load's growing data puts off the overdue point, by at most growth times")
    func overduePointGrowsWithTheEntries() {
        let policy = Database.AutoCompaction(growth: 2, minimumBytes: 1 << 20)
        let baseline: UInt64 = 100 << 20
        // Entries as at the compaction: growth² times its size, as for rewrites.
        #expect(!policy.isOverdue(size: 399 << 20, baseline: baseline, entryGrowth: 1))
        #expect(policy.isOverdue(size: 400 << 20, baseline: baseline, entryGrowth: 1))
        // Half again as many entries: half again as much live data.
        #expect(!policy.isOverdue(size: 599 << 20, baseline: baseline, entryGrowth: 1.5))
        #expect(policy.isOverdue(size: 600 << 20, baseline: baseline, entryGrowth: 1.5))
        // Ten times the entries counts as growth times: growth³ the compacted size at most.
        #expect(policy.isOverdue(size: 800 << 20, baseline: baseline, entryGrowth: 10))
        // Fewer entries than then do not bring it sooner.
        #expect(!policy.isOverdue(size: 399 << 20, baseline: baseline, entryGrowth: 0.5))
        // Nor does any estimate bring a file under the minimum.
        #expect(!policy.isOverdue(size: 900 << 10, baseline: 100 << 10, entryGrowth: 1))
    }

    @Test("the writer measures entry growth from its last compaction")
    func entryGrowthCountsFromTheLastCompaction() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        // Unbuffered, so that every put is counted at its commit (buffered puts into a tree
        // the last commit shares are counted once merged).
        var unbuffered = options(nil)
        unbuffered.writeBufferEntries = nil
        let db = try Database(path: directory.file(), options: unbuffered)
        defer { try? db.close() }
        func put(_ keys: Range<Int>) throws {
            try db.write { tx in
                try tx.createTree("t", ifNotExists: true)
                for i in keys { try tx.put([1, 2, 3], forKey: Key(i).bytes, in: "t") }
            }
        }
        // A new file held no entries: nothing to measure growth from.
        try put(0 ..< 100)
        #expect(try db.withWriter { $0.entryGrowthSinceCompaction } == 1)
        _ = try db.compact()
        try put(100 ..< 300)
        #expect(try db.withWriter { $0.entryGrowthSinceCompaction } == 3)
        // Rewriting keys adds none.
        try put(0 ..< 300)
        #expect(try db.withWriter { $0.entryGrowthSinceCompaction } == 3)
    }

    @Test("waitForBackgroundCompaction() starts a compaction waiting for a pause, while another thread keeps committing",
          .timeLimit(.minutes(1)))
    func waitingStartsTheWaitingCompaction() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let (db, round) = try dueAndWaiting(directory)
        defer { try? db.close() }
        let stop = Atomic<Bool>(false)
        let committer = Thread {
            var next = round
            while !stop.load(ordering: .relaxed) {
                next += 1
                _ = try? self.rewriteSome(db, round: next)
            }
        }
        committer.start()
        db.waitForBackgroundCompaction()
        stop.store(true, ordering: .relaxed)
        #expect(try db.statistics().backgroundCompactions >= 2)
    }

    @Test("files under the policy's minimum size are left alone")
    func smallFilesAreLeftAlone() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let db = try Database(path: directory.file(), options: options(.init(growth: 2, minimumBytes: 64 << 20)))
        try overwrite(db)
        db.waitForBackgroundCompaction()
        #expect(try db.statistics().backgroundCompactions == 0)
        try db.close()
    }

    @Test("closing the handle stops a background compaction, and the file keeps every commit")
    func closeStopsBackgroundCompaction() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file()
        let db = try Database(path: path, options: options(.init(growth: 1.05, minimumBytes: 64 << 10)))
        try overwrite(db)
        // Whether a compaction is copying, carrying over or not running at this moment,
        // close() returns with none running and the file whole.
        try db.close()
        #expect(!FileManager.default.fileExists(atPath: path + ".compact"))
        let reopened = try Database(path: path, options: options(nil))
        #expect(try reopened.snapshot().count(in: "t") == 500)
        #expect(try reopened.snapshot().get(Key(7).bytes, in: "t") == [UInt8](repeating: 119, count: 100))
        try reopened.close()
    }

    /// The next 200-byte value of `generator`: random bytes, which do not compress.
    private func value(_ generator: inout SeededGenerator) -> [UInt8] {
        generator.bytes(words: 25)
    }

    /// Values of `value(_:)`, seeded by `round`, under `keys` (by default, all 2,000 of the
    /// tree), written in one commit.
    private func rewriteAll(_ db: Database, round: UInt64, keys: StrideTo<Int> = stride(from: 0, to: 2000, by: 1)) throws {
        var generator = SeededGenerator(seed: round)
        try db.write { tx in
            try tx.createTree("t", ifNotExists: true)
            for i in keys { try tx.put(value(&generator), forKey: Key(i).bytes, in: "t") }
        }
    }

    /// Writes every key at `path` and compacts the file; returns its size then.
    private func writeAllAndCompact(_ path: String) throws -> UInt64 {
        let db = try Database(path: path, options: options(nil))
        try rewriteAll(db, round: 0)
        let compacted = try db.compact().bytesAfter
        try db.close()
        return compacted
    }

    /// Opens `path` with no background compaction, rewrites one value in 16 from the first
    /// half of the tree, and closes: one session of an app, whose checkpoint at close
    /// leaves the superseded pages behind (every leaf of that half).
    private func session(_ path: String, round: UInt64) throws {
        let db = try Database(path: path, options: options(nil))
        try rewriteAll(db, round: round, keys: stride(from: 0, to: 1000, by: 16))
        try db.close()
    }

    /// Writes every key and compacts (the size that returns), then runs sessions at `path`
    /// until the file is three times that size; returns the compacted size and the last
    /// session's round. Each session grows the file by less than the policy's factor of 2
    /// over its size when it opened, so no handle's own checkpoints would ever find it due.
    private func growOverSessions(_ path: String) throws -> (compacted: UInt64, lastRound: UInt64) {
        let compacted = try writeAllAndCompact(path)
        var round: UInt64 = 0
        var size = compacted
        while size < 3 * compacted {
            let before = size
            round += 1
            try session(path, round: round)
            size = try #require(FileManager.default.attributesOfItem(atPath: path)[.size] as? UInt64)
            #expect(size < 2 * before)
        }
        return (compacted, round)
    }

    @Test("a file grown over many sessions, none of which doubled it, is compacted in the background when opened")
    func fileGrownOverSessionsIsCompactedWhenOpened() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file()
        let (compacted, lastRound) = try growOverSessions(path)

        let db = try Database(path: path, options: options(.init(growth: 2, minimumBytes: 256 << 10)))
        db.waitForBackgroundCompaction()
        let statistics = try db.statistics()
        #expect(statistics.backgroundCompactions == 1)
        let result = try #require(statistics.lastBackgroundCompaction)
        #expect(result.bytesBefore >= 3 * compacted)
        #expect(result.bytesAfter < compacted + compacted / 4)
        // Key 0 holds the last session's first value; key 1 the first commit's second.
        var lastSession = SeededGenerator(seed: lastRound), firstCommit = SeededGenerator(seed: 0)
        #expect(try db.snapshot().get(Key(0).bytes, in: "t") == value(&lastSession))
        _ = value(&firstCommit)
        #expect(try db.snapshot().get(Key(1).bytes, in: "t") == value(&firstCommit))
        #expect(try db.snapshot().count(in: "t") == 2000)
        try db.close()
    }

    @Test("closing a handle right after its open started a compaction leaves the file whole, and the next open compacts it")
    func closeRightAfterOpenStopsTheCompaction() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file()
        let (compacted, _) = try growOverSessions(path)
        let policy = options(.init(growth: 2, minimumBytes: 256 << 10))
        // Whether the walk, the copy or nothing is under way when it is asked to close.
        try Database(path: path, options: policy).close()
        #expect(!FileManager.default.fileExists(atPath: path + ".compact"))

        // (Had the compaction won the race with close, the file is compacted already.)
        let db = try Database(path: path, options: policy)
        db.waitForBackgroundCompaction()
        #expect(try db.statistics().failedBackgroundCompactions == 0)
        #expect(db.writerCounters().end < compacted + compacted / 4)
        #expect(try db.snapshot().count(in: "t") == 2000)
        try db.close()
    }

    @Test("a file opened within the policy's growth over its last compaction is left alone")
    func fileWithinGrowthIsLeftAloneWhenOpened() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file()
        _ = try writeAllAndCompact(path)
        try session(path, round: 1)

        let db = try Database(path: path, options: options(.init(growth: 4, minimumBytes: 64 << 10)))
        db.waitForBackgroundCompaction()
        #expect(try db.statistics().backgroundCompactions == 0)
        try db.close()
    }

    @Test("the size after the last compaction is read back along the checkpoint chain")
    func sizeAfterLastCompactionFollowsTheChain() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file()
        let db = try Database(path: path, options: options(nil))
        try rewriteAll(db, round: 0)
        let compacted = try db.compact().bytesAfter
        for round in 1 ... 3 {
            try rewriteAll(db, round: UInt64(round))
            try db.checkpoint()
        }
        let latest = try #require(db.writerCounters().checkpoint)
        #expect(latest.offset > compacted)
        let store = try db.snapshot().store
        #expect(try Database.sizeAfterLastCompaction(latest: latest, store: store, isCancelled: { false }) == compacted)
        try db.close()
    }

    @Test("a file never compacted is measured from its first checkpoint's pages, not the log before them")
    func neverCompactedFileIsMeasuredFromItsFirstPages() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file()
        // No automatic checkpoint: four commits of log before the first checkpoint, dead
        // once it is written.
        let db = try Database(path: path, options: smallOptions(pageSize: 4096))
        for round in 0 ..< 4 { try rewriteAll(db, round: UInt64(round)) }
        try db.checkpoint()
        let first = try #require(db.writerCounters().checkpoint)
        let pages = try allFrames(ofFileAt: path).filter { $0.offset < first.offset && $0.type == "page" }.reduce(0) { $0 + $1.length }
        try rewriteAll(db, round: 4)
        try db.checkpoint()
        let latest = try #require(db.writerCounters().checkpoint)
        let baseline = try Database.sizeAfterLastCompaction(latest: latest, store: db.snapshot().store, isCancelled: { false })
        #expect(baseline == FileHeader.dataStart + pages + UInt64(first.length))
        #expect(baseline < first.end / 2)
        try db.close()
    }

    @Test("a damaged superseded checkpoint ends the walk back along the chain, and the file opens and compacts as usual")
    func damagedOldCheckpointEndsTheWalk() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file()
        let db = try Database(path: path, options: options(nil))
        try rewriteAll(db, round: 0)
        try db.compact()
        var checkpoints: [FrameAddress] = []
        for round in 1 ... 4 {
            try rewriteAll(db, round: UInt64(round))
            try db.checkpoint()
            checkpoints.append(try #require(db.writerCounters().checkpoint))
        }
        try db.close()
        // The second of the four loses a byte of its payload: its checksum fails.
        let handle = try #require(FileHandle(forUpdatingAtPath: path))
        try handle.seek(toOffset: checkpoints[1].offset + UInt64(checkpoints[1].length) - 2)
        let byte = try #require(try handle.read(upToCount: 1)).first!
        try handle.seek(toOffset: checkpoints[1].offset + UInt64(checkpoints[1].length) - 2)
        try handle.write(contentsOf: [~byte])
        try handle.close()

        let reopened = try Database(path: path, options: options(.init(growth: 1.05, minimumBytes: 64 << 10)))
        let latest = try #require(reopened.writerCounters().checkpoint)
        #expect(try Database.sizeAfterLastCompaction(latest: latest, store: reopened.snapshot().store, isCancelled: { false })
                == checkpoints[1].end)
        reopened.waitForBackgroundCompaction()
        #expect(try reopened.statistics().failedBackgroundCompactions == 0)
        #expect(try reopened.snapshot().count(in: "t") == 2000)
        try reopened.close()
    }
}
