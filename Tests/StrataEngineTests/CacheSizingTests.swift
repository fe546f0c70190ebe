import Foundation
import Testing
@testable import StrataEngine

@Suite("The page cache's size")
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
}
