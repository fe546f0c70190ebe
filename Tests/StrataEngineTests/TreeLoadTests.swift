import Foundation
import Testing
@testable import StrataEngine

/// A transaction that finds a tree empty gathers its writes to it and builds the tree in key
/// order, with full leaves, when it is done with them (`TreeLoad.swift`): what it and later
/// readers see is what puts one by one would have made.
@Suite("Tree load")
struct TreeLoadTests {
    static func key(_ n: Int) -> [UInt8] { Key(n).bytes }
    static func value(_ n: Int, _ version: Int = 0) -> [UInt8] { Array("value \(n).\(version)".utf8) }

    static func database() throws -> Database {
        try Database.inMemory(options: WriteBufferTests.options(buffer: 64))
    }

    /// 0 ..< `count` in a shuffled order that every run repeats.
    static func shuffled(_ count: Int, seed: UInt64 = 7) -> [Int] {
        var generator = SeededGenerator(seed: seed)
        return (0 ..< count).shuffled(using: &generator)
    }

    /// The entries of `tree` in `reader`, with the values decoded as text for readable failures.
    static func entries(_ reader: some TreeReading, _ tree: String) throws -> [([UInt8], String)] {
        try allEntries(reader, tree).map { ($0.0, String(decoding: $0.1, as: UTF8.self)) }
    }

    static func expected(_ model: [Int: [UInt8]]) -> [([UInt8], String)] {
        model.keys.sorted().map { (key($0), String(decoding: model[$0]!, as: UTF8.self)) }
    }

    /// Whether `tree` in `reader` holds exactly `model`'s entries, in key order.
    static func holds(_ reader: some TreeReading, _ tree: String, _ model: [Int: [UInt8]]) throws -> Bool {
        try entries(reader, tree).elementsEqual(expected(model)) { $0.0 == $1.0 && $0.1 == $1.1 }
    }

    /// Puts 0 ..< `count` in shuffled order into `tree` (created first when `creating`);
    /// returns what it holds then.
    static func put(_ count: Int, into tree: String, creating: Bool = true, seed: UInt64 = 7, in tx: WriteTransaction) throws -> [Int: [UInt8]] {
        if creating { try tx.createTree(tree) }
        var model: [Int: [UInt8]] = [:]
        for n in shuffled(count, seed: seed) {
            try tx.put(value(n), forKey: key(n), in: tree)
            model[n] = value(n)
        }
        return model
    }

    @Test("keys put in any order into an empty tree are all there, in key order, with an exact count")
    func loadHoldsEveryKey() throws {
        let db = try Self.database()
        let model = try db.write { tx in try Self.put(3_000, into: "t", in: tx) }
        let snapshot = try db.snapshot()
        #expect(try Self.holds(snapshot, "t", model))
        #expect(try snapshot.count(in: "t") == 3_000)
        #expect(try db.statistics().trees.first { $0.name == "t" }!.bufferedWrites == 0)
    }

    @Test("rewrites, deletes and inserts that find their key answer as they would against a tree")
    func loadKeepsTheLastWriteOfEachKey() throws {
        let db = try Self.database()
        var model: [Int: [UInt8]] = [:]
        try db.write { tx in
            model = try Self.put(2_000, into: "t", in: tx)
            for n in stride(from: 0, to: 2_000, by: 3) {
                try tx.put(Self.value(n, 1), forKey: Self.key(n), in: "t")
                model[n] = Self.value(n, 1)
            }
            for n in stride(from: 1, to: 2_000, by: 5) {
                #expect(try tx.delete(Self.key(n), in: "t"))
                model[n] = nil
            }
            #expect(try !tx.delete(Self.key(1), in: "t"))
            #expect(try !tx.insert(Self.value(2, 9), forKey: Self.key(2), in: "t"))
            #expect(try tx.insert(Self.value(1, 2), forKey: Self.key(1), in: "t"))
            model[1] = Self.value(1, 2)
            #expect(try tx.count(in: "t") == model.count)
        }
        let snapshot = try db.snapshot()
        #expect(try Self.holds(snapshot, "t", model))
        #expect(try snapshot.count(in: "t") == model.count)
    }

    @Test("puts that write keys again, with nothing read in between, leave the newest value of each key, counted once")
    func unreadRewritesKeepTheNewestWrite() throws {
        let db = try Self.database()
        var model: [Int: [UInt8]] = [:]
        try db.write { tx in
            model = try Self.put(2_000, into: "t", in: tx)
            // Each key of a third written twice more, and neighbours rewritten in turn, so
            // that a key's writes lie far apart and among other keys' writes.
            for version in 1 ... 2 {
                for n in Self.shuffled(2_000, seed: UInt64(version)) where n % 3 == 0 {
                    try tx.put(Self.value(n, version), forKey: Self.key(n), in: "t")
                    model[n] = Self.value(n, version)
                }
            }
        }
        let snapshot = try db.snapshot()
        #expect(try Self.holds(snapshot, "t", model))
        #expect(try snapshot.count(in: "t") == 2_000)
        #expect(try Inspector(db).verify().isEmpty)
    }

    @Test("a count, a lookup or a delete partway through a load answers for every write before it, and the load goes on")
    func readsPartwayThroughALoadSeeEveryWrite() throws {
        let db = try Self.database()
        var model: [Int: [UInt8]] = [:]
        try db.write { tx in
            model = try Self.put(1_000, into: "t", in: tx)
            for n in 0 ..< 100 {
                try tx.put(Self.value(n, 1), forKey: Self.key(n), in: "t")
                model[n] = Self.value(n, 1)
            }
            #expect(try tx.count(in: "t") == 1_000)
            #expect(try tx.get(Self.key(5), in: "t") == Self.value(5, 1))
            #expect(try tx.delete(Self.key(7), in: "t"))
            model[7] = nil
            for n in 50 ..< 1_500 {
                try tx.put(Self.value(n, 2), forKey: Self.key(n), in: "t")
                model[n] = Self.value(n, 2)
            }
            #expect(try tx.count(in: "t") == model.count)
        }
        let snapshot = try db.snapshot()
        #expect(try Self.holds(snapshot, "t", model))
        #expect(try snapshot.count(in: "t") == model.count)
    }

    @Test("random puts, rewrites, deletes, inserts, lookups, counts and a cursor in a load match a dictionary, before and after the commit",
          arguments: [0, 1, 2, 3] as [UInt64])
    func randomLoadMatchesADictionary(seed: UInt64) throws {
        let db = try Self.database()
        var model: [Int: [UInt8]] = [:]
        var rng = SeededGenerator(seed: 100 + seed)
        // Reads start at a different point for each seed: the table is made then, over
        // however many unread puts came first.
        let firstRead = Int(seed) * 700
        try db.write { tx in
            try tx.createTree("t")
            for step in 0 ..< 3_000 {
                let n = Int.random(in: 0 ..< 900, using: &rng)
                let roll = step < firstRead ? 0 : Int.random(in: 0 ..< 100, using: &rng)
                switch roll {
                case 0 ..< 70:
                    try tx.put(Self.value(n, step), forKey: Self.key(n), in: "t")
                    model[n] = Self.value(n, step)
                case 70 ..< 78:
                    #expect(try tx.delete(Self.key(n), in: "t") == (model[n] != nil), "step \(step)")
                    model[n] = nil
                case 78 ..< 86:
                    let inserted = try tx.insert(Self.value(n, step), forKey: Self.key(n), in: "t")
                    #expect(inserted == (model[n] == nil), "step \(step)")
                    if inserted { model[n] = Self.value(n, step) }
                case 86 ..< 97:
                    #expect(try tx.get(Self.key(n), in: "t") == model[n], "step \(step)")
                case 97 ..< 99:
                    #expect(try tx.count(in: "t") == model.count, "step \(step)")
                default:
                    #expect(try Self.holds(tx, "t", model), "step \(step)")
                }
            }
            #expect(try tx.count(in: "t") == model.count)
        }
        let snapshot = try db.snapshot()
        #expect(try Self.holds(snapshot, "t", model))
        #expect(try snapshot.count(in: "t") == model.count)
        #expect(try Inspector(db).verify().isEmpty)
    }

    @Test("the loaded tree's leaves are full, where keys put in scattered order leave them part empty")
    func loadFillsItsLeaves() throws {
        let loaded = try Self.database()
        let scattered = try Self.database()
        _ = try loaded.write { tx in try Self.put(5_000, into: "t", in: tx) }
        try scattered.write { tx in
            try tx.createTree("t")
            try tx.put(Self.value(0), forKey: Self.key(0), in: "t")
        }
        try scattered.write { tx in
            for n in Self.shuffled(5_000) where n > 0 { try tx.put(Self.value(n), forKey: Self.key(n), in: "t") }
        }
        let full = try loaded.analyzeSpace().trees.first { $0.name == "t" }!
        let partEmpty = try scattered.analyzeSpace().trees.first { $0.name == "t" }!
        #expect(full.fillFactor > 0.9)
        #expect(full.leafPages < partEmpty.leafPages)
        #expect(try allEntries(loaded.snapshot(), "t").elementsEqual(try allEntries(scattered.snapshot(), "t")) { $0 == $1 })
    }

    @Test("the loading transaction reads its writes; a cursor builds the tree, and writes after it go into the tree")
    func loadIsReadWhileItRuns() throws {
        let db = try Self.database()
        try db.write { tx in
            _ = try Self.put(1_000, into: "t", in: tx)
            #expect(try tx.get(Self.key(500), in: "t") == Self.value(500))
            #expect(try tx.get(Self.key(1_000), in: "t") == nil)
            #expect(try tx.count(in: "t") == 1_000)
            #expect(try allEntries(tx, "t").map(\.0) == (0 ..< 1_000).map(Self.key))
            try tx.put(Self.value(1_000), forKey: Self.key(1_000), in: "t")
            #expect(try tx.delete(Self.key(0), in: "t"))
            #expect(try tx.count(in: "t") == 1_000)
        }
        let snapshot = try db.snapshot()
        #expect(try allEntries(snapshot, "t").map(\.0) == (1 ... 1_000).map(Self.key))
        #expect(try snapshot.count(in: "t") == 1_000)
    }

    @Test("a load rolled back leaves the tree empty")
    func loadRolledBackLeavesNothing() throws {
        let db = try Self.database()
        try db.write { tx in try tx.createTree("t") }
        let tx = try db.beginWrite()
        _ = try Self.put(500, into: "t", creating: false, in: tx)
        tx.rollback()
        let snapshot = try db.snapshot()
        #expect(try snapshot.count(in: "t") == 0)
        #expect(try allEntries(snapshot, "t").isEmpty)
    }

    @Test("a load whose every key is deleted again leaves the tree empty")
    func loadDeletedAgainLeavesNothing() throws {
        let db = try Self.database()
        try db.write { tx in
            try tx.createTree("t")
            for n in 0 ..< 300 { try tx.put(Self.value(n), forKey: Self.key(n), in: "t") }
            for n in 0 ..< 300 { #expect(try tx.delete(Self.key(n), in: "t")) }
        }
        #expect(try db.snapshot().count(in: "t") == 0)
        #expect(try db.analyzeSpace().trees.first { $0.name == "t" }!.leafPages == 0)
    }

    @Test("a tree loaded, checkpointed or not, reads the same after a reopen")
    func loadSurvivesReopen() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file()
        var model: [Int: [UInt8]] = [:]
        do {
            let db = try Database(path: path, options: WriteBufferTests.options(buffer: 64))
            try db.write { tx in
                model = try Self.put(2_000, into: "t", in: tx)
                _ = try Self.put(2_000, into: "u", seed: 8, in: tx)
            }
            try db.checkpoint()
            _ = try db.write { tx in try Self.put(2_000, into: "v", seed: 9, in: tx) }
            try db.close()
        }
        let reopened = try openWithoutCheckpointOnClose(path)
        defer { try? reopened.close() }
        let snapshot = try reopened.snapshot()
        for tree in ["t", "u", "v"] {
            #expect(try Self.holds(snapshot, tree, model))
            #expect(try snapshot.count(in: tree) == model.count)
        }
        #expect(try Inspector(reopened).verify().isEmpty)
    }

    @Test("a tree that holds keys is written as before: its writes go to the buffer, not a load")
    func treeWithKeysIsNotLoaded() throws {
        let db = try WriteBufferTests.seeded()
        try db.write { tx in
            for n in stride(from: 1, to: 200, by: 2) { try tx.put(Self.value(n), forKey: Self.key(n), in: "t") }
        }
        #expect(try db.statistics().trees.first { $0.name == "t" }!.bufferedWrites == 100)
        #expect(try db.snapshot().count(in: "t") == 300)
    }
}
