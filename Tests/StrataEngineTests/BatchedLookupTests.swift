import Testing
@testable import StrataEngine

/// Batched lookups (`TreeHandle.withValues`): many keys walked down a tree together give
/// exactly what one lookup each gives, wherever the entries are — in memory, on pages read
/// back from disk, in the write buffer — in the order asked.
@Suite("Batched lookups")
struct BatchedLookupTests {
    static func key(_ n: Int) -> [UInt8] { Key(n).bytes }
    static func value(_ n: Int, _ version: Int = 0) -> [UInt8] { Array("value \(n).\(version)".utf8) }

    /// A tree "t" of the even numbers below `2 * count`, several levels deep (512-byte pages).
    static func fill(_ db: Database, count: Int = 3_000) throws {
        try db.write { tx in
            try tx.createTree("t")
            for n in stride(from: 0, to: 2 * count, by: 2) { try tx.put(value(n), forKey: key(n), in: "t") }
        }
    }

    /// A closed file at "/db" holding `fill`'s tree as pages (a checkpoint on close), and
    /// options to open it with a cache too small to hold the tree: lookups read pages back.
    static func pagedFile() throws -> (SimulatedFileSystem, Database.Options) {
        let fs = SimulatedFileSystem()
        var options = smallOptions(pageSize: 512)
        options.cacheSize = 16 * 1024
        let db = try Database(path: "/db", options: options, fileSystem: fs)
        try fill(db)
        try db.close()
        return (fs, options)
    }

    /// Keys present and absent, repeated, out of order, across several groups of walks.
    static func probeKeys(seed: UInt64, count: Int = 500, below limit: Int = 6_100) -> [Int] {
        var rng = SeededGenerator(seed: seed)
        var keys = (0 ..< count).map { _ in Int.random(in: -5 ..< limit, using: &rng) }
        keys += keys.prefix(20)   // duplicates
        return keys
    }

    /// What `withValues` lends for `keys` on `reader`'s tree "t", in the order it lends them.
    static func batched(_ keys: [Int], on reader: some TreeReading) throws -> [(Int, [UInt8]?)] {
        var batch = KeyBatch()
        for n in keys { batch.append(Int64(n)) }
        var lent: [(Int, [UInt8]?)] = []
        try reader.withValues(batch, in: "t") { i, value in lent.append((i, value.map { Array($0) })) }
        return lent
    }

    /// `batched`'s answers checked against one `get` each on the same reader.
    static func expectBatchedMatchesSingle(_ keys: [Int], on reader: some TreeReading,
                                           sourceLocation: SourceLocation = #_sourceLocation) throws {
        let lent = try batched(keys, on: reader)
        #expect(lent.map(\.0) == Array(keys.indices), "every key once, in order", sourceLocation: sourceLocation)
        for (i, value) in lent {
            #expect(value == (try reader.get(key(keys[i]), in: "t")), "key \(keys[i])", sourceLocation: sourceLocation)
        }
    }

    @Test("lookups walked together find what one lookup each finds, in a tree held in memory", arguments: [1, 2] as [UInt64])
    func matchesSingleLookupsInMemory(seed: UInt64) throws {
        let db = try Database.inMemory(options: smallOptions(pageSize: 512))
        try Self.fill(db)
        try Self.expectBatchedMatchesSingle(Self.probeKeys(seed: seed), on: db.snapshot())
    }

    @Test("lookups walked together read the pages they reach from disk, through a cache too small to hold the tree")
    func matchesSingleLookupsFromPages() throws {
        let (fs, options) = try Self.pagedFile()
        let reopened = try Database(path: "/db", options: options, fileSystem: fs)
        let lent = try Self.batched(Self.probeKeys(seed: 3), on: reopened.snapshot())
        #expect(try reopened.statistics().cacheMisses > 0, "the walks read pages")
        #expect(lent.count == 520)
        for (i, value) in lent {
            let n = Self.probeKeys(seed: 3)[i]
            #expect(value == (n >= 0 && n < 6_000 && n % 2 == 0 ? Self.value(n) : nil), "key \(n)")
        }
    }

    @Test("keys the write buffer holds are answered from it: newer values, and deletes as absent")
    func writeBufferAnswersFirst() throws {
        var options = smallOptions(pageSize: 512)
        options.writeBufferEntries = 1_000_000
        options.writeBufferIdleMerge = nil
        let db = try Database.inMemory(options: options)
        try Self.fill(db)
        try db.write { tx in
            for n in stride(from: 0, to: 600, by: 6) { try tx.put(Self.value(n, 1), forKey: Self.key(n), in: "t") }
            for n in stride(from: 2, to: 600, by: 6) { try tx.delete(Self.key(n), in: "t") }
            for n in stride(from: 1, to: 600, by: 10) { try tx.put(Self.value(n, 1), forKey: Self.key(n), in: "t") }
        }
        #expect(try db.statistics().trees[0].bufferedWrites > 0, "the writes wait in the buffer")
        let snapshot = try db.snapshot()
        let keys = Array(0 ..< 700)
        let lent = try Self.batched(keys, on: snapshot)
        for (i, value) in lent {
            let n = keys[i]
            let expected: [UInt8]? = n < 600 && n % 6 == 0 ? Self.value(n, 1)
                : n < 600 && n % 6 == 2 ? nil
                : n < 600 && n % 10 == 1 ? Self.value(n, 1)
                : n % 2 == 0 ? Self.value(n) : nil
            #expect(value == expected, "key \(n)")
        }
    }

    @Test("in a write transaction each key is looked up in its turn, so the body may write the tree it reads, splitting its root",
          arguments: [nil, 65_536] as [Int?])
    func writeTransactionBodyMayWrite(writeBuffer: Int?) throws {
        var options = smallOptions(pageSize: 512)
        options.writeBufferEntries = writeBuffer   // without one, every write changes the tree
        let db = try Database.inMemory(options: options)
        let keys = Array(stride(from: 0, to: 24, by: 2))   // one leaf: the root
        try db.write { tx in
            try tx.createTree("t")
            for n in keys { try tx.put(Self.value(n), forKey: Self.key(n), in: "t") }
        }
        try db.write { tx in
            // The transaction owns the root before the lookups: the body's writes then
            // change it in place.
            try tx.put(Self.value(-2), forKey: Self.key(-2), in: "t")
            var batch = KeyBatch()
            for n in keys { batch.append(Int64(n)) }
            // Each value grown, and keys inserted after it: the root leaf splits, and the
            // branches above it, while lookups are still to come.
            try tx.withValues(batch, in: "t") { i, value in
                let old = try #require(value.map { Array($0) }, "key \(keys[i])")
                try tx.put(old + Array(" and more".utf8), forKey: Self.key(keys[i]), in: "t")
                for extra in 1 ... 60 {
                    try tx.put(Self.value(keys[i] * 100 + extra), forKey: Key(keys[i], extra).bytes, in: "t")
                }
            }
        }
        let snapshot = try db.snapshot()
        #expect(try snapshot.count(in: "t") == keys.count * 61 + 1)
        for n in keys {
            #expect(try snapshot.get(Self.key(n), in: "t") == Self.value(n) + Array(" and more".utf8))
            #expect(try snapshot.get(Key(n, 60).bytes, in: "t") == Self.value(n * 100 + 60))
        }
    }

    @Test("an error thrown by the body stops the lookups and reaches the caller")
    func bodyErrorStops() throws {
        struct Stop: Error {}
        let db = try Database.inMemory(options: smallOptions(pageSize: 512))
        try Self.fill(db)
        var batch = KeyBatch()
        for n in 0 ..< 100 { batch.append(Int64(n * 2)) }
        var calls = 0
        #expect(throws: Stop.self) {
            try db.snapshot().withValues(batch, in: "t") { i, _ in
                calls += 1
                if i == 20 { throw Stop() }
            }
        }
        #expect(calls == 21)
    }

    @Test("an empty batch calls nothing; an empty tree answers nil for every key")
    func emptyBatchAndEmptyTree() throws {
        let db = try Database.inMemory(options: smallOptions(pageSize: 512))
        try db.write { tx in try tx.createTree("t") }
        try db.snapshot().withValues(KeyBatch(), in: "t") { _, _ in Issue.record("no key was asked for") }
        let lent = try Self.batched(Array(0 ..< 40), on: db.snapshot())
        #expect(lent.count == 40 && lent.allSatisfy { $0.1 == nil })
    }

    @Test("a damaged page met by a walk is a corruption error, not a crash or a wrong answer")
    func damagedPageIsCorruption() throws {
        let (fs, options) = try Self.pagedFile()
        // One byte flipped in the payload of every page frame the checkpoint on close wrote.
        var image = fs.contents(of: "/db")
        for frame in CorruptionTests.frames(of: image) where image[frame.offset + 10] == FrameType.page.rawValue {
            image[frame.offset + FrameHeader.size + 1] ^= 0x40
        }
        fs.setContents(image, of: "/db")
        let reopened = try Database(path: "/db", options: options, fileSystem: fs)
        #expect {
            _ = try Self.batched(Array(0 ..< 64), on: reopened.snapshot())
        } throws: { error in
            if case StrataError.corruption = error { return true }
            return false
        }
    }
}
