import Foundation
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
}
