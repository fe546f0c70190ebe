import Foundation
import Logging
import Testing
@testable import StrataEngine

/// What the engine repairs or cannot do is logged through swift-log and counted in
/// statistics, never swallowed.
@Suite("Logged and counted events")
struct ReportedEventsTests {
    static func options(_ log: CapturedLog, checkpointLogBytes: UInt64 = 1 << 40) -> Database.Options {
        var options = smallOptions(checkpointLogBytes: checkpointLogBytes)
        options.logger = log.logger
        return options
    }

    @Test("a torn tail dropped at open is logged as a warning and counted")
    func tornTail() throws {
        let fs = SimulatedFileSystem()
        let log = CapturedLog()
        var options = Self.options(log)
        options.checkpointOnClose = false
        let db = try Database(path: "/t.strata", options: options, fileSystem: fs)
        for n in 1 ... 5 { try NumberedWorkload.commit(n, to: db) }
        try db.close()
        var image = fs.contents(of: "/t.strata")
        image.removeLast(7)
        fs.setContents(image, of: "/t.strata")
        let reopened = try Database(path: "/t.strata", options: options, fileSystem: fs)
        let warning = try #require(log.entries(at: .warning).first)
        #expect(warning.message.contains("torn tail"))
        #expect(warning.metadata["path"] == "/t.strata")
        #expect(try reopened.statistics().tornBytesDroppedAtOpen > 0)
        #expect(try reopened.statistics().salvagedFromOffset == nil)
    }

    @Test("a salvage that drops valid commits is logged as an error and its offset kept in statistics")
    func salvage() throws {
        let fs = SimulatedFileSystem()
        let log = CapturedLog()
        var options = Self.options(log)
        options.checkpointOnClose = false
        let db = try Database(path: "/s.strata", options: options, fileSystem: fs)
        for n in 1 ... 5 { try NumberedWorkload.commit(n, to: db) }
        let damaged = db.writerCounters().end
        for n in 6 ... 8 { try NumberedWorkload.commit(n, to: db) }
        try db.close()
        var image = fs.contents(of: "/s.strata")
        image[Int(damaged) + 30] ^= 0xFF
        fs.setContents(image, of: "/s.strata")
        #expect(throws: StrataError.self) { try Database(path: "/s.strata", options: options, fileSystem: fs) }
        options.recovery = .truncateAtFirstBadFrame
        let salvaged = try Database(path: "/s.strata", options: options, fileSystem: fs)
        let error = try #require(log.entries(at: .error).first)
        #expect(error.message.contains("salvage"))
        #expect(error.metadata["offset"] == "\(damaged)")
        #expect(try salvaged.statistics().salvagedFromOffset == damaged)
        #expect(try NumberedWorkload.content(of: salvaged) == NumberedWorkload.states(through: 5)[5])
    }

    @Test("a failed automatic checkpoint keeps the commit, is logged and counted, and poisons the handle")
    func failedAutomaticCheckpoint() throws {
        let fs = SimulatedFileSystem()
        let log = CapturedLog()
        var options = Self.options(log, checkpointLogBytes: 1)
        // Checkpoints held by the committing writer: a pass on a thread of its own (commit
        // 1's, say, on a loaded machine) could meet the fault meant for commit 2's.
        options.backgroundCheckpoints = .never
        let db = try Database(path: "/c.strata", options: options, fileSystem: fs)
        try NumberedWorkload.commit(1, to: db)
        // The commit's own write and sync succeed; the checkpoint's first sync fails.
        fs.nextFault = .init(operation: .sync, errno: EIO)
        fs.nextFaultSkipping = 1
        try NumberedWorkload.commit(2, to: db)
        let statistics = try db.statistics()
        #expect(statistics.failedAutomaticCheckpoints == 1)
        #expect(statistics.isPoisoned)
        #expect(log.entries(at: .error).contains { $0.message.contains("automatic checkpoint failed") })
        #expect(log.entries(at: .error).contains { $0.message.contains("refuses further writes") })
        #expect(throws: StrataError.self) { try NumberedWorkload.commit(3, to: db) }
        try db.close()
        let reopened = try Database(path: "/c.strata", options: smallOptions(), fileSystem: fs)
        #expect(try NumberedWorkload.content(of: reopened) == NumberedWorkload.states(through: 2)[2])
    }
}
