import Foundation
import Testing
@testable import StrataEngine

@Suite("Checkpoint interval")
struct CheckpointIntervalTests {
    @Test("the interval is the store's live data, at least checkpointLogBytes and at most the limit")
    func intervalFollowsLiveData() {
        let interval = CheckpointInterval(minimum: 64 << 20, limit: 256 << 20)
        #expect(interval.logBytes(liveData: 1 << 20) == 64 << 20)
        #expect(interval.logBytes(liveData: 100 << 20) == 100 << 20)
        #expect(interval.logBytes(liveData: 10 << 30) == 256 << 20)
    }

    @Test("a limit at or below checkpointLogBytes gives a fixed interval")
    func limitAtTheMinimumIsFixed() {
        var options = Database.Options()
        options.checkpointLogBytesLimit = options.checkpointLogBytes
        #expect(CheckpointInterval(options).logBytes(liveData: 10 << 30) == options.checkpointLogBytes)
        options.checkpointLogBytesLimit = 1
        #expect(CheckpointInterval(options).logBytes(liveData: 10 << 30) == options.checkpointLogBytes)
    }

    @Test("with no limit named, the log may grow to four times checkpointLogBytes, saturating")
    func defaultLimitIsFourTimesTheMinimum() {
        var options = Database.Options()
        #expect(CheckpointInterval(options) == CheckpointInterval(minimum: 64 << 20, limit: 256 << 20))
        options.checkpointLogBytes = .max / 2
        #expect(CheckpointInterval(options).limit == .max)
    }

    /// 400 values of 1 KiB that do not compress, compacted so that the file's size is its
    /// live data (~400 KiB); then commits of eight such values until an automatic
    /// checkpoint is written. Returns the most log seen before it, and where it was due.
    private func logBeforeCheckpoint(limit: UInt64?) throws -> (most: UInt64, due: UInt64) {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        var options = smallOptions(pageSize: 4096, checkpointLogBytes: 16 << 10)
        options.checkpointLogBytesLimit = limit
        options.autoCompaction = nil
        options.backgroundCheckpoints = .never   // the checkpoint is in the commit that makes it due
        let db = try Database(path: directory.file("interval.strata"), options: options)
        defer { try? db.close() }
        var generator = SeededGenerator(seed: 7)
        func value() -> [UInt8] { (0 ..< 1024).map { _ in UInt8.random(in: 0 ... 255, using: &generator) } }
        try db.write { tx in
            try tx.createTree("t")
            for i in 0 ..< 400 { try tx.put(value(), forKey: Key(i).bytes, in: "t") }
        }
        _ = try db.compact()
        let due = try db.statistics().checkpointDueAtLogBytes
        var most: UInt64 = 0, round = 0
        let first = try db.statistics().checkpointSequence
        while try db.statistics().checkpointSequence == first, round < 1000 {
            try db.write { tx in
                for i in 0 ..< 8 { try tx.put(value(), forKey: Key((round * 8 + i) % 400).bytes, in: "t") }
            }
            most = max(most, try db.statistics().logBytesSinceCheckpoint)
            round += 1
        }
        return (most, due)
    }

    @Test("a store larger than checkpointLogBytes lets its log grow past it before a checkpoint, up to four times it")
    func largeStoreCheckpointsLater() throws {
        let (most, due) = try logBeforeCheckpoint(limit: nil)
        #expect(due == 64 << 10)
        #expect(most > 32 << 10)
        #expect(most < (64 << 10) + (9 << 10))   // the limit and at most one commit past it
    }

    @Test("with the limit at checkpointLogBytes, a checkpoint comes at checkpointLogBytes whatever the store's size")
    func fixedIntervalCheckpointsAtTheMinimum() throws {
        let (most, due) = try logBeforeCheckpoint(limit: 16 << 10)
        #expect(due == 16 << 10)
        #expect(most < (16 << 10) + (9 << 10))
    }
}
