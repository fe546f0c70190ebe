import Foundation
import Testing
@testable import StrataEngine

/// Values over a quarter of a page: a commit writes each once, to a value frame of its own
/// before its log frame (format 2, FORMAT.md §5.1); a format 1 file keeps carrying them in
/// its log until compaction rewrites it.
@Suite("Large values are written once")
struct LargeValueTests {
    static func randomBytes(_ count: Int, seed: UInt64) -> [UInt8] {
        var rng = SeededGenerator(seed: seed)
        return (0 ..< count).map { _ in UInt8.random(in: 0 ... 255, using: &rng) }
    }

    @Test("a commit writes a large value to a value frame before its log frame, and a checkpoint references it")
    func writtenOnceWithTheCommit() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file()
        let value = Self.randomBytes(5_000, seed: 1)   // incompressible: its frame holds every byte
        let db = try Database(path: path)
        try db.write { tx in
            try tx.createTree("t")
            try tx.put(value, forKey: Key(1).bytes, in: "t")
        }
        let committed = try allFrames(ofFileAt: path)
        #expect(committed.map(\.type) == ["value", "log"])
        #expect(committed[0].rawLength == 5_000)
        #expect(committed[1].rawLength < 200, "the log frame names the value frame instead of holding the value")
        try db.checkpoint()
        #expect(try allFrames(ofFileAt: path).filter { $0.type == "value" }.count == 1, "the checkpoint wrote no second copy")
        try db.close()
        let reopened = try Database(path: path)
        #expect(try reopened.snapshot().get(Key(1).bytes, in: "t") == value)
        try reopened.close()
        #expect(try Inspector(path: path).verify().isEmpty)
    }

    @Test("after a crash the log's references to value frames are replayed")
    func replayedAfterACrash() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file()
        let db = try openWithoutCheckpointOnClose(path)
        try db.write { tx in try tx.createTree("t") }
        for n in 1 ... 20 { try db.write { tx in try tx.put(Self.randomBytes(2_000 + n, seed: UInt64(n)), forKey: Key(n).bytes, in: "t") } }
        try db.close()
        let reopened = try Database(path: path)
        #expect(try reopened.statistics().commitsReplayedAtOpen == 21)
        for n in 1 ... 20 { #expect(try reopened.snapshot().get(Key(n).bytes, in: "t") == Self.randomBytes(2_000 + n, seed: UInt64(n))) }
    }

    @Test("a transaction reads its large values before they are committed; a rollback leaves none behind")
    func uncommittedValuesAndRollback() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let db = try Database(path: directory.file())
        try db.write { tx in try tx.createTree("t") }
        let first = Self.randomBytes(3_000, seed: 2), second = Self.randomBytes(3_000, seed: 3)
        let tx = try db.beginWrite()
        try tx.put(first, forKey: Key(1).bytes, in: "t")
        #expect(try tx.get(Key(1).bytes, in: "t") == first)
        tx.rollback()
        // The next transaction lays its value frame out at the same offset.
        try db.write { tx in try tx.put(second, forKey: Key(2).bytes, in: "t") }
        let snapshot = try db.snapshot()
        #expect(try snapshot.get(Key(1).bytes, in: "t") == nil)
        #expect(try snapshot.get(Key(2).bytes, in: "t") == second)
    }

    @Test("a format 1 file keeps its large values in the log and stays format 1; compaction makes it format 2")
    func formatOneFilesStayReadableByOlderCode() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file()
        try Database(path: path).close()
        try setFormatVersions(ofFileAt: path, read: 1, write: 1)

        let value = Self.randomBytes(5_000, seed: 4)
        let db = try Database(path: path)
        try db.write { tx in
            try tx.createTree("t")
            try tx.put(value, forKey: Key(1).bytes, in: "t")
        }
        let frames = try allFrames(ofFileAt: path)
        #expect(frames.map(\.type) == ["log"])
        #expect(frames[0].rawLength > 5_000, "the log frame holds the value")
        try db.close()
        let info = try Inspector(path: path).info()
        #expect((info.readVersion, info.writeVersion) == (1, 1))
        let reopened = try Database(path: path)
        #expect(try reopened.snapshot().get(Key(1).bytes, in: "t") == value)
        try reopened.compact()
        try reopened.close()
        #expect(try Inspector(path: path).info().writeVersion == FileHeader.formatVersion)
        #expect(try Database(path: path).snapshot().get(Key(1).bytes, in: "t") == value)
    }
}
