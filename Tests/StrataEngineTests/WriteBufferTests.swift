import Foundation
import Synchronization
import Testing
@testable import StrataEngine

/// Buffered writes (`Database.Options.writeBufferEntries`, docs/WRITE-BUFFER.md): what a
/// reader sees through pending writes, sorted runs and the tree, and that checkpoints,
/// reopens, rollbacks and the verifier see the same. The model-based and power-loss suites
/// run with buffering too.
@Suite("Write buffer")
struct WriteBufferTests {
    /// `background`: merges run beside the writer (the default) rather than in the commit
    /// that filled the buffer. `idleMerge`: the buffers are merged that long after commits
    /// stop; off by default, since most of these tests look at what the buffer holds.
    static func options(buffer: Int, background: Bool = true, idleMerge: Duration? = nil) -> Database.Options {
        var options = smallOptions(pageSize: 512)
        options.writeBufferEntries = buffer
        options.mergesWriteBufferInBackground = background
        options.writeBufferIdleMerge = idleMerge
        return options
    }

    static func key(_ n: Int) -> [UInt8] { Key(n).bytes }
    static func value(_ n: Int, _ version: Int = 0) -> [UInt8] { Array("v\(n).\(version)".utf8) }

    /// A database whose tree "t" holds 0, 2, 4, … 398 in the tree proper (written by one
    /// transaction, which owns and changes its leaves in place), ready for buffered writes.
    static func seeded(buffer: Int = 1_000_000, background: Bool = true, idleMerge: Duration? = nil) throws -> Database {
        let db = try Database.inMemory(options: options(buffer: buffer, background: background, idleMerge: idleMerge))
        try db.write { tx in
            try tx.createTree("t")
            for n in stride(from: 0, to: 400, by: 2) { try tx.put(value(n), forKey: key(n), in: "t") }
        }
        return db
    }

    @Test("a put into a leaf the committed tree shares waits in the buffer, and reads see it")
    func bufferedPutIsRead() throws {
        let db = try Self.seeded()
        try db.write { tx in try tx.put(Self.value(3), forKey: Self.key(3), in: "t") }
        let tree = try db.statistics().trees.first { $0.name == "t" }!
        #expect(tree.bufferedWrites == 1 && tree.bufferedRuns == 1)
        let snapshot = try db.snapshot()
        #expect(try snapshot.get(Self.key(3), in: "t") == Self.value(3))
        #expect(try snapshot.count(in: "t") == 201)
    }

    @Test("a committed buffered delete hides the key the tree still holds, from lookups, cursors and counts")
    func bufferedDeleteHidesTheTreeEntry() throws {
        let db = try Self.seeded()
        try db.write { tx in _ = try tx.delete(Self.key(10), in: "t") }
        let snapshot = try db.snapshot()
        #expect(try db.statistics().trees[0].bufferedWrites == 1)
        #expect(try snapshot.get(Self.key(10), in: "t") == nil)
        #expect(try !snapshot.contains(Self.key(10), in: "t"))
        #expect(try !allEntries(snapshot, "t").contains { $0.0 == Self.key(10) })
        #expect(try snapshot.count(in: "t") == 199)
    }

    @Test("a transaction reads its own pending writes, deletes included")
    func transactionReadsItsPendingWrites() throws {
        let db = try Self.seeded()
        let tx = try db.beginWrite()
        try tx.put(Self.value(5), forKey: Self.key(5), in: "t")
        try tx.put(Self.value(4, 1), forKey: Self.key(4), in: "t")
        #expect(try tx.delete(Self.key(6), in: "t"))
        #expect(try tx.get(Self.key(5), in: "t") == Self.value(5))
        #expect(try tx.get(Self.key(4), in: "t") == Self.value(4, 1))
        #expect(try tx.get(Self.key(6), in: "t") == nil)
        #expect(try !tx.delete(Self.key(6), in: "t"), "deleting a key a pending delete hides finds nothing")
        #expect(try tx.count(in: "t") == 200)
        tx.rollback()
    }

    @Test("insert refuses a key the buffer holds, and takes one a buffered delete removed")
    func insertConsultsTheBuffer() throws {
        let db = try Self.seeded()
        try db.write { tx in
            try tx.put(Self.value(7), forKey: Self.key(7), in: "t")
            _ = try tx.delete(Self.key(8), in: "t")
        }
        let tx = try db.beginWrite()
        #expect(try !tx.insert(Self.value(7, 1), forKey: Self.key(7), in: "t"))
        #expect(try tx.insert(Self.value(8, 1), forKey: Self.key(8), in: "t"))
        try tx.commit()
        let snapshot = try db.snapshot()
        #expect(try snapshot.get(Self.key(7), in: "t") == Self.value(7))
        #expect(try snapshot.get(Self.key(8), in: "t") == Self.value(8, 1))
        #expect(try snapshot.count(in: "t") == 201)
    }

    @Test("a snapshot taken before a buffered commit does not see it")
    func snapshotsAreIsolatedFromLaterRuns() throws {
        let db = try Self.seeded()
        let before = try db.snapshot()
        try db.write { tx in
            try tx.put(Self.value(9), forKey: Self.key(9), in: "t")
            _ = try tx.delete(Self.key(10), in: "t")
        }
        #expect(try before.get(Self.key(9), in: "t") == nil)
        #expect(try before.get(Self.key(10), in: "t") == Self.value(10))
        #expect(try allEntries(before, "t").count == 200)
    }

    @Test("a rollback discards the buffered writes")
    func rollbackDiscardsBufferedWrites() throws {
        let db = try Self.seeded()
        let tx = try db.beginWrite()
        try tx.put(Self.value(11), forKey: Self.key(11), in: "t")
        tx.rollback()
        #expect(try db.snapshot().get(Self.key(11), in: "t") == nil)
        #expect(try db.statistics().trees.first { $0.name == "t" }!.bufferedWrites == 0)
    }

    @Test("the buffer is merged into the tree once it passes its limit (twice it, with merges beside the writer), and the count stays exact",
          arguments: [false, true])
    func bufferMergesAtItsLimit(background: Bool) throws {
        let db = try Self.seeded(buffer: 16, background: background)
        var model = Dictionary(uniqueKeysWithValues: stride(from: 0, to: 400, by: 2).map { (Self.key($0), Self.value($0)) })
        for commit in 0 ..< 20 {
            try db.write { tx in
                for n in stride(from: commit * 7 % 13, to: 400, by: 37) {
                    if n % 3 == 0 {
                        _ = try tx.delete(Self.key(n), in: "t")
                        model[Self.key(n)] = nil
                    } else {
                        try tx.put(Self.value(n, commit), forKey: Self.key(n), in: "t")
                        model[Self.key(n)] = Self.value(n, commit)
                    }
                }
            }
            let tree = try db.statistics().trees.first { $0.name == "t" }!
            // Beside the writer, a merge runs while the writer fills a second buffer's worth.
            #expect(tree.bufferedWrites <= (background ? 2 : 1) * max(16, tree.entryCount / 8), "merged once past its limit")
            #expect(tree.entryCount == model.count)
        }
        try Self.expectTree(of: db, holds: model)
    }

    /// Commits 40 new keys to the seeded tree "t" (odd ones from `first`), past the buffer
    /// limit of a tree of 200 entries, max(16, 200 / 8): the commit starts a merge beside
    /// the writer.
    static func commitPastTheLimit(_ db: Database, from first: Int, model: inout [[UInt8]: [UInt8]]) throws {
        try commit(Array(stride(from: first, to: first + 80, by: 2)), to: db, model: &model)
    }

    /// Expects tree "t" of `db`'s latest state to hold exactly `model`, in key order.
    static func expectTree(of db: Database, holds model: [[UInt8]: [UInt8]], sourceLocation: SourceLocation = #_sourceLocation) throws {
        expect(try allEntries(db.snapshot(), "t"), match: model, sourceLocation: sourceLocation)
    }

    /// Expects `entries`, as a scan read them, to be exactly `model`, in key order.
    static func expect(_ entries: [([UInt8], [UInt8])], match model: [[UInt8]: [UInt8]], _ comment: Comment? = nil,
                       sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(entries.map(\.0) == model.keys.sorted { $0.lexicographicallyPrecedes($1) }, comment, sourceLocation: sourceLocation)
        #expect(entries.allSatisfy { model[$0.0] == $0.1 }, comment, sourceLocation: sourceLocation)
    }

    static func seededModel() -> [[UInt8]: [UInt8]] {
        Dictionary(uniqueKeysWithValues: stride(from: 0, to: 400, by: 2).map { (key($0), value($0)) })
    }

    @Test("a merge beside the writer is put in place by the next commit, which keeps what was written since")
    func backgroundMergeIsInstalledByTheNextCommit() throws {
        let db = try Self.seeded(buffer: 16)
        var model = Self.seededModel()
        try Self.commitPastTheLimit(db, from: 1, model: &model)
        db.waitForWriteBufferMerge()
        #expect(try db.statistics().writeBufferMerges == 1)
        #expect(try db.statistics().trees[0].bufferedWrites == 40, "finished, not yet in place")

        try db.write { tx in
            for n in [81, 83, 85] {
                try tx.put(Self.value(n), forKey: Self.key(n), in: "t")
                model[Self.key(n)] = Self.value(n)
            }
        }
        let tree = try db.statistics().trees[0]
        #expect(tree.bufferedWrites == 3, "what the merge took gave way to the merged tree; what the tail gained since stays")
        #expect(tree.bufferedRuns == 1)
        #expect(tree.entryCount == model.count)
        try Self.expectTree(of: db, holds: model)
        #expect(try Inspector(db).verify().isEmpty)
    }

    @Test("a transaction that fills the buffer to twice its limit installs the finished merge and keeps its own pending writes")
    func fullBufferInstallsTheFinishedMerge() throws {
        let db = try Self.seeded(buffer: 16)
        var model = Self.seededModel()
        try Self.commitPastTheLimit(db, from: 1, model: &model)
        db.waitForWriteBufferMerge()
        try db.write { tx in
            // 40 buffered and 20 pending pass twice the limit of max(16, 200 / 8) at the 11th.
            for n in stride(from: 101, to: 141, by: 2) {
                try tx.put(Self.value(n), forKey: Self.key(n), in: "t")
                model[Self.key(n)] = Self.value(n)
            }
            #expect(try tx.get(Self.key(101), in: "t") == Self.value(101), "pending writes survive the install")
            #expect(try tx.count(in: "t") == model.count)
        }
        let tree = try db.statistics().trees[0]
        #expect(tree.bufferedWrites == 20, "the merge beside the writer was installed, not redone in the transaction")
        #expect(tree.entryCount == model.count)
        try Self.expectTree(of: db, holds: model)
    }

    /// Commits `keys` (odd numbers, under the seeded tree's even ones) in one transaction,
    /// noting them in `model`.
    static func commit(_ keys: [Int], to db: Database, model: inout [[UInt8]: [UInt8]]) throws {
        try db.write { tx in
            for n in keys {
                try tx.put(value(n), forKey: key(n), in: "t")
                model[key(n)] = value(n)
            }
        }
    }

    @Test("four runs of one size are merged beside the writer, and the next commit puts the merged run in their place")
    func runsAreMergedBesideTheWriter() throws {
        let db = try Self.seeded()
        var model = Self.seededModel()
        // Runs large enough to be worth a thread (`SortedRuns.smallestMergedBeside`): each
        // commit fills the tail, and the next one seals it.
        let size = SortedRuns.smallestMergedBeside
        #expect(size == BufferTail.capacity)
        for run in 0 ..< 5 { try Self.commit((0 ..< size).map { 1_001 + 2 * (run * size + $0) }, to: db, model: &model) }
        db.waitForWriteBufferMerge()
        #expect(try db.statistics().writeBufferRunMerges == 1)
        #expect(try db.statistics().trees[0].bufferedRuns == 5, "merged, not yet in place: the commit only sealed the tail")

        try Self.commit([101], to: db, model: &model)
        let tree = try db.statistics().trees[0]
        #expect(tree.bufferedRuns == 3, "the four runs gave way to one; the tail sealed since and the new tail stay")
        #expect(tree.bufferedWrites == 5 * size + 1)
        #expect(tree.entryCount == model.count)
        try Self.expectTree(of: db, holds: model)
        #expect(try Inspector(db).verify().isEmpty)
    }

    /// A run of each list's puts, newest first, as commits make them.
    static func runs(_ keys: [[Int]]) -> [BufferRun] {
        keys.map { pendingWrites(putting: $0).sortedRun() }
    }

    /// Pending writes of `keys` in the order given, each with `value(n, version)`.
    static func pendingWrites(putting keys: [Int], version: Int = 0) -> PendingWrites {
        let pending = PendingWrites()
        for n in keys { put(n, version: version, into: pending) }
        return pending
    }

    /// Writes `value(n, version)` for `key(n)` into `pending`.
    static func put(_ n: Int, version: Int = 0, into pending: PendingWrites) {
        key(n).withUnsafeBytes { k in
            value(n, version).withUnsafeBytes { pending.write(k, hash: BloomFilter.hash(k), .inline($0), limits: NodeLimits(pageSize: 4096)) }
        }
    }

    /// Each key of `run` with its value, in the run's order.
    static func contents(of run: BufferRun) -> [([UInt8], [UInt8])] {
        (0 ..< run.count).map { i in
            run.entries.withUnchangingEntry(i) { key, value in
                guard case .inline(let bytes) = value else { return (Array(key), []) }
                return (Array(key), Array(bytes))
            }
        }
    }

    @Test("a commit's pending writes in key order, each key written once, become its run as they lie, and every key is found")
    func pendingWritesInKeyOrderAreTakenAsTheRun() throws {
        let pending = Self.pendingWrites(putting: [3, 5, 9])
        let run = pending.takenAsRun()
        #expect(run.entries === pending.entries, "no copy")
        #expect(Self.contents(of: run).map(\.0) == [3, 5, 9].map(Self.key))
        let runs = SortedRuns([run])
        for n in [3, 5, 9] { #expect(Self.lookUp(n, in: runs) == .value(Self.value(n, 0))) }
        #expect(Self.lookUp(4, in: runs) == .absent)
    }

    /// What the runs answer for `key(n)`.
    enum Answer: Equatable { case absent, deleted, value([UInt8]) }

    static func lookUp(_ n: Int, in runs: SortedRuns) -> Answer {
        key(n).withUnsafeBytes { key in
            switch runs.find(key, hash: BloomFilter.hash(key)) {
            case .absent: return .absent
            case .deleted: return .deleted
            case .entry(let location):
                return location.leaf.withUnchangingEntry(location.index) { _, value in
                    guard case .inline(let bytes) = value else { return .value([]) }
                    return .value(Array(bytes))
                }
            }
        }
    }

    /// Runs of random puts and deletes of keys below `keys`, one run per size (the first
    /// oldest), newest first as a buffer holds them; `model` gets each key's newest write.
    static func randomRuns(sizes: [Int], keys: Int, model: inout [Int: Answer]) -> [BufferRun] {
        var generator = SystemRandomNumberGenerator()
        var runs: [BufferRun] = []
        for (version, size) in sizes.enumerated() {
            let pending = PendingWrites()
            for _ in 0 ..< size {
                let n = Int.random(in: 0 ..< keys, using: &generator)
                if Int.random(in: 0 ..< 5, using: &generator) == 0 {
                    key(n).withUnsafeBytes { pending.write($0, hash: BloomFilter.hash($0), nil, limits: NodeLimits(pageSize: 4096)) }
                    model[n] = .deleted
                } else {
                    put(n, version: version, into: pending)
                    model[n] = .value(value(n, version))
                }
            }
            runs.insert(pending.sortedRun(), at: 0)
        }
        return runs
    }

    @Test("a lookup through many runs, filtered and not, finds each key's newest write, tombstones included, and nothing else")
    func lookupThroughManyRunsFindsTheNewestWrite() throws {
        // Twenty runs, newest first: small ones keep no filter, larger ones do; keys recur
        // across runs with other versions, and some runs delete keys older runs hold.
        var model: [Int: Answer] = [:]
        let runs = Self.randomRuns(sizes: (0 ..< 20).map { $0 % 3 == 0 ? 8 : 40 + $0 * 7 }, keys: 600, model: &model)
        #expect(runs.contains { $0.filterProbe == nil } && runs.contains { $0.filterProbe != nil })
        let sorted = SortedRuns(runs)
        for n in 0 ..< 700 { #expect(Self.lookUp(n, in: sorted) == (model[n] ?? .absent), "key \(n)") }
    }

    @Test("a lookup through one filter over the runs a merge took answers as a search of every run does")
    func takenRunsFilterAnswersAsTheRuns() {
        // Twelve filtered runs, the older eight taken; keys written in several runs with
        // other versions, some runs deleting keys older runs hold.
        var model: [Int: Answer] = [:]
        let runs = Self.randomRuns(sizes: Array(repeating: 60, count: 12), keys: 900, model: &model)
        let taken = Array(runs.suffix(8))
        let filter = TakenRunsFilter(covering: taken)
        let sorted = SortedRuns(runs, takenFilter: filter)
        #expect(sorted.takenFilter === filter)
        for n in 0 ..< 1_000 { #expect(Self.lookUp(n, in: sorted) == (model[n] ?? .absent), "key \(n)") }
    }

    @Test("the filter over taken runs is kept while the runs lie side by side, through added runs and merges of newer ones, and dropped once they do not")
    func takenRunsFilterFollowsItsRuns() {
        let size = BufferRun.unfilteredEntries + 1
        let all = Self.runs((0 ..< 8).map { run in (0 ..< size).map { 1_000 * (run + 1) + $0 } })
        let taken = Array(all.suffix(5))
        let filter = TakenRunsFilter(covering: taken)
        var runs = SortedRuns(all, takenFilter: filter)
        runs = runs.adding(Self.runs([[1]])[0], mergesBesideWriter: true)
        #expect(runs.takenFilter === filter, "a run added")
        let merge = RunsMerge(tree: "t", sources: Array(runs.runs[0 ..< 3]))
        let merged = merge.installed(in: TreeState(root: nil, entryCount: 0, runs: runs))?.runs
        #expect(merged?.takenFilter === filter, "newer runs merged")
        #expect(SortedRuns(Array(all.prefix(6)), takenFilter: filter).takenFilter == nil, "some of its runs are gone")
        #expect(SortedRuns(Array(all.prefix(3)) + taken.reversed(), takenFilter: filter).takenFilter == nil, "out of order")
        #expect(TakenRunsFilter.covering(Array(taken.prefix(TakenRunsFilter.minimumRuns - 1))) == nil, "too few to be worth it")
    }

    @Test("a merge into the tree beside the writer builds one filter over the runs it took, for the writer to test while it runs")
    func mergeBesideTheWriterFiltersItsRuns() throws {
        // Four commits, each a run of its own (past the tail's capacity); the fourth takes
        // the buffer past its limit, and the merge beside the writer takes all four.
        let size = BufferTail.capacity + 1
        let db = try Self.seeded(buffer: 3 * size + 10)
        var model = Self.seededModel()
        for run in 0 ..< TakenRunsFilter.minimumRuns {
            try Self.commit((0 ..< size).map { 1_001 + 2 * (run * size + $0) }, to: db, model: &model)
        }
        db.waitForWriteBufferMerge()
        #expect(try db.statistics().writeBufferMerges == 1)
        let runs = try #require(db.snapshot().trees["t"]?.runs?.runs, "finished, not yet in place")
        let filter = try #require(db.bufferMerges?.takeTakenFilters()["t"])
        #expect(filter.runs.count == TakenRunsFilter.minimumRuns)
        #expect(runs.span(of: filter.runs) == 0 ..< TakenRunsFilter.minimumRuns)
        try Self.expectTree(of: db, holds: model)
    }

    @Test("pending writes out of key order, or with a key written twice, are sorted into a run of their own, the newest write winning")
    func otherPendingWritesAreSortedIntoARun() throws {
        let unordered = Self.pendingWrites(putting: [9, 3, 5])
        let sorted = unordered.takenAsRun()
        #expect(sorted.entries !== unordered.entries)
        #expect(Self.contents(of: sorted).map(\.0) == [3, 5, 9].map(Self.key))

        let rewritten = Self.pendingWrites(putting: [3, 5])
        Self.put(3, version: 1, into: rewritten)
        let run = rewritten.takenAsRun()
        #expect(run.entries !== rewritten.entries)
        #expect(Self.contents(of: run).map(\.1) == [Self.value(3, 1), Self.value(5)])
    }

    @Test("a merge of runs goes where its runs are, between newer and older ones, and is dropped once they are gone or taken")
    func runsMergeIsInstalledOnlyOverItsRuns() throws {
        let all = Self.runs([[1], [3, 5], [7, 9], [11], [13]])
        let merge = RunsMerge(tree: "t", sources: Array(all[1 ... 3]))
        #expect(merge.merged.count == 5)
        let state = TreeState(root: nil, entryCount: 7, runs: SortedRuns(all))

        let installed = try #require(merge.installed(in: state))
        #expect(installed.runs!.runs.map(\.count) == [1, 5, 1])
        #expect(installed.runs!.runs.first === all[0] && installed.runs!.runs.last === all[4])
        #expect(installed.entryCount == 7)

        #expect(merge.installed(in: TreeState(root: nil, entryCount: 7, runs: SortedRuns([all[0], all[1], all[3]]))) == nil,
                "its runs are no longer neighbours")
        #expect(merge.installed(in: TreeState(root: nil, entryCount: 7)) == nil, "the buffer was emptied")
        all[2].markTaken()
        #expect(merge.installed(in: state) == nil, "a merge into the tree took one of its runs")
    }

    @Test("runs added without merging large ones are merged tier by tier later, a key two runs hold kept once")
    func leftTiersAreMergedLater() {
        // Sixteen runs of one size class, each of `smallestMergedBeside` entries, the newest
        // writing the oldest's keys again: added as a compaction's holds add them, none merges.
        let size = SortedRuns.smallestMergedBeside
        let all = Self.runs((0 ..< 16).map { run in (0 ..< size).map { 10_000 * (run % 15 + 1) + $0 } })
        var runs = SortedRuns([all.last!])
        for run in all.dropLast().reversed() { runs = runs.adding(run, mergesBesideWriter: true) }
        #expect(runs.runs.count == 16)
        let merged = runs.mergingLeftTiers()
        #expect(merged.runs.count == 1, "four fours became four, then one")
        #expect(merged.entries == 15 * size, "the keys two runs hold, once")
        #expect(Self.contents(of: merged.runs[0]).first?.0 == Self.key(10_000))
    }

    @Test("the writer leaves runs claimed by a merge beside it alone, even past the most runs it keeps")
    func writerLeavesClaimedRunsAlone() {
        var runs = SortedRuns(Self.runs([[1], [3], [5], [7]]))
        let claimed = runs.runs
        claimed.forEach { $0.markClaimed() }
        for n in stride(from: 9, to: 9 + 2 * 20, by: 2) { runs = runs.adding(Self.runs([[n]])[0], mergesBesideWriter: true) }
        #expect(Array(runs.runs.suffix(4)).elementsEqual(claimed, by: ===), "still there, by identity, for the merge to find")
        #expect(runs.runs.count <= 12 + 4, "the runs it may move, it merged")
        #expect(runs.entries == 24)
    }

    @Test("runs a merge into the tree took do not count toward the runs the writer keeps: it leaves a tier due to the merge beside it")
    func takenRunsDoNotMakeTheWriterMerge() {
        // A merge into a 10M-record tree takes a score of runs for seconds; counted, they
        // kept the writer merging the runs added meanwhile itself.
        let size = SortedRuns.smallestMergedBeside
        let taken = Self.runs((0 ..< 22).map { run in (0 ..< size).map { 100_000 * (run + 1) + $0 } })
        taken.forEach { $0.markTaken() }
        var runs = SortedRuns(taken)
        for run in 0 ..< 4 { runs = runs.adding(Self.runs([(0 ..< size).map { 10_000 * (run + 1) + $0 }])[0], mergesBesideWriter: true) }
        #expect(runs.runs.count == 26, "the four new runs, unmerged")
        #expect(runs.mergeWindow() == 0 ..< 4, "the tier they make is the merge beside the writer's")
    }

    @Test("past twice a dozen runs the writer may move and no tier due, the merge beside the writer takes them all")
    func mergeBesideTheWriterTakesRunsOfManySizes() {
        // Runs of two size classes in turn: no four neighbours make a tier.
        let sizes = (0 ..< 25).map { $0.isMultiple(of: 2) ? SortedRuns.smallestMergedBeside : 4 * SortedRuns.smallestMergedBeside }
        let all = Self.runs(sizes.enumerated().map { run, size in (0 ..< size).map { 100_000 * (run + 1) + $0 } })
        var runs = SortedRuns([all.last!])
        for run in all.dropLast().reversed() { runs = runs.adding(run, mergesBesideWriter: true) }
        #expect(runs.runs.count == 25, "the writer merged none")
        #expect(runs.tierWindow() == nil)
        #expect(runs.mergeWindow() == 0 ..< 25)
        #expect(SortedRuns(Array(all.prefix(24))).mergeWindow() == nil, "two dozen are within bounds")
        all[3].markClaimed()
        #expect(runs.mergeWindow() == nil, "only the newest runs the writer may move, up to one a merge has")
    }

    @Test("past a dozen runs, a commit that merges beside the writer merges only its newest small runs, and leaves the large ones to that merge")
    func writerMergesOnlySmallRunsPastADozen() {
        // A load leaves large runs; one-record commits then add small ones. Merging them all
        // at every dozen copied the whole buffer for a commit of one record.
        let size = SortedRuns.smallestMergedBeside
        let large = Self.runs((0 ..< 10).map { run in (0 ..< size).map { 10_000 * (run + 1) + $0 } })
        var runs = SortedRuns(large)
        for n in 0 ..< 6 { runs = runs.adding(Self.runs([[2 * n + 1]])[0], mergesBesideWriter: true) }
        #expect(Array(runs.runs.suffix(10)).elementsEqual(large, by: ===), "the large runs, untouched")
        #expect(runs.runs.count <= 12)
        #expect(runs.entries == 10 * size + 6)
    }

    @Test("a merge beside the writer that a compaction made stale is dropped, and nothing is lost")
    func staleBackgroundMergeIsDropped() throws {
        let fs = SimulatedFileSystem()
        var options = Self.options(buffer: 16)
        options.autoCompaction = nil
        var db = try Database(path: "/stale.strata", options: options, fileSystem: fs)
        try db.write { tx in
            try tx.createTree("t")
            for n in stride(from: 0, to: 400, by: 2) { try tx.put(Self.value(n), forKey: Self.key(n), in: "t") }
        }
        var model = Self.seededModel()
        try Self.commitPastTheLimit(db, from: 1, model: &model)
        db.waitForWriteBufferMerge()
        #expect(try db.statistics().writeBufferMerges == 1)
        try db.compact()   // the merge read the file compaction replaced
        try Self.commitPastTheLimit(db, from: 101, model: &model)
        db.waitForWriteBufferMerge()
        try Self.commitPastTheLimit(db, from: 201, model: &model)

        #expect(try db.statistics().trees[0].entryCount == model.count)
        #expect(try allEntries(db.snapshot(), "t").count == model.count)
        #expect(try Inspector(db).verify().isEmpty)
        try db.close()
        db = try Database(path: "/stale.strata", options: options, fileSystem: fs)
        try Self.expectTree(of: db, holds: model)
    }

    /// A database whose buffers' byte bound is its floor, 1 MiB (a cache budget of 1 MiB),
    /// and whose entry limit no test reaches.
    static func byteBounded(background: Bool) throws -> Database {
        var options = options(buffer: 1_000_000, background: background)
        options.cacheSize = 1 << 20
        return try Database.inMemory(options: options)
    }

    @Test("a buffer is merged once its bytes pass a sixteenth of the cache budget (twice that, with merges beside the writer), whatever its entry limit",
          arguments: [false, true])
    func bufferBytesAreBounded(background: Bool) throws {
        let db = try Self.byteBounded(background: background)
        try db.write { tx in try tx.createTree("t") }
        let value = [UInt8](repeating: 7, count: 100)
        for batch in 0 ..< 40 {
            try db.write { tx in
                for n in 0 ..< 1_000 { try tx.put(value, forKey: Self.key(batch * 1_000 + n), in: "t") }
            }
            let buffered = try db.statistics().trees[0].bufferedWrites
            #expect(buffered * 110 <= (background ? 2 : 1) * (1 << 20) + 110_000, "about 4.4 MB written, merged as it went")
        }
        #expect(try db.statistics().trees[0].entryCount == 40_000)
        #expect(try allEntries(db.snapshot(), "t").count == 40_000)
    }

    @Test("the buffers of all trees together are held to the byte bound, the largest merged first",
          arguments: [false, true])
    func buffersTogetherAreBounded(background: Bool) throws {
        let db = try Self.byteBounded(background: background)
        try db.write { tx in for tree in ["a", "b", "c"] { try tx.createTree(tree) } }
        let value = [UInt8](repeating: 7, count: 100)
        for batch in 0 ..< 15 {
            try db.write { tx in
                for tree in ["a", "b", "c"] {
                    for n in 0 ..< 1_000 { try tx.put(value, forKey: Self.key(batch * 1_000 + n), in: tree) }
                }
            }
            // Each tree alone stays under the bound; the three together would not.
            let buffered = try db.statistics().trees.reduce(0) { $0 + $1.bufferedWrites }
            #expect(buffered * 110 <= (background ? 2 : 1) * (1 << 20), "about 1.6 MB written per tree, merged as it went")
        }
        for tree in try db.statistics().trees { #expect(tree.entryCount == 15_000) }
        #expect(try allEntries(db.snapshot(), "b").count == 15_000)
        #expect(try Inspector(db).verify().isEmpty)
    }

    @Test("a checkpoint merges the buffer first: reopened without a log, the file holds every write")
    func checkpointMergesTheBuffer() throws {
        let dir = TemporaryDirectory()
        let path = dir.path + "/b.strata"
        var options = Self.options(buffer: 1_000_000)
        do {
            let db = try Database(path: path, options: options)
            try db.write { tx in
                try tx.createTree("t")
                for n in stride(from: 0, to: 400, by: 2) { try tx.put(Self.value(n), forKey: Self.key(n), in: "t") }
            }
            try db.write { tx in
                try tx.put(Self.value(1), forKey: Self.key(1), in: "t")
                _ = try tx.delete(Self.key(2), in: "t")
            }
            #expect(try db.statistics().trees[0].bufferedWrites == 2)
            try db.checkpoint()
            #expect(try db.statistics().trees[0].bufferedWrites == 0)
            #expect(try db.statistics().logBytesSinceCheckpoint == 0)
            try db.close()
        }
        options.writeBufferEntries = nil
        let reopened = try Database(path: path, options: options)
        #expect(try reopened.statistics().commitsReplayedAtOpen == 0)
        let snapshot = try reopened.snapshot()
        #expect(try snapshot.get(Self.key(1), in: "t") == Self.value(1))
        #expect(try snapshot.get(Self.key(2), in: "t") == nil)
        #expect(try snapshot.count(in: "t") == 200)
        #expect(try Inspector(reopened).verify().isEmpty)
    }

    @Test("buffered writes a crash leaves unmerged come back from the log")
    func unmergedWritesAreReplayed() throws {
        let dir = TemporaryDirectory()
        let path = dir.path + "/c.strata"
        var options = Self.options(buffer: 1_000_000)
        options.checkpointOnClose = false
        do {
            let db = try Database(path: path, options: options)
            try db.write { tx in
                try tx.createTree("t")
                for n in stride(from: 0, to: 400, by: 2) { try tx.put(Self.value(n), forKey: Self.key(n), in: "t") }
            }
            try db.checkpoint()
            try db.write { tx in
                try tx.put(Self.value(1), forKey: Self.key(1), in: "t")
                _ = try tx.delete(Self.key(2), in: "t")
            }
            try db.close()
        }
        let reopened = try Database(path: path, options: options)
        #expect(try reopened.statistics().commitsReplayedAtOpen == 1)
        #expect(try reopened.snapshot().get(Self.key(1), in: "t") == Self.value(1))
        #expect(try reopened.snapshot().get(Self.key(2), in: "t") == nil)
        #expect(try reopened.snapshot().count(in: "t") == 200)
    }

    @Test("verify checks a tree with buffered writes against its count, and finds nothing wrong")
    func verifyMergesTheBuffer() throws {
        let db = try Self.seeded()
        try db.write { tx in
            try tx.put(Self.value(13), forKey: Self.key(13), in: "t")
            _ = try tx.delete(Self.key(14), in: "t")
        }
        #expect(try db.statistics().trees[0].bufferedWrites == 2)
        #expect(try Inspector(db).verify().isEmpty)
        #expect(try db.statistics().trees[0].bufferedWrites == 2, "verifying changes nothing")
    }

    @Test("the verifier and checkpoint passes merge the buffer on other threads while the writer merges it too, and every version stays whole",
          arguments: [false, true])
    func buffersMergedOnSeveralThreadsAtOnce(background: Bool) throws {
        // Each of them copies the committed tree's branches: the copies must not both take
        // a branch's children over (`BranchNode.copy(owner:)`), or releasing the versions
        // crashes.
        var options = Self.options(buffer: 300, background: background)
        options.backgroundCheckpoints = .always
        options.checkpointLogBytes = 64 << 10
        let db = try Database.inMemory(options: options)
        try db.write { tx in
            try tx.createTree("t")
            for n in 0 ..< 3_000 { try tx.put(Self.value(n), forKey: Self.key(n), in: "t") }
        }
        var model = Dictionary(uniqueKeysWithValues: (0 ..< 3_000).map { (Self.key($0), Self.value($0)) })
        let stop = Atomic<Bool>(false)
        let faults = Mutex<[String]>([])
        let verified = Atomic<Int>(0)
        let finished = DispatchSemaphore(value: 0)
        Thread {
            defer { finished.signal() }
            repeat {
                let found = (try? Inspector(db).verify().map(\.message)) ?? ["verify threw"]
                faults.withLock { $0 += found }
                verified.add(1, ordering: .relaxed)
            } while !stop.load(ordering: .relaxed) || verified.load(ordering: .relaxed) == 0
        }.start()
        var rng = SeededGenerator(seed: 5)
        for version in 1 ... 300 {
            try db.write { tx in
                for _ in 0 ..< 60 {
                    let n = Int.random(in: 0 ..< 6_000, using: &rng)
                    try tx.put(Self.value(n, version), forKey: Self.key(n), in: "t")
                    model[Self.key(n)] = Self.value(n, version)
                }
            }
        }
        stop.store(true, ordering: .relaxed)
        finished.wait()
        #expect(faults.withLock { $0 }.isEmpty)
        try Self.expectTree(of: db, holds: model)
        try db.close()
    }

    @Test("a large value written through the buffer is read back from its value frame")
    func largeValuesAreBuffered() throws {
        let db = try Self.seeded()
        let large = [UInt8](repeating: 0xAB, count: 3_000)
        try db.write { tx in try tx.put(large, forKey: Self.key(15), in: "t") }
        #expect(try db.statistics().trees[0].bufferedWrites == 1)
        #expect(try db.snapshot().get(Self.key(15), in: "t") == large)
        try db.checkpoint()
        #expect(try db.snapshot().get(Self.key(15), in: "t") == large)
    }

    @Test("a cursor over pending writes, runs and the tree moves as over a sorted model, either way", arguments: [1, 2, 3] as [UInt64])
    func cursorMergesSources(seed: UInt64) throws {
        var rng = SeededGenerator(seed: seed)
        let db = try Self.seeded()
        var model = Dictionary(uniqueKeysWithValues: stride(from: 0, to: 400, by: 2).map { (Self.key($0), Self.value($0)) })
        // Runs of several sizes (each commit adds one; the buffer merges runs as they grow).
        func randomWrites(_ tx: WriteTransaction, _ count: Int, version: Int) throws {
            for _ in 0 ..< count {
                let n = Int.random(in: 0 ..< 420, using: &rng)
                if Int.random(in: 0 ..< 3, using: &rng) == 0 {
                    _ = try tx.delete(Self.key(n), in: "t")
                    model[Self.key(n)] = nil
                } else {
                    try tx.put(Self.value(n, version), forKey: Self.key(n), in: "t")
                    model[Self.key(n)] = Self.value(n, version)
                }
            }
        }
        for commit in 1 ... 6 { try db.write { tx in try randomWrites(tx, Int.random(in: 1 ... 40, using: &rng), version: commit) } }
        #expect(try db.statistics().trees[0].bufferedRuns >= 1)
        let tx = try db.beginWrite()
        defer { tx.rollback() }
        try randomWrites(tx, 30, version: 99)
        let sorted = model.keys.sorted { $0.lexicographicallyPrecedes($1) }
        let cursor = try tx.cursor("t")
        // Later writes in the transaction are not the cursor's: it reads the state it began with.
        try tx.put(Self.value(1, 1000), forKey: Self.key(1), in: "t")

        var position: Int? = nil   // index into `sorted`
        for _ in 0 ..< 400 {
            let moved: Bool
            switch Int.random(in: 0 ..< 10, using: &rng) {
            case 0:
                moved = try cursor.first()
                position = sorted.isEmpty ? nil : 0
            case 1:
                moved = try cursor.last()
                position = sorted.isEmpty ? nil : sorted.count - 1
            case 2:
                let target = Self.key(Int.random(in: 0 ..< 430, using: &rng))
                moved = try cursor.seek(to: target)
                let i = sorted.firstIndex { !$0.lexicographicallyPrecedes(target) }
                position = i
            case 3 ..< 7:
                moved = try cursor.next()
                position = position.flatMap { $0 + 1 < sorted.count ? $0 + 1 : nil }
            default:
                moved = try cursor.previous()
                position = position.flatMap { $0 > 0 ? $0 - 1 : nil }
            }
            #expect(moved == (position != nil))
            #expect(cursor.isValid == (position != nil))
            guard let position else { continue }
            #expect(cursor.key == sorted[position])
            #expect(try cursor.value() == model[sorted[position]])
            if cursor.key != sorted[position] { break }
        }
        let range = KeyRange(from: Self.key(100), to: Self.key(300))
        var scanned: [[UInt8]] = []
        try tx.scan("t", in: range, reverse: true) { key, _ in
            scanned.append(Array(key))
            return true
        }
        let wanted = sorted.filter { range.contains($0) }
        #expect(scanned == Array(wanted.reversed()))
    }
}
