import Foundation
import Testing
@testable import StrataEngine

@Suite("Compaction")
struct CompactionTests {
    @Test("compaction keeps the content identical and gives back the space of overwrites and deletes")
    func shrinksWithSameContent() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        var options = Database.Options()
        options.checkpointLogBytes = 64 * 1024
        let db = try Database(path: directory.file(), options: options)
        for round in 0 ..< 20 {
            try db.write { tx in
                try tx.createTree("t", ifNotExists: true)
                for i in 0 ..< 500 { try tx.put([UInt8](repeating: UInt8(round), count: 100), forKey: Key(i).bytes, in: "t") }
                for i in stride(from: 0, to: 500, by: 3) where round == 19 { try tx.delete(Key(i).bytes, in: "t") }
            }
        }
        try db.checkpoint()
        let before = try allEntries(db.snapshot(), "t")
        let space = try db.analyzeSpace()
        #expect(space.deadBytes > space.liveBytes)
        let result = try db.compact()
        #expect(result.bytesAfter < result.bytesBefore / 4)
        #expect(try allEntries(db.snapshot(), "t").elementsEqual(before, by: ==))
        #expect(try db.analyzeSpace().deadBytes < 200)
        // The compacted file is complete on its own.
        try db.close()
        let reopened = try Database(path: directory.file())
        #expect(try allEntries(reopened.snapshot(), "t").elementsEqual(before, by: ==))
        #expect(try reopened.statistics().fileSize == result.bytesAfter)
        try reopened.close()
    }

    @Test("a snapshot taken before compaction keeps reading its own state from the old file")
    func readersSurviveCompaction() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let db = try Database(path: directory.file())
        try db.write { tx in
            try tx.createTree("t")
            for i in 0 ..< 2000 { try tx.put(Key(i).bytes, forKey: Key(i).bytes, in: "t") }
        }
        try db.checkpoint()
        let old = try db.snapshot()
        try db.write { tx in for i in 0 ..< 1000 { try tx.delete(Key(i).bytes, in: "t") } }
        try db.compact()
        // The old snapshot still sees all 2000 keys, reading pages of the replaced file.
        #expect(try allEntries(old, "t").count == 2000)
        #expect(try old.get(Key(5).bytes, in: "t") == Key(5).bytes)
        #expect(try db.snapshot().count(in: "t") == 1000)
        try db.write { tx in try tx.put([1], forKey: Key(5).bytes, in: "t") }
        #expect(try db.snapshot().get(Key(5).bytes, in: "t") == [1])
        try db.close()
    }

    @Test("a compaction interrupted before its rename is discarded on the next open")
    func leftoverCompactFileIsDiscarded() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file()
        let db = try Database(path: path)
        try db.write { tx in
            try tx.createTree("t")
            try tx.put([1], forKey: [1], in: "t")
        }
        try db.close()
        #expect(FileManager.default.createFile(atPath: path + ".compact", contents: Data("half-written".utf8)))
        let reopened = try Database(path: path)
        #expect(!FileManager.default.fileExists(atPath: path + ".compact"))
        #expect(try reopened.snapshot().get([1], in: "t") == [1])
        try reopened.close()
    }

    @Test("a power loss at any point of compaction leaves either the old or the new file, both complete")
    func powerLossDuringCompaction() throws {
        let states = NumberedWorkload.states(through: 30)
        for crashPoint in 1 ... 40 {
            var rng = SeededGenerator(seed: UInt64(crashPoint))
            let fs = SimulatedFileSystem()
            let db = try Database(path: "/k.strata", options: smallOptions(), fileSystem: fs)
            for n in 1 ... 30 { try NumberedWorkload.commit(n, to: db) }
            fs.crashAtOperation = fs.operationCount + crashPoint
            _ = try? db.compact()
            fs.powerLoss(using: &rng)
            let reopened = try Database(path: "/k.strata", options: smallOptions(), fileSystem: fs)
            #expect(try NumberedWorkload.content(of: reopened) == states[30], "crash point \(crashPoint)")
            #expect(!fs.exists("/k.strata.compact"))
        }
    }
}
