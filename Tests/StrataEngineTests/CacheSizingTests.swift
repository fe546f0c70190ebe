import Foundation
import Testing
@testable import StrataEngine

@Suite("The caches' sizes")
struct CacheSizingTests {
    @Test("by default the cache may hold an eighth of physical memory, between 64 MiB and 4 GiB")
    func defaultFollowsPhysicalMemory() {
        let eighth = Int(ProcessInfo.processInfo.physicalMemory / 8)
        #expect(Database.Options.defaultCacheSize == min(max(eighth, 64 << 20), 4 << 30))
        #expect(Database.Options().cacheSize == Database.Options.defaultCacheSize)
    }

    /// Cache misses while reading every key of a 20,000-key tree a second time.
    func missesOnSecondRead(cacheSize: Int) throws -> UInt64 {
        let fs = SimulatedFileSystem()
        var options = smallOptions(pageSize: 4096)
        let db = try Database(path: "/c.strata", options: options, fileSystem: fs)
        try db.write { tx in
            try tx.createTree("t", ifNotExists: true)
            for i in 0 ..< 20_000 { try tx.put([UInt8](repeating: 7, count: 40), forKey: Key(i).bytes, in: "t") }
        }
        try db.close()
        options.cacheSize = cacheSize
        let reopened = try Database(path: "/c.strata", options: options, fileSystem: fs)
        let snapshot = try reopened.snapshot()
        for i in 0 ..< 20_000 { _ = try snapshot.get(Key(i).bytes, in: "t") }
        let before = try reopened.statistics().cacheMisses
        for i in 0 ..< 20_000 { _ = try snapshot.get(Key(i).bytes, in: "t") }
        return try reopened.statistics().cacheMisses - before
    }

    @Test("at the default size a tree that fits is read from disk once; a small budget set by the app is honoured")
    func aTreeThatFitsStaysDecoded() throws {
        #expect(try missesOnSecondRead(cacheSize: Database.Options.defaultCacheSize) == 0)
        #expect(try missesOnSecondRead(cacheSize: 64 << 10) > 0)
    }

    /// A database with `count` values of 5,000 bytes (stored out of line: over a quarter of
    /// a 4 KiB page) in tree "big", checkpointed, so they live in value frames.
    func databaseWithLargeValues(_ count: Int, cacheSize: Int = Database.Options.defaultCacheSize,
                                 smallKeys: Int = 0, in fs: SimulatedFileSystem) throws -> Database {
        var options = smallOptions(pageSize: 4096)
        options.cacheSize = cacheSize
        let db = try Database(path: "/v.strata", options: options, fileSystem: fs)
        try db.write { tx in
            try tx.createTree("big", ifNotExists: true)
            try tx.createTree("small", ifNotExists: true)
            for i in 0 ..< count { try tx.put([UInt8](repeating: UInt8(i % 251), count: 5_000), forKey: Key(i).bytes, in: "big") }
            for i in 0 ..< smallKeys { try tx.put([UInt8](repeating: 7, count: 40), forKey: Key(i).bytes, in: "small") }
        }
        try db.checkpoint()
        return db
    }

    @Test("large values a checkpoint writes are read back from memory, not the file")
    func writtenValuesStayInMemory() throws {
        let db = try databaseWithLargeValues(100, in: SimulatedFileSystem())
        let snapshot = try db.snapshot()
        let before = snapshot.store.bytesRead
        for i in 0 ..< 100 { #expect(try snapshot.get(Key(i).bytes, in: "big") == [UInt8](repeating: UInt8(i % 251), count: 5_000)) }
        #expect(snapshot.store.bytesRead == before)
        #expect(try db.statistics().cachedValues == 100)
    }

    @Test("after a reopen each large value is read from the file once, while they fit a quarter of the cache")
    func readValuesStayInMemory() throws {
        let fs = SimulatedFileSystem()
        try databaseWithLargeValues(100, in: fs).close()
        let db = try Database(path: "/v.strata", options: smallOptions(pageSize: 4096), fileSystem: fs)
        let snapshot = try db.snapshot()
        for i in 0 ..< 100 { _ = try snapshot.get(Key(i).bytes, in: "big") }
        let afterFirstPass = snapshot.store.bytesRead
        for i in 0 ..< 100 { #expect(try snapshot.get(Key(i).bytes, in: "big")?.count == 5_000) }
        #expect(snapshot.store.bytesRead == afterFirstPass)
        let statistics = try db.statistics()
        #expect(statistics.cachedValues == 100)
        #expect(statistics.cachedValueBytes <= Database.Options.defaultCacheSize / 4)
    }

    @Test("reading more large values than their budget holds evicts values only, never a page of the tree")
    func valuesNeverEvictPages() throws {
        let cacheSize = 8 << 20
        let db = try databaseWithLargeValues(1_000, cacheSize: cacheSize, smallKeys: 20_000, in: SimulatedFileSystem())
        let snapshot = try db.snapshot()
        for i in 0 ..< 20_000 { _ = try snapshot.get(Key(i).bytes, in: "small") }
        // 5 MB of values through a 2 MB budget.
        for i in 0 ..< 1_000 { #expect(try snapshot.get(Key(i).bytes, in: "big")?.first == UInt8(i % 251)) }
        let statistics = try db.statistics()
        #expect(statistics.cachedValueBytes <= cacheSize / 4)
        #expect(statistics.cachedValues < 1_000)
        let missesBefore = statistics.cacheMisses
        for i in 0 ..< 20_000 { _ = try snapshot.get(Key(i).bytes, in: "small") }
        #expect(try db.statistics().cacheMisses == missesBefore)
    }
    /// A file with a small tree "hot" (200 keys) and a large one "big" (20,000 keys, about
    /// a megabyte of leaves), closed, so that a new handle reads every page through its cache.
    func fileWithHotAndBigTrees(in fs: SimulatedFileSystem) throws {
        let db = try Database(path: "/s.strata", options: smallOptions(pageSize: 4096), fileSystem: fs)
        try db.write { tx in
            try tx.createTree("hot", ifNotExists: true)
            try tx.createTree("big", ifNotExists: true)
            for i in 0 ..< 200 { try tx.put([UInt8](repeating: 1, count: 40), forKey: Key(i).bytes, in: "hot") }
            for i in 0 ..< 20_000 { try tx.put([UInt8](repeating: 2, count: 40), forKey: Key(i).bytes, in: "big") }
        }
        try db.close()
    }

    func readHotKeys(_ snapshot: Snapshot) throws {
        for i in 0 ..< 200 { #expect(try snapshot.get(Key(i).bytes, in: "hot")?.first == 1) }
    }

    func scanAll(_ tree: String, _ snapshot: Snapshot) throws -> Int {
        var count = 0
        try snapshot.scan(tree) { _, _ in count += 1; return true }
        return count
    }

    @Test("a scan of a tree four times the cache leaves the pages lookups use in it")
    func scansDoNotEvictLookedUpPages() throws {
        let fs = SimulatedFileSystem()
        try fileWithHotAndBigTrees(in: fs)
        var options = smallOptions(pageSize: 4096)
        options.cacheSize = 256 << 10
        let db = try Database(path: "/s.strata", options: options, fileSystem: fs)
        let snapshot = try db.snapshot()
        try readHotKeys(snapshot)
        let missesBeforeScan = try db.statistics().cacheMisses
        #expect(try scanAll("big", snapshot) == 20_000)
        #expect(try db.statistics().cacheMisses > missesBeforeScan + 100)   // the scan read through the cache
        let missesAfterScan = try db.statistics().cacheMisses
        try readHotKeys(snapshot)
        #expect(try db.statistics().cacheMisses == missesAfterScan)
    }

    @Test("a tree that fits the cache is read from the file by its first scan only")
    func aScannedTreeThatFitsStaysCached() throws {
        let fs = SimulatedFileSystem()
        try fileWithHotAndBigTrees(in: fs)
        let db = try Database(path: "/s.strata", options: smallOptions(pageSize: 4096), fileSystem: fs)
        let snapshot = try db.snapshot()
        #expect(try scanAll("big", snapshot) == 20_000)
        let bytesRead = snapshot.store.bytesRead
        #expect(try scanAll("big", snapshot) == 20_000)
        #expect(snapshot.store.bytesRead == bytesRead)
    }
}
