import Foundation
import Synchronization
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

    // MARK: Writers beside compaction

    /// Fills "bulk" with `count` entries (compaction reports progress every 4,096 copied, so
    /// a test can commit from its progress callback while the copy runs) and commits the
    /// numbered workload through `through`.
    private func filled(_ db: Database, bulk count: Int = 10_000, numbered through: Int) throws {
        try db.write { tx in
            try tx.createTree("bulk")
            for i in 0 ..< count { try tx.put(Key(i).bytes, forKey: Key(i).bytes, in: "bulk") }
        }
        for n in 1 ... through { try NumberedWorkload.commit(n, to: db) }
    }

    @Test("commits made while compaction copies are carried over into the new file, out-of-line values and new trees included")
    func commitsDuringCopyAreCarriedOver() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let db = try Database(path: directory.file(), options: smallOptions())
        try filled(db, numbered: 10)
        var committed = false
        let result = try db.compact { _, _ in
            guard !committed else { return }
            committed = true
            // 17 and 18 hold 700-byte values: out of line at this page size.
            for n in 11 ... 30 { try? NumberedWorkload.commit(n, to: db) }
            try? db.write { tx in
                try tx.createTree("late")
                try tx.put([7], forKey: [1], in: "late")
                try tx.delete(Key(3).bytes, in: "bulk")
            }
        }
        #expect(committed)
        #expect(result.commitsCarriedOver == 21)
        let states = NumberedWorkload.states(through: 30)
        #expect(try NumberedWorkload.content(of: db) == states[30])
        #expect(try db.snapshot().get([1], in: "late") == [7])
        #expect(try db.snapshot().count(in: "bulk") == 9_999)
        try db.close()
        let reopened = try Database(path: directory.file(), options: smallOptions())
        #expect(try NumberedWorkload.content(of: reopened) == states[30])
        #expect(try reopened.snapshot().get([1], in: "late") == [7])
        #expect(try reopened.snapshot().count(in: "bulk") == 9_999)
        try reopened.close()
    }

    /// One commit of 400 values of 800 bytes that do not compress (~320 KB of value frames),
    /// `blockValue(number, i)` under the keys (number, 0) … (number, 399) of `tree`.
    func commitBlock(numbered number: Int, entries: Int = 400, to db: Database, tree: String) throws {
        try db.write { tx in
            try tx.createTree(tree, ifNotExists: true)
            for i in 0 ..< entries { try tx.put(blockValue(number, i), forKey: Key(number, i).bytes, in: tree) }
        }
    }

    func blockValue(_ number: Int, _ i: Int) -> [UInt8] {
        var generator = SeededGenerator(seed: UInt64(number * 1000 + i))
        return generator.bytes(words: 100)
    }

    @Test("many commits during the copy are carried over in rounds beside the writers, then the rest while they wait")
    func manyCommitsAreCarriedOverInRounds() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let db = try Database(path: directory.file(), options: smallOptions())
        try filled(db, numbered: 1)
        var calls = 0
        // Over `Database.finalCarryOverBytes` of log at each of the two progress calls: the
        // first round runs beside the writers.
        let result = try db.compact { _, _ in
            calls += 1
            try? commitBlock(numbered: calls, to: db, tree: "rounds")
        }
        #expect(calls == 2)
        #expect(result.commitsCarriedOver == 2)
        #expect(try db.snapshot().count(in: "rounds") == 800)
        #expect(try db.snapshot().get(Key(2, 399).bytes, in: "rounds") == blockValue(2, 399))
        try db.close()
        let reopened = try Database(path: directory.file(), options: smallOptions())
        #expect(try reopened.snapshot().count(in: "rounds") == 800)
        try reopened.close()
    }

    /// Compacts `db` with no rounds beside the writers (as when a bulk load outpaces them),
    /// a writer committing `perHold` blocks of `entries` entries (800 bytes each) before each
    /// of the first `holds` holds, as a load does between them. More than a slice, they are
    /// carried by a slice's hold.
    func compactInSlices(_ db: Database, holds: Int = 10, perHold: Int = 1, entries: Int = 100) throws -> CompactionResult {
        var block = 0
        return try db.compactions.withLock { _ in
            try db.compactHoldingTurn(progress: nil, rounds: CarryOverRounds(maxRounds: 0), beforeEachHold: {
                guard block < holds * perHold else { return }
                for _ in 0 ..< perHold {
                    try? commitBlock(numbered: block, entries: entries, to: db, tree: "sliced")
                    block += 1
                }
            })
        }
    }

    /// A filled database whose log keeps its debug messages: each hold a compaction makes.
    func filledLoggingHolds(at path: String) throws -> (Database, CapturedLog) {
        let log = CapturedLog()
        var options = smallOptions()
        options.logger = log.logger
        let db = try Database(path: path, options: options)
        try filled(db, numbered: 1)
        return (db, log)
    }

    /// The holds `log` saw, as `CompactionHold.description`s.
    func holds(in log: CapturedLog) -> [String] {
        log.entries(at: .debug).filter { $0.message == "compaction held writers" }.compactMap { $0.metadata["hold"] }
    }

    @Test("commits writers make between the holds are carried in slices, each holding writers back, and none is lost")
    func restIsCarriedInSlices() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let (db, log) = try filledLoggingHolds(at: directory.file())
        let result = try compactInSlices(db)
        #expect(result.commitsCarriedOver == 10)
        let holds = holds(in: log)
        #expect(result.writerHolds == 11 && holds.count == 11)
        // A slice for each block, then the swap of nothing left.
        #expect(holds.dropLast().allSatisfy { $0.hasPrefix("slice of 1 commits") })
        #expect(holds.last?.hasPrefix("swap of 0 commits") == true)
        try db.close()
        let reopened = try Database(path: directory.file(), options: smallOptions())
        #expect(try reopened.snapshot().count(in: "sliced") == 1_000)
        #expect(try reopened.snapshot().get(Key(9, 99).bytes, in: "sliced") == blockValue(9, 99))
        #expect(try NumberedWorkload.content(of: reopened) == NumberedWorkload.states(through: 1)[1])
        try reopened.close()
    }

    /// The kilobytes each logged hold replayed ("replay N KB").
    func replayedKilobytes(_ hold: String) -> Int? {
        hold.firstMatch(of: /replay (\d+) KB/).flatMap { Int($0.1) }
    }

    @Test("a slice replays one commit of what it appended and leaves the rest to the pass beside the writers")
    func sliceReplaysOneCommit() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let (db, log) = try filledLoggingHolds(at: directory.file())
        // Two commits of ~40 KB before each hold.
        let result = try compactInSlices(db, holds: 5, perHold: 2, entries: 50)
        #expect(result.writerHolds == 6)
        let slices = holds(in: log).dropLast()
        #expect(slices.count == 5)
        for slice in slices {
            #expect(slice.hasPrefix("slice of 2 commits"))
            #expect(replayedKilobytes(slice).map { (38 ... 45).contains($0) } == true, "\(slice)")
        }
        try db.close()
        let reopened = try Database(path: directory.file(), options: smallOptions())
        #expect(try reopened.snapshot().count(in: "sliced") == 500)
        try reopened.close()
    }

    @Test("after 32 slices the passes beside the writers stop, each slice replays all it appended and a commit more, and the compaction ends")
    func slicesReplayWhatTheyAppendOnceTheyHaveNotCaughtUp() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let (db, log) = try filledLoggingHolds(at: directory.file())
        let result = try compactInSlices(db, holds: 40, perHold: 2, entries: 50)
        let slices = holds(in: log).dropLast()
        #expect(result.writerHolds == 41 && slices.count == 40)
        #expect(slices.prefix(SliceProgress.limit).allSatisfy { replayedKilobytes($0).map { $0 < 50 } == true })
        #expect(slices.dropFirst(SliceProgress.limit).allSatisfy { replayedKilobytes($0).map { $0 >= 76 } == true })
        try db.close()
        let reopened = try Database(path: directory.file(), options: smallOptions())
        #expect(try reopened.snapshot().count(in: "sliced") == 4_000)
        #expect(try reopened.snapshot().get(Key(79, 49).bytes, in: "sliced") == blockValue(79, 49))
        try reopened.close()
    }

    /// Compacts a filled database whose writer commits `entries` new records to "bulk", a
    /// tree the copy holds, just before the only hold: the swap carries them.
    func compactCarryingInTheSwap(_ options: Database.Options, at path: String, entries: Int) throws -> Database {
        let db = try Database(path: path, options: options)
        try filled(db, numbered: 1)
        var committed = false
        let result = try db.compactions.withLock { _ in
            try db.compactHoldingTurn(progress: nil, rounds: CarryOverRounds(maxRounds: 0), beforeEachHold: {
                guard !committed else { return }
                committed = true
                try? commitBlock(numbered: 50_000, entries: entries, to: db, tree: "bulk")
            })
        }
        #expect(result.writerHolds == 1 && result.commitsCarriedOver == 1)
        return db
    }

    @Test("the commits a hold carries go where the writers' writes go: the write buffer, which the writer takes over, reads through and merges, or the trees without one",
          arguments: [65_536, nil] as [Int?])
    func holdsReplayWhereTheWritersWrite(writeBufferEntries: Int?) throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        var options = smallOptions()
        options.writeBufferEntries = writeBufferEntries
        options.writeBufferIdleMerge = nil
        let db = try compactCarryingInTheSwap(options, at: directory.file(), entries: 10)
        let bulk = try #require(try db.statistics().trees.first { $0.name == "bulk" })
        #expect(bulk.bufferedWrites == (writeBufferEntries == nil ? 0 : 10) && bulk.entryCount == 10_010)
        #expect(try db.snapshot().get(Key(50_000, 9).bytes, in: "bulk") == blockValue(50_000, 9))
        try db.write { tx in try tx.put([1], forKey: Key(50_000, 0).bytes, in: "bulk") }
        try db.checkpoint()
        #expect(try db.statistics().trees.first { $0.name == "bulk" }?.bufferedWrites == 0)
        try db.close()
        let reopened = try Database(path: directory.file(), options: smallOptions())
        #expect(try reopened.snapshot().count(in: "bulk") == 10_010)
        #expect(try reopened.snapshot().get(Key(50_000, 0).bytes, in: "bulk") == [1])
        #expect(try reopened.snapshot().get(Key(50_000, 9).bytes, in: "bulk") == blockValue(50_000, 9))
        try reopened.close()
    }

    @Test("commits carried beside the writers are merged from the write buffer into the trees once past the writers' limit")
    func roundsMergeDueBuffers() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        var options = smallOptions()
        options.writeBufferEntries = 64
        options.writeBufferIdleMerge = nil
        let db = try Database(path: directory.file(), options: options)
        try filled(db, numbered: 1)
        // 1,600 new records of "bulk" in the first round: past the 1,250 a buffer of a
        // 10,000-entry tree holds.
        var calls = 0
        let result = try db.compact { _, _ in
            calls += 1
            for block in 0 ..< 2 { try? commitBlock(numbered: 2 * calls + block, to: db, tree: "bulk") }
        }
        #expect(calls == 2 && result.commitsCarriedOver == 4)
        let bulk = try #require(try db.statistics().trees.first { $0.name == "bulk" })
        #expect(bulk.bufferedWrites == 0 && bulk.entryCount == 11_600)
        try db.close()
        let reopened = try Database(path: directory.file(), options: smallOptions())
        #expect(try reopened.snapshot().count(in: "bulk") == 11_600)
        #expect(try reopened.snapshot().get(Key(5, 399).bytes, in: "bulk") == blockValue(5, 399))
        try reopened.close()
    }

    @Test("overwrites and deletes of copied keys, committed in rounds and between holds, read back as a model says",
          arguments: [64, nil] as [Int?])
    func carriedOverwritesAndDeletesMatchAModel(writeBufferEntries: Int?) throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        var options = smallOptions()
        options.writeBufferEntries = writeBufferEntries
        options.writeBufferIdleMerge = nil
        let db = try Database(path: directory.file(), options: options)
        try filled(db, numbered: 1)
        var model = Dictionary(uniqueKeysWithValues: (0 ..< 10_000).map { (Key($0).bytes, Key($0).bytes) })
        var generator = SeededGenerator(seed: 52)
        // 200 writes a commit, a third of them deletes, to keys the copy holds and new ones.
        func commitRandomWrites() {
            try? db.write { tx in
                for _ in 0 ..< 200 {
                    let key = Key(Int(generator.next() % 12_000)).bytes
                    if generator.next() % 3 == 0 {
                        _ = try tx.delete(key, in: "bulk")
                        model[key] = nil
                    } else {
                        let value = generator.bytes(words: 4)
                        try tx.put(value, forKey: key, in: "bulk")
                        model[key] = value
                    }
                }
            }
        }
        var holds = 0
        _ = try db.compactions.withLock { _ in
            try db.compactHoldingTurn(progress: { _, _ in for _ in 0 ..< 20 { commitRandomWrites() } }, beforeEachHold: {
                holds += 1
                if holds <= 10 { for _ in 0 ..< 3 { commitRandomWrites() } }
            })
        }
        func content(_ db: Database) throws -> [[UInt8]: [UInt8]] {
            Dictionary(uniqueKeysWithValues: try allEntries(db.snapshot(), "bulk"))
        }
        #expect(try content(db) == model)
        #expect(try db.snapshot().count(in: "bulk") == model.count)
        let probe = try #require(model.keys.first)
        #expect(try db.snapshot().get(probe, in: "bulk") == model[probe])
        try db.close()
        let reopened = try Database(path: directory.file(), options: smallOptions())
        #expect(try content(reopened) == model)
        #expect(try reopened.snapshot().count(in: "bulk") == model.count)
        try reopened.close()
    }

    @Test("a slice replays one commit while passes beside the writers run, then what it appended and one more")
    func sliceProgressReplaysMoreAfterItsLimit() {
        var slices = SliceProgress()
        for _ in 0 ..< SliceProgress.limit {
            #expect(slices.replaysBeside)
            #expect(slices.replayBytes(appended: 500_000) == 1)
        }
        #expect(!slices.replaysBeside)
        #expect(slices.replayBytes(appended: 500_000) == 500_001)
    }

    @Test("slices do not each wait for a sync of the new file: it is synced beside the writers once a mebibyte is carried")
    func slicesShareSyncs() throws {
        let fs = SimulatedFileSystem()
        let db = try Database(path: "/s.strata", options: smallOptions(), fileSystem: fs)
        try filled(db, numbered: 1)
        let syncs = Atomic<Int>(0)
        @Sendable func countSyncs() {
            syncs.add(1, ordering: .relaxed)
            fs.beforeNextSync = countSyncs
        }
        fs.beforeNextSync = countSyncs
        let result = try compactInSlices(db)
        #expect(result.writerHolds == 11)
        // The copy's two, the blocks' own (one each), at most two beside the writers for
        // the ten slices' megabyte, and the swap's: a sync before each slice was ten more.
        #expect(syncs.load(ordering: .relaxed) <= 2 + 10 + 2 + 1)
        try db.close()
        let reopened = try Database(path: "/s.strata", options: smallOptions(), fileSystem: fs)
        #expect(try reopened.snapshot().count(in: "sliced") == 1_000)
        try reopened.close()
    }

    @Test("the longest hold is the writers' pause, says what it was for, and its parts fit in it")
    func longestHoldIsExplained() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let db = try Database(path: directory.file(), options: smallOptions())
        try filled(db, numbered: 1)
        let result = try compactInSlices(db)
        let hold = try #require(result.longestHold)
        #expect(hold.duration == result.writerPause)
        #expect(hold.reading + hold.writing + hold.replaying + hold.syncing + hold.renaming <= hold.duration)
        switch hold.kind {
        case .slice:
            // A slice appends what the writers added (more than a slice) and replays a commit
            // of it; it neither syncs nor renames.
            #expect(hold.commitsCarried >= 1 && hold.bytesCarried >= CarryOverRounds.sliceBytes)
            #expect(hold.bytesReplayed > 0)
            #expect(hold.syncing == .zero && hold.renaming == .zero)
        case .swap:
            // The swap carries what the slices left (at most a slice) and syncs the new file.
            #expect(hold.bytesCarried <= CarryOverRounds.sliceBytes)
            #expect(hold.syncing > .zero)
        }
        try db.close()
    }

    @Test("a slow sync of the new file in the swap shows in the longest hold as its sync")
    func slowSwapSyncIsExplained() throws {
        let fs = SimulatedFileSystem()
        let db = try Database(path: "/s.strata", options: smallOptions(), fileSystem: fs)
        try filled(db, numbered: 1)
        // Every sync takes 20 ms more: the copy's and the preallocation's beside the writers,
        // and the swap's, the only one writers wait for.
        @Sendable func slowSync() {
            Thread.sleep(forTimeInterval: 0.02)
            fs.beforeNextSync = slowSync
        }
        fs.beforeNextSync = slowSync
        let result = try db.compact()
        fs.beforeNextSync = nil
        let hold = try #require(result.longestHold)
        #expect(result.writerHolds == 1)
        #expect(hold.kind == .swap && hold.commitsCarried == 0)
        #expect(hold.syncing >= .milliseconds(20))
        #expect(hold.syncing + hold.renaming <= hold.duration)
        #expect(hold.description.hasPrefix("swap of 0 commits"))
        try db.close()
    }

    @Test("a writer thread committing all through two compactions loses no acknowledged commit")
    func concurrentWriterLosesNothing() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let db = try Database(path: directory.file(), options: smallOptions())
        try filled(db, numbered: 1)
        let stop = Atomic<Bool>(false)
        let acknowledged = Atomic<Int>(0)
        let writer = Thread {
            var n = 0
            while !stop.load(ordering: .relaxed) {
                n += 1
                do {
                    try db.write { tx in
                        try tx.createTree("racing", ifNotExists: true)
                        try tx.put(Key(n).bytes, forKey: Key(n).bytes, in: "racing")
                    }
                } catch { break }
                acknowledged.store(n, ordering: .releasing)
            }
        }
        writer.start()
        try db.compact()
        try db.compact()
        stop.store(true, ordering: .relaxed)
        while !writer.isFinished { Thread.sleep(forTimeInterval: 0.001) }
        let count = acknowledged.load(ordering: .acquiring)
        #expect(count > 0)
        try db.close()
        let reopened = try Database(path: directory.file(), options: smallOptions())
        #expect(try reopened.snapshot().count(in: "racing") == UInt64(count))
        #expect(try reopened.snapshot().get(Key(count).bytes, in: "racing") == Key(count).bytes)
        try reopened.close()
    }

    @Test("closing the handle stops a compaction while it copies; the file keeps every commit")
    func closingStopsCompaction() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file()
        let db = try Database(path: path, options: smallOptions())
        try filled(db, numbered: 10)
        #expect(throws: StrataError.closed(path: path)) {
            try db.compact { _, _ in try? db.close() }
        }
        #expect(!FileManager.default.fileExists(atPath: path + ".compact"))
        let reopened = try Database(path: path, options: smallOptions())
        #expect(try NumberedWorkload.content(of: reopened) == NumberedWorkload.states(through: 10)[10])
        #expect(try reopened.snapshot().count(in: "bulk") == 10_000)
        try reopened.close()
    }

    @Test("a power loss at any point of a compaction that carries commits over keeps every acknowledged commit")
    func powerLossWhileCarryingOver() throws {
        let states = NumberedWorkload.states(through: 40)
        func run(crashAfter crashPoint: Int?, seed: UInt64) throws -> (operations: Int, acknowledged: Int, fs: SimulatedFileSystem) {
            var rng = SeededGenerator(seed: seed)
            let fs = SimulatedFileSystem()
            let db = try Database(path: "/c.strata", options: smallOptions(), fileSystem: fs)
            try filled(db, bulk: 5_000, numbered: 30)
            let start = fs.operationCount
            if let crashPoint { fs.crashAtOperation = start + crashPoint }
            var acknowledged = 30
            _ = try? db.compact { _, _ in
                for n in acknowledged + 1 ... 40 {
                    guard (try? NumberedWorkload.commit(n, to: db)) != nil else { return }
                    acknowledged = n
                }
            }
            let operations = fs.operationCount - start
            if crashPoint != nil { fs.powerLoss(using: &rng) }
            return (operations, acknowledged, fs)
        }
        let whole = try run(crashAfter: nil, seed: 0)
        #expect(whole.acknowledged == 40)
        for crashPoint in 1 ... whole.operations {
            let crashed = try run(crashAfter: crashPoint, seed: UInt64(crashPoint))
            let reopened = try Database(path: "/c.strata", options: smallOptions(), fileSystem: crashed.fs)
            let content = try NumberedWorkload.content(of: reopened)
            // Every acknowledged commit is there; the one in flight may be too.
            let found = states.indices.filter { states[$0] == content }
            #expect(found.contains(crashed.acknowledged) || found.contains(crashed.acknowledged + 1), "crash point \(crashPoint) of \(whole.operations)")
            #expect(try reopened.snapshot().count(in: "bulk") == 5_000)
            #expect(!crashed.fs.exists("/c.strata.compact"))
        }
    }

    /// A file with 2,000 entries and as many overwritten, checkpointed (so a handle opening
    /// it reads its pages from the file), and a handle on it.
    private func replaceableFile(in directory: TemporaryDirectory) throws -> Database {
        let db = try Database(path: directory.file())
        for round in 0 ..< 2 {
            try db.write { tx in
                try tx.createTree("t", ifNotExists: true)
                for i in 0 ..< 2000 { try tx.put([UInt8](repeating: UInt8(round), count: 200), forKey: Key(i).bytes, in: "t") }
            }
        }
        try db.checkpoint()
        return db
    }

    @Test("the file a compaction replaced is truncated away in steps once nothing reads it any more")
    func replacedFileIsReleasedInSteps() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let db = try replaceableFile(in: directory)
        var old: Snapshot? = try db.snapshot()
        try db.compact()
        #expect(try allEntries(old!, "t").count == 2000)
        old = nil
        SpaceRelease.waitUntilIdle()
        #expect(SpaceRelease.released.withLock { $0.contains(directory.file()) })
        try db.close()
    }

    @Test("a replaced file another handle still has open is closed whole, never truncated under it")
    func replacedFileOpenElsewhereIsLeftWhole() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let db = try replaceableFile(in: directory)
        var readOnly = Database.Options()
        readOnly.readOnly = true
        let reader = try Database(path: directory.file(), options: readOnly)
        let seen = try reader.snapshot()
        try db.compact()
        SpaceRelease.waitUntilIdle()
        // The writer let go of the old file while the reader held it: it was only closed,
        // and the reader's snapshot reads its pages from it.
        #expect(!SpaceRelease.released.withLock { $0.contains(directory.file()) })
        #expect(try allEntries(seen, "t").map(\.1) == Array(repeating: [UInt8](repeating: 1, count: 200), count: 2000))
        try reader.close()
        try db.close()
    }
}
