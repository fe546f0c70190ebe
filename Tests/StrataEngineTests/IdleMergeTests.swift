import Foundation
import Testing
@testable import StrataEngine

/// The write buffers merged into their trees once commits stop
/// (`Database.Options.writeBufferIdleMerge`): readers then read trees alone, and see the
/// same entries throughout.
@Suite("Idle merge of write buffers")
struct IdleMergeTests {
    static func key(_ n: Int) -> [UInt8] { Key(n).bytes }

    /// A database whose tree "t" holds 0, 2, … 398 in the tree proper and the odd keys
    /// 1, 3, … 59 in its buffer, in three commits of ten.
    static func buffered(idleMerge: Duration?) throws -> Database {
        let db = try WriteBufferTests.seeded(idleMerge: idleMerge)
        for commit in 0 ..< 3 {
            try db.write { tx in
                for n in stride(from: commit * 20 + 1, to: commit * 20 + 20, by: 2) {
                    try tx.put(WriteBufferTests.value(n), forKey: key(n), in: "t")
                }
            }
        }
        return db
    }

    static func expected() -> [[UInt8]] {
        (Array(stride(from: 0, to: 400, by: 2)) + Array(stride(from: 1, to: 60, by: 2))).sorted().map(key)
    }

    static func tree(_ db: Database) throws -> Statistics.Tree { try db.statistics().trees.first { $0.name == "t" }! }

    @Test("once commits stop, the buffer is merged into the tree and put in place; readers see the same entries")
    func bufferMergedOnceCommitsStop() throws {
        let db = try Self.buffered(idleMerge: .milliseconds(1))
        db.waitForIdleMerge()
        let tree = try Self.tree(db)
        #expect(tree.bufferedWrites == 0 && tree.bufferedRuns == 0)
        #expect(tree.entryCount == 230)
        #expect(try allEntries(db.snapshot(), "t").map(\.0) == Self.expected())
        #expect(try db.snapshot().get(Self.key(59), in: "t") == WriteBufferTests.value(59))
    }

    @Test("with the idle merge off, the buffer stays until it passes its limit")
    func bufferStaysWithIdleMergeOff() throws {
        let db = try Self.buffered(idleMerge: nil)
        db.waitForIdleMerge()
        #expect(try Self.tree(db).bufferedWrites == 30)
    }

    @Test("a snapshot taken before the idle merge keeps reading its own runs")
    func snapshotBeforeTheMergeIsUnchanged() throws {
        let db = try Self.buffered(idleMerge: .milliseconds(1))
        let before = try db.snapshot()
        db.waitForIdleMerge()
        #expect(before.trees["t"]!.isBuffered)
        #expect(try allEntries(before, "t").map(\.0) == Self.expected())
        #expect(try db.snapshot().trees["t"]!.isBuffered == false)
    }

    @Test("a write transaction in progress defers the idle merge; its commit and the next look finish it")
    func openTransactionDefersTheMerge() throws {
        let db = try Self.buffered(idleMerge: nil)
        let tx = try db.beginWrite()
        #expect(db.mergeBuffersWhileIdle() == .writerBusy, "the writer is busy: no waiting for it")
        try tx.put(WriteBufferTests.value(61), forKey: Self.key(61), in: "t")
        try tx.commit()
        #expect(db.mergeBuffersWhileIdle() == .again, "a merge started")
        db.waitForWriteBufferMerge()
        #expect(db.mergeBuffersWhileIdle() == .done, "the finished merge was put in place")
        let tree = try Self.tree(db)
        #expect(tree.bufferedWrites == 0 && tree.entryCount == 231)
    }

    @Test("a commit waiting for its sync keeps the writer busy: the look neither merges nor waits for the sync",
          .timeLimit(.minutes(1)))
    func commitAwaitingItsSyncIsNotAPause() throws {
        let fs = SimulatedFileSystem()
        var options = WriteBufferTests.options(buffer: 1_000_000)
        options.durability = .full
        let db = try Database(path: "/busy.strata", options: options, fileSystem: fs)
        defer { try? db.close() }
        try db.write { tx in
            try tx.createTree("t")
            try tx.put([1], forKey: Self.key(0), in: "t")
        }
        let syncing = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0)
        fs.beforeNextSync = { syncing.signal(); _ = release.wait(timeout: .now() + .seconds(50)) }
        let committed = DispatchSemaphore(value: 0)
        Thread {
            try? db.write { tx in try tx.put([2], forKey: Self.key(1), in: "t") }
            committed.signal()
        }.start()
        syncing.wait()   // the commit is written, the gate free, its sync held
        #expect(db.mergeBuffersWhileIdle() == .writerBusy)
        release.signal()
        committed.wait()
        #expect(db.mergeBuffersWhileIdle() != .writerBusy, "the sync done, commits have paused")
        #expect(try db.snapshot().get(Self.key(1), in: "t") == [2])
    }

    @Test("the merged tree is what a checkpoint writes and a reopen reads")
    func mergedTreeSurvivesAReopen() throws {
        let fs = MemoryFileSystem()
        var options = WriteBufferTests.options(buffer: 1_000_000, idleMerge: .milliseconds(1))
        options.durability = .full
        var db = try Database(path: "/idle.strata", options: options, fileSystem: fs)
        try db.write { tx in
            try tx.createTree("t")
            for n in 0 ..< 300 { try tx.put(WriteBufferTests.value(n), forKey: Self.key(n), in: "t") }
        }
        try db.write { tx in for n in 0 ..< 300 where n % 7 == 0 { _ = try tx.delete(Self.key(n), in: "t") } }
        db.waitForIdleMerge()
        try db.checkpoint()
        try db.close()
        db = try Database(path: "/idle.strata", options: options, fileSystem: fs)
        let kept = (0 ..< 300).filter { $0 % 7 != 0 }.map(Self.key)
        #expect(try allEntries(db.snapshot(), "t").map(\.0) == kept)
        #expect(try Inspector(db).verify().isEmpty)
    }
}
