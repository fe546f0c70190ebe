import Foundation
import Testing
@testable import StrataEngine

@Suite("Opening files: versions, foreign files, cost of open")
struct OpenAndFormatTests {
    func makeFile(_ fs: SimulatedFileSystem, keys: Int, checkpoint: Bool = true) throws {
        var options = smallOptions(pageSize: 4096)
        options.checkpointOnClose = checkpoint
        let db = try Database(path: "/o.strata", options: options, fileSystem: fs)
        for chunk in Array(0 ..< keys).chunked(5000) {
            try db.write { tx in
                try tx.createTree("t", ifNotExists: true)
                for i in chunk { try tx.put([UInt8](repeating: 1, count: 40), forKey: Key(i).bytes, in: "t") }
            }
        }
        try db.close()
    }

    @Test("bytes read at open do not grow with the number of checkpointed keys")
    func openCostIsBoundedByTheLogTail() throws {
        var costs: [UInt64] = []
        for keys in [1000, 200_000] {
            let fs = SimulatedFileSystem()
            try makeFile(fs, keys: keys)
            let db = try Database(path: "/o.strata", options: smallOptions(pageSize: 4096), fileSystem: fs)
            let stats = try db.statistics()
            #expect(stats.commitsReplayedAtOpen == 0)
            #expect(try db.snapshot().count(in: "t") == keys)
            costs.append(stats.bytesReadAtOpen)
        }
        #expect(costs[0] < 2048)
        #expect(costs[1] <= costs[0] + 16)
    }

    @Test("without a checkpoint, open replays the log tail and reads about its size")
    func openReplaysTheLogTail() throws {
        let fs = SimulatedFileSystem()
        try makeFile(fs, keys: 20_000, checkpoint: false)
        let size = UInt64(fs.contents(of: "/o.strata").count)
        let db = try Database(path: "/o.strata", options: smallOptions(pageSize: 4096), fileSystem: fs)
        let stats = try db.statistics()
        #expect(stats.commitsReplayedAtOpen == 4)
        #expect(stats.bytesReadAtOpen >= size - FileHeader.dataStart)
        #expect(stats.bytesReadAtOpen <= size + 1024)
        #expect(try db.snapshot().count(in: "t") == 20_000)
    }

    func rewriteVersions(_ fs: SimulatedFileSystem, read: UInt16, write: UInt16) throws {
        var image = fs.contents(of: "/o.strata")
        var header = try FileHeader.decode(image, path: "/o.strata")
        header.readVersion = read
        header.writeVersion = write
        image.replaceSubrange(0 ..< FileHeader.size, with: header.encoded())
        fs.setContents(image, of: "/o.strata")
    }

    @Test("a file from a newer format is refused, naming both versions")
    func newerReadVersionIsRefused() throws {
        let fs = SimulatedFileSystem()
        try makeFile(fs, keys: 10)
        try rewriteVersions(fs, read: FileHeader.formatVersion + 1, write: FileHeader.formatVersion + 1)
        let newer = FileHeader.formatVersion + 1
        #expect(throws: StrataError.unsupportedFormat(path: "/o.strata", fileReadVersion: newer, fileWriteVersion: newer, supported: FileHeader.formatVersion)) {
            try Database(path: "/o.strata", options: Database.Options(readOnly: true), fileSystem: fs)
        }
        #expect(StrataError.unsupportedFormat(path: "f", fileReadVersion: 2, fileWriteVersion: 2, supported: 1).description.contains("read version 2"))
    }

    @Test("a file with a newer write version opens read-only only")
    func newerWriteVersionIsReadOnly() throws {
        let fs = SimulatedFileSystem()
        try makeFile(fs, keys: 10)
        try rewriteVersions(fs, read: FileHeader.formatVersion, write: FileHeader.formatVersion + 1)
        #expect(throws: StrataError.formatRequiresReadOnly(path: "/o.strata", fileWriteVersion: FileHeader.formatVersion + 1, supported: FileHeader.formatVersion)) {
            try Database(path: "/o.strata", options: Database.Options(), fileSystem: fs)
        }
        let db = try Database(path: "/o.strata", options: Database.Options(readOnly: true), fileSystem: fs)
        #expect(try db.snapshot().count(in: "t") == 10)
    }

    @Test("a file that is not a Strata database is refused and left untouched")
    func foreignFileIsUntouched() throws {
        let fs = SimulatedFileSystem()
        for contents in [Array("just some text".utf8), [UInt8](repeating: 0x41, count: 10_000)] {
            fs.setContents(contents, of: "/o.strata")
            #expect(throws: StrataError.notAStrataFile(path: "/o.strata")) {
                try Database(path: "/o.strata", options: Database.Options(), fileSystem: fs)
            }
            #expect(fs.contents(of: "/o.strata") == contents)
        }
    }

    @Test("opening a missing file read-only fails; opening it for writing creates it")
    func missingFile() throws {
        let fs = SimulatedFileSystem()
        #expect(throws: StrataError.self) { try Database(path: "/new.strata", options: Database.Options(readOnly: true), fileSystem: fs) }
        #expect(!fs.exists("/new.strata"))
        let db = try Database(path: "/new.strata", options: Database.Options(), fileSystem: fs)
        #expect(try db.snapshot().treeNames.isEmpty)
        #expect(fs.contents(of: "/new.strata").count == Int(FileHeader.dataStart))
    }

    @Test("transactions: rollback discards, commit publishes, trees are created and dropped")
    func transactionBasics() throws {
        let fs = SimulatedFileSystem()
        let db = try Database(path: "/o.strata", options: smallOptions(), fileSystem: fs)
        let tx = try db.beginWrite()
        try tx.createTree("a")
        try tx.put([1], forKey: [1], in: "a")
        #expect(try tx.get([1], in: "a") == [1])
        tx.rollback()
        #expect(throws: StrataError.transactionFinished) { try tx.put([1], forKey: [2], in: "a") }
        #expect(try !db.snapshot().hasTree("a"))
        try db.write { tx in
            try tx.createTree("a")
            #expect(throws: StrataError.treeAlreadyExists("a")) { try tx.createTree("a") }
            #expect(throws: StrataError.treeNotFound("b")) { try tx.put([1], forKey: [1], in: "b") }
            #expect(throws: StrataError.invalidTreeName("")) { try tx.createTree("") }
            try tx.put([1], forKey: [1], in: "a")
        }
        try db.write { tx in try tx.dropTree("a") }
        #expect(try db.snapshot().treeNames == [])
        try db.close()
        #expect(throws: StrataError.closed(path: "/o.strata")) { try db.snapshot() }
        let reopened = try Database(path: "/o.strata", options: smallOptions(), fileSystem: fs)
        #expect(try reopened.snapshot().treeNames == [])
    }

    @Test("a committed transaction still reads what it committed, after a checkpoint written in its commit too")
    func committedTransactionReadsItsCommit() throws {
        // A checkpoint at every commit: the commit hands the transaction the checkpointed
        // trees in place of the ones it built.
        var options = smallOptions(checkpointLogBytes: 1)
        options.backgroundCheckpoints = .never
        let db = try Database(path: "/c.strata", options: options, fileSystem: SimulatedFileSystem())
        for round in 0 ..< 3 {
            let tx = try db.beginWrite()
            try tx.createTree("a", ifNotExists: true)
            for i in 0 ..< 200 { try tx.put([UInt8(round)], forKey: Key(i).bytes, in: "a") }
            try tx.commit()
            #expect(try db.statistics().checkpointSequence == db.statistics().commitSequence, "the commit checkpointed")
            #expect(try tx.get(Key(199).bytes, in: "a") == [UInt8(round)])
            #expect(try tx.count(in: "a") == 200)
        }
        #expect(try allEntries(db.snapshot(), "a").allSatisfy { $0.1 == [2] })
    }

    @Test("snapshots are isolated from later commits and readable from many threads at once")
    func concurrentReaders() async throws {
        let fs = SimulatedFileSystem()
        let db = try Database(path: "/o.strata", options: smallOptions(), fileSystem: fs)
        try db.write { tx in
            try tx.createTree("t")
            for i in 0 ..< 2000 { try tx.put(Key(i).bytes, forKey: Key(i).bytes, in: "t") }
        }
        let snapshot = try db.snapshot()
        try await withThrowingTaskGroup(of: Int.self) { group in
            group.addTask {
                for i in 0 ..< 2000 { try db.write { tx in _ = try tx.delete(Key(i).bytes, in: "t") } }
                return -1
            }
            for _ in 0 ..< 4 {
                group.addTask {
                    var total = 0
                    for _ in 0 ..< 20 { total += try allEntries(snapshot, "t").count }
                    return total
                }
            }
            for try await total in group where total >= 0 { #expect(total == 20 * 2000) }
        }
        #expect(try db.snapshot().count(in: "t") == 0)
    }
}
