import Foundation
import Testing
@testable import StrataEngine

/// Leaves a checkpoint writes stay in the tree, in memory, within a share of the page
/// cache's budget: lookups reach them without the cache, and later checkpoints refer to
/// them by address until a transaction changes them.
@Suite("Leaves kept in memory after a checkpoint")
struct KeptLeavesTests {
    static let value = [UInt8](repeating: 7, count: 40)

    /// A database with keys 0 ..< `count` in tree "t", checkpointed.
    func checkpointedDatabase(_ count: Int, cacheSize: Int = Database.Options.defaultCacheSize,
                              checkpointOnClose: Bool = true, durability: Database.Durability = .full,
                              in fs: SimulatedFileSystem) throws -> Database {
        var options = smallOptions(pageSize: 4096)
        options.durability = durability
        options.cacheSize = cacheSize
        options.checkpointOnClose = checkpointOnClose
        let db = try Database(path: "/k.strata", options: options, fileSystem: fs)
        try db.write { tx in
            try tx.createTree("t", ifNotExists: true)
            for i in 0 ..< count { try tx.put(Self.value, forKey: Key(i).bytes, in: "t") }
        }
        try db.checkpoint()
        return db
    }

    @Test("lookups after a checkpoint read its leaves from memory, without the page cache or the file")
    func lookupsSkipTheCache() throws {
        let db = try checkpointedDatabase(20_000, in: SimulatedFileSystem())
        let before = try db.statistics()
        #expect(before.keptLeafBytes > 0)
        let snapshot = try db.snapshot()
        let bytesRead = snapshot.store.bytesRead
        for i in 0 ..< 20_000 { #expect(try snapshot.get(Key(i).bytes, in: "t") == Self.value) }
        let after = try db.statistics()
        #expect(after.cacheHits + after.cacheMisses == before.cacheHits + before.cacheMisses)
        #expect(snapshot.store.bytesRead == bytesRead)
    }

    @Test("a kept leaf a transaction changes is written again by the next checkpoint")
    func changedKeptLeavesAreWrittenAgain() throws {
        let fs = SimulatedFileSystem()
        let db = try checkpointedDatabase(20_000, checkpointOnClose: false, in: fs)
        try db.write { tx in
            for i in stride(from: 0, to: 20_000, by: 97) { try tx.put([1, 2, 3], forKey: Key(i).bytes, in: "t") }
        }
        try db.checkpoint()
        try db.close()   // no checkpoint on close: the second checkpoint's pages alone hold the changes
        let reopened = try Database(path: "/k.strata", options: smallOptions(pageSize: 4096), fileSystem: fs)
        #expect(try reopened.statistics().commitsReplayedAtOpen == 0)
        let snapshot = try reopened.snapshot()
        for i in 0 ..< 20_000 {
            let expected: [UInt8] = i % 97 == 0 ? [1, 2, 3] : Self.value
            #expect(try snapshot.get(Key(i).bytes, in: "t") == expected)
        }
    }

    @Test("an unchanged kept leaf is not written again: a second checkpoint adds only the changed pages")
    func unchangedKeptLeavesAreReferenced() throws {
        let fs = SimulatedFileSystem()
        // Relaxed: no zeros written ahead of the log (`Database.preallocation`) to count.
        let db = try checkpointedDatabase(20_000, durability: .relaxed, in: fs)
        let sizeAfterFirst = try db.statistics().fileSize
        try db.write { tx in try tx.put([1], forKey: Key(0).bytes, in: "t") }
        try db.checkpoint()
        // One leaf, the branches above it, the log frame and the checkpoint frame.
        #expect(try db.statistics().fileSize - sizeAfterFirst < 16 * 4096)
    }

    @Test("kept leaves take at most three quarters of a small cache; the rest are read through the cache")
    func keptLeavesStayWithinTheirShare() throws {
        let cacheSize = 256 << 10
        let db = try checkpointedDatabase(20_000, cacheSize: cacheSize, in: SimulatedFileSystem())
        let statistics = try db.statistics()
        #expect(statistics.keptLeafBytes > 0)
        #expect(statistics.keptLeafBytes <= cacheSize / 4 * 3)
        let snapshot = try db.snapshot()
        for i in 0 ..< 20_000 { #expect(try snapshot.get(Key(i).bytes, in: "t") == Self.value) }
        let after = try db.statistics()
        #expect(after.cacheMisses > statistics.cacheMisses)
        #expect(after.cacheBytes + after.keptLeafBytes <= cacheSize + 4 * 4096)
    }

    @Test("a kept leaf stops counting once no version of the tree holds it")
    func releasedLeavesStopCounting() throws {
        let db = try checkpointedDatabase(20_000, in: SimulatedFileSystem())
        #expect(try db.statistics().keptLeafBytes > 0)
        try db.write { tx in
            for i in 0 ..< 20_000 { _ = try tx.delete(Key(i).bytes, in: "t") }
        }
        try db.checkpoint()
        #expect(try db.statistics().keptLeafBytes == 0)
    }
}
