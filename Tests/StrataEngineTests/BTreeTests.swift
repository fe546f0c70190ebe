import Foundation
import Testing
@testable import StrataEngine

@Suite("B-tree")
struct BTreeTests {
    func withDatabase(_ options: Database.Options = smallOptions(), _ body: (Database, SimulatedFileSystem) throws -> Void) throws {
        let fs = SimulatedFileSystem()
        let db = try Database(path: "/db", options: options, fileSystem: fs)
        try body(db, fs)
    }

    func depth(_ db: Database, _ tree: String) throws -> Int {
        try db.analyzeSpace().trees.first { $0.name == tree }!.depth
    }

    @Test("a lookup by key element finds what was stored under that element's key, through a snapshot and through a tree handle")
    func lookupByKeyElement() throws {
        try withDatabase { db, _ in
            try db.write { tx in
                try tx.createTree("t")
                for i in 0 ..< 2000 { try tx.put(Key(i).bytes, forKey: Key(i).bytes, in: "t") }
                try tx.put([1], forKey: Key("name").bytes, in: "t")
            }
            let snapshot = try db.snapshot()
            let handle = try snapshot.treeHandle("t", forIteration: false)
            for i in [0, 1, 999, 1999] {
                #expect(try snapshot.withValue(forKey: i, in: "t") { Array($0) } == Key(i).bytes)
                #expect(try handle.withValue(forKey: Int64(i)) { Array($0) } == Key(i).bytes)
            }
            #expect(try snapshot.withValue(forKey: 2000, in: "t") { _ in true } == nil)
            #expect(try handle.withValue(forKey: -1) { _ in true } == nil)
            #expect(try snapshot.withValue(forKey: "name", in: "t") { Array($0) } == [1])
            #expect(throws: StrataError.self) { try snapshot.withValue(forKey: 1, in: "missing") { _ in true } }
        }
    }

    @Test("a value lent inside a write transaction stays as lent while the reader rewrites its key, by name and by handle")
    func lentValueSurvivesAWriteDuringTheRead() throws {
        try withDatabase { db, _ in
            try db.write { tx in
                try tx.createTree("t")
                for i in 0 ..< 200 { try tx.put([UInt8](repeating: 1, count: 16), forKey: Key(i).bytes, in: "t") }
            }
            try db.write { tx in
                // The leaf is this transaction's own after the first put: the second changes it
                // in place, under the bytes the first read lent.
                try tx.put([UInt8](repeating: 2, count: 16), forKey: Key(7).bytes, in: "t")
                let seen = try tx.withValue(forKey: 7, in: "t") { lent -> [UInt8] in
                    try tx.put([UInt8](repeating: 3, count: 16), forKey: Key(7).bytes, in: "t")
                    return Array(lent)
                }
                #expect(seen == [UInt8](repeating: 2, count: 16))
                let handle = try tx.treeHandle("t", forIteration: false)
                let seenByHandle = try handle.withValue(forKey: 7) { lent -> [UInt8] in
                    try tx.put([UInt8](repeating: 4, count: 16), forKey: Key(7).bytes, in: "t")
                    return Array(lent)
                }
                #expect(seenByHandle == [UInt8](repeating: 3, count: 16))
            }
        }
    }

    @Test("inserting past one page splits leaves and grows branches, keeping order")
    func splits() throws {
        try withDatabase { db, _ in
            try db.write { tx in
                try tx.createTree("t")
                for i in (0 ..< 3000).shuffled(using: &SeededGenerator.shared) {
                    try tx.put([UInt8](repeating: UInt8(i % 251), count: 20), forKey: Key(i).bytes, in: "t")
                }
            }
            #expect(try depth(db, "t") >= 3)
            let keys = try allEntries(db.snapshot(), "t").map(\.0)
            #expect(keys == (0 ..< 3000).map { Key($0).bytes })
            #expect(try db.snapshot().count(in: "t") == 3000)
        }
    }

    @Test("insert stores a new key and leaves a present one as it was, small or large, across reopen")
    func insertLeavesPresentKeys() throws {
        try withDatabase { db, fs in
            let large = [UInt8](repeating: 7, count: 3_000)   // over a 512-byte page's inline limit
            try db.write { tx in
                try tx.createTree("t")
                let inserted = try (0 ..< 2000).map { try tx.insert([UInt8($0 % 251)], forKey: Key($0).bytes, in: "t") }
                #expect(inserted.allSatisfy { $0 })
                let insertedLarge = try tx.insert(large, forKey: Key(-1).bytes, in: "t")
                #expect(insertedLarge)
            }
            let before = try db.statistics().logBytesSinceCheckpoint
            try db.write { tx in
                let refused = try stride(from: 0, to: 2000, by: 7).map { try tx.insert([0xFF], forKey: Key($0).bytes, in: "t") }
                #expect(!refused.contains(true))
                let refusedLarge = try tx.insert([1], forKey: Key(-1).bytes, in: "t")
                #expect(!refusedLarge)
            }
            // Refused inserts change nothing, so that transaction logged nothing.
            #expect(try db.statistics().logBytesSinceCheckpoint == before)
            #expect(try db.write { tx in try tx.insert(large, forKey: Key(5000).bytes, in: "t") })
            try db.close()
            let reopened = try Database(path: "/db", options: smallOptions(), fileSystem: fs)
            let snapshot = try reopened.snapshot()
            #expect(try snapshot.count(in: "t") == 2002)
            #expect(try snapshot.get(Key(7).bytes, in: "t") == [7])
            #expect(try snapshot.get(Key(-1).bytes, in: "t") == large)
            #expect(try snapshot.get(Key(5000).bytes, in: "t") == large)
        }
    }

    @Test("deleting merges and rebalances nodes until the tree is empty")
    func merges() throws {
        // The tree's own shape after each commit's deletes: with no write buffer, every
        // delete reaches the tree at its commit.
        var options = smallOptions()
        options.writeBufferEntries = nil
        try withDatabase(options) { db, _ in
            try db.write { tx in
                try tx.createTree("t")
                for i in 0 ..< 3000 { try tx.put([1, 2, 3], forKey: Key(i).bytes, in: "t") }
            }
            let tall = try depth(db, "t")
            var remaining = Set(0 ..< 3000)
            var rng = SeededGenerator(seed: 5)
            for batch in Array(remaining).shuffled(using: &rng).chunked(300) {
                try db.write { tx in
                    for i in batch {
                        let removed = try tx.delete(Key(i).bytes, in: "t")
                        #expect(removed)
                    }
                }
                remaining.subtract(batch)
                let keys = try allEntries(db.snapshot(), "t").map(\.0)
                #expect(keys == remaining.sorted().map { Key($0).bytes })
                let space = try db.analyzeSpace().trees[0]
                // No node stays nearly empty: merges keep the page count proportional.
                if remaining.count > 100 { #expect(space.leafPages <= remaining.count * 13 / 100 + 2) }
            }
            #expect(try db.snapshot().count(in: "t") == 0)
            #expect(try depth(db, "t") == 0)
            #expect(tall >= 3)
            let removedAgain = try db.write { tx in try tx.delete(Key(1).bytes, in: "t") }
            #expect(!removedAgain)
        }
    }

    @Test("keys up to the limit are stored; longer or empty keys are refused")
    func largeKeys() throws {
        try withDatabase { db, _ in
            let limit = 512 / 4
            try db.write { tx in
                try tx.createTree("t")
                for i in 0 ..< 200 {
                    var key = [UInt8](repeating: UInt8(i % 256), count: limit)
                    key[limit - 1] = UInt8(i / 256)
                    key[0] = UInt8(i)
                    try tx.put([UInt8(i)], forKey: key, in: "t")
                }
                #expect(throws: StrataError.keyTooLarge(size: limit + 1, limit: limit)) {
                    try tx.put([1], forKey: [UInt8](repeating: 1, count: limit + 1), in: "t")
                }
                #expect(throws: StrataError.emptyKey) { try tx.put([1], forKey: [], in: "t") }
            }
            try db.checkpoint()
            #expect(try db.snapshot().count(in: "t") == 200)
            #expect(try depth(db, "t") >= 3)
        }
    }

    @Test("large values move out of line at checkpoint and read back whole")
    func largeValues() throws {
        let fs = SimulatedFileSystem()
        var db: Database? = try Database(path: "/db", options: smallOptions(), fileSystem: fs)
        let sizes = [0, 1, 127, 128, 129, 1000, 70_000, 1 << 20]
        try db!.write { tx in
            try tx.createTree("blobs")
            for (i, size) in sizes.enumerated() {
                try tx.put((0 ..< size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ i) }, forKey: Key(i).bytes, in: "blobs")
            }
        }
        try db!.close()
        db = try Database(path: "/db", options: smallOptions(), fileSystem: fs)
        let space = try db!.analyzeSpace().trees[0]
        #expect(space.overflowValues == sizes.filter { $0 > 128 }.count)
        for (i, size) in sizes.enumerated() {
            let value = try db!.snapshot().get(Key(i).bytes, in: "blobs")
            #expect(value == (0 ..< size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ i) })
        }
    }

    /// Keys for the seek test: 8-byte integers (one length: a head holds each whole), or
    /// text of several lengths sharing more than eight leading bytes (heads tie, and the
    /// search compares the keys' bytes).
    enum SeekKeys: CaseIterable, CustomTestStringConvertible {
        case integers, longSharedText
        func key(_ i: Int) -> [UInt8] {
            switch self {
            case .integers: return Key(i).bytes
            // Zero-padded to three digits and then not: "…/007" < "…/030" < "…/1000".
            case .longSharedText: return Array("tenant/region/account/\(i < 0 ? "-" : "")\(String(format: "%03d", abs(i)))".utf8)
            }
        }
        var testDescription: String { self == .integers ? "integer keys" : "text keys of several lengths with a long shared prefix" }
    }

    @Test("a cursor's seeks forward in small and large steps, and back, land where a fresh cursor's do", arguments: SeekKeys.allCases)
    func seeksFromTheCurrentPosition(_ keys: SeekKeys) throws {
        try withDatabase { db, _ in
            try db.write { tx in
                try tx.createTree("t")
                for i in stride(from: 0, to: 3000, by: 3) { try tx.put(keys.key(i), forKey: keys.key(i), in: "t") }
            }
            let snapshot = try db.snapshot()
            let moving = try snapshot.cursor("t")
            var rng = SystemRandomNumberGenerator()
            var target = -5
            for _ in 0 ..< 2000 {
                // Mostly small steps forward (within a leaf), some long ones, some back.
                target += [1, 2, 3, 4, 7, 40, 500, -2, -30].randomElement(using: &rng)!
                target = min(max(target, -5), 3005)
                let fresh = try snapshot.cursor("t")
                let found = try moving.seek(to: keys.key(target))
                #expect(try found == fresh.seek(to: keys.key(target)), "seek to \(target)")
                if found { #expect(moving.key == fresh.key, "seek to \(target)") }
                if !found { target = -5 }
            }
        }
    }

    @Test("cursors move forward and backward and seek with inclusive and exclusive bounds")
    func cursors() throws {
        try withDatabase { db, _ in
            try db.write { tx in
                try tx.createTree("t")
                for i in stride(from: 0, to: 2000, by: 2) { try tx.put(Key(i).bytes, forKey: Key(i).bytes, in: "t") }
            }
            let snapshot = try db.snapshot()
            let cursor = try snapshot.cursor("t")
            #expect(try cursor.seek(to: Key(501).bytes))
            #expect(cursor.key == Key(502).bytes)
            #expect(try cursor.previous())
            #expect(cursor.key == Key(500).bytes)
            #expect(try cursor.seek(toLast: Key(501).bytes))
            #expect(cursor.key == Key(500).bytes)
            #expect(try cursor.seek(toLast: Key(500).bytes, inclusive: false))
            #expect(cursor.key == Key(498).bytes)
            #expect(try !cursor.seek(to: Key(5000).bytes))
            #expect(try !cursor.seek(toLast: Key(-1).bytes))
            #expect(try cursor.last())
            var backward = 0
            repeat { backward += 1 } while try cursor.previous()
            #expect(backward == 1000)
            #expect(!cursor.isValid)

            func scan(_ range: KeyRange, reverse: Bool = false) throws -> [Int] {
                var out: [Int] = []
                try snapshot.scan("t", in: range, reverse: reverse) { key, _ in
                    guard case .int(let v) = try Key(bytes: Array(key)).elements()[0] else { return false }
                    out.append(Int(v))
                    return true
                }
                return out
            }
            #expect(try scan(KeyRange(from: Key(10).bytes, to: Key(20).bytes)) == [10, 12, 14, 16, 18])
            #expect(try scan(KeyRange(from: Key(10).bytes, through: Key(20).bytes)) == [10, 12, 14, 16, 18, 20])
            #expect(try scan(KeyRange(lower: .excluded(Key(10).bytes), upper: .included(Key(14).bytes))) == [12, 14])
            #expect(try scan(KeyRange(lower: .excluded(Key(10).bytes), upper: .included(Key(16).bytes)), reverse: true) == [16, 14, 12])
            #expect(try scan(KeyRange(from: Key(9).bytes, to: Key(15).bytes), reverse: true) == [14, 12, 10])
            #expect(try scan(.all).count == 1000)
            #expect(try scan(.all, reverse: true) == Array(stride(from: 1998, through: 0, by: -2)))
        }
    }

    @Test("prefix scans return exactly the keys that start with the prefix")
    func prefixes() throws {
        try withDatabase { db, _ in
            let names = ["a", "ab", "abc", "abd", "b", "ba"]
            try db.write { tx in
                try tx.createTree("t")
                for name in names { for n in 0 ..< 50 { try tx.put([], forKey: Key(name, n).bytes, in: "t") } }
                try tx.put([], forKey: [0xFF, 0xFF], in: "t")
                try tx.put([], forKey: [0xFF, 0xFF, 0x01], in: "t")
            }
            var count = 0
            try db.snapshot().scan("t", in: .prefix(Key("ab").bytes)) { _, _ in count += 1; return true }
            #expect(count == 50)
            count = 0
            try db.snapshot().scan("t", in: .prefix(Key().appendingStringPrefix("ab"))) { _, _ in count += 1; return true }
            #expect(count == 150)
            count = 0
            try db.snapshot().scan("t", in: .prefix([0xFF, 0xFF])) { _, _ in count += 1; return true }
            #expect(count == 2)
        }
    }

    @Test("a cursor in a write transaction keeps its view while the transaction writes")
    func cursorStableDuringWrites() throws {
        try withDatabase { db, _ in
            try db.write { tx in
                try tx.createTree("t")
                for i in 0 ..< 500 { try tx.put([1], forKey: Key(i).bytes, in: "t") }
                let cursor = try tx.cursor("t")
                var seen = 0
                var more = try cursor.first()
                while more {
                    seen += 1
                    try tx.delete(cursor.key, in: "t")
                    try tx.put([2], forKey: Key(10_000 + seen).bytes, in: "t")
                    more = try cursor.next()
                }
                #expect(seen == 500)
                #expect(try tx.count(in: "t") == 500)
            }
        }
    }

    @Test("puts that fit their leaves change nodes in place only when the transaction owns them: a snapshot taken before reads its own values")
    func inPlacePutsLeaveSnapshotsAlone() throws {
        try withDatabase { db, _ in
            let keys = (0 ..< 3_000).map { Key($0 * 2).bytes }
            try db.write { tx in
                try tx.createTree("t")
                for key in keys { try tx.put([1], forKey: key, in: "t") }
            }
            #expect(try depth(db, "t") >= 3)
            let before = try db.snapshot()
            try db.write { tx in
                // Replacements and new keys between the old ones, in random order: after the
                // first put the root is this transaction's, so most go in place.
                var rng = SystemRandomNumberGenerator()
                for key in keys.shuffled(using: &rng).prefix(1_000) { try tx.put([2], forKey: key, in: "t") }
                for i in (0 ..< 1_000).shuffled(using: &rng) { try tx.put([3], forKey: Key(i * 2 + 1).bytes, in: "t") }
                #expect(try tx.count(in: "t") == 4_000)
            }
            var values: [[UInt8]] = []
            try before.scan("t", in: KeyRange()) { _, value in values.append(Array(value)); return true }
            #expect(values.count == 3_000 && values.allSatisfy { $0 == [1] })
            let after = try db.snapshot()
            #expect(try after.count(in: "t") == 4_000)
            #expect(try (0 ..< 1_000).allSatisfy { try after.get(Key($0 * 2 + 1).bytes, in: "t") == [3] })
            #expect(try keys.filter { try after.get($0, in: "t") == [2] }.count == 1_000)
        }
    }

    /// Where a put lands in a leaf another tree version shares, which the put copies first:
    /// a new key at either end or between two, a value replaced by a longer or a shorter
    /// one, and a key that lacks the prefix the leaf's heads are taken after.
    enum SharedLeafPut: String, CaseIterable, CustomTestStringConvertible {
        case first, middle, last, replacingLonger, replacingShorter, outsideThePrefix
        var testDescription: String { rawValue }

        /// The key and value put into a leaf holding `user/0010` … `user/0040` (value [1]).
        var put: (key: [UInt8], value: [UInt8]) {
            switch self {
            case .first: (Array("user/0001".utf8), [2])
            case .middle: (Array("user/0025x".utf8), [2, 2])
            case .last: (Array("user/0099".utf8), [2, 2, 2])
            case .replacingLonger: (Array("user/0020".utf8), [UInt8](repeating: 7, count: 40))
            case .replacingShorter: (Array("user/0040".utf8), [])
            case .outsideThePrefix: (Array("a".utf8), [9])
            }
        }
    }

    @Test("a put into a leaf an older version shares leaves that version as it was, and the new one holds every entry in order",
          arguments: SharedLeafPut.allCases, [false, true])
    func putIntoSharedLeaf(_ put: SharedLeafPut, deepTree: Bool) throws {
        try withDatabase { first, fs in
            var model: [[UInt8]: [UInt8]] = [:]
            try first.write { tx in
                try tx.createTree("t")
                // A deep tree puts the leaf under this transaction's branches (the in-place
                // path); a lone leaf is the root (the recursive path).
                let padding = deepTree ? (0 ..< 3_000).map { Array("zz/\($0)".utf8) } : []
                for key in (10 ... 40).map({ Array("user/00\($0)".utf8) }) + padding {
                    try tx.put([1], forKey: key, in: "t")
                    model[key] = [1]
                }
            }
            // Reopened, the leaves are read from their pages, their heads taken after the
            // prefix their keys share (which "a" lacks).
            try first.close()
            let db = try Database(path: "/db", options: smallOptions(), fileSystem: fs)
            let before = try db.snapshot()
            let old = model
            try db.write { tx in try tx.put(put.put.value, forKey: put.put.key, in: "t") }
            model[put.put.key] = put.put.value
            func entries(_ snapshot: Snapshot) throws -> [([UInt8], [UInt8])] {
                var seen: [([UInt8], [UInt8])] = []
                try snapshot.scan("t", in: KeyRange()) { key, value in seen.append((Array(key), Array(value))); return true }
                return seen
            }
            let sorted = { (m: [[UInt8]: [UInt8]]) in m.sorted { $0.key.lexicographicallyPrecedes($1.key) } }
            #expect(try entries(before).elementsEqual(sorted(old)) { $0.0 == $1.key && $0.1 == $1.value })
            let after = try db.snapshot()
            #expect(try entries(after).elementsEqual(sorted(model)) { $0.0 == $1.key && $0.1 == $1.value })
            #expect(try model.allSatisfy { try after.get($0.key, in: "t") == $0.value })
            #expect(try after.count(in: "t") == model.count)
            try db.checkpoint()
            #expect(try Inspector(db).verify().isEmpty)
        }
    }

    @Test("one million keys: insert, ordered iteration, random deletes")
    func millionKeys() throws {
        let n = TestScale.bigTreeKeys
        var options = Database.Options()
        options.durability = .relaxed
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let db = try Database(path: directory.file(), options: options)
        var order = Array(0 ..< n)
        var rng = SeededGenerator(seed: 77)
        order.shuffle(using: &rng)
        for chunk in order.chunked(100_000) {
            try db.write { tx in
                try tx.createTree("big", ifNotExists: true)
                for i in chunk { try tx.put(Key(i &* 7).bytes, forKey: Key(i).bytes, in: "big") }
            }
        }
        var expected = 0, mismatches = 0
        try db.snapshot().scan("big") { key, value in
            if !key.elementsEqual(Key(expected).bytes) || !value.elementsEqual(Key(expected &* 7).bytes) { mismatches += 1 }
            expected += 1
            return true
        }
        #expect(expected == n)
        #expect(mismatches == 0)
        let deleted = Set(order.prefix(n / 3))
        try db.write { tx in for i in deleted { try tx.delete(Key(i).bytes, in: "big") } }
        try db.close()
        let reopened = try Database(path: directory.file(), options: options)
        // Opening a checkpointed file of a million keys reads header, slots and one
        // checkpoint frame: O(log tail), not O(file).
        #expect(try reopened.statistics().bytesReadAtOpen < 2048)
        var remaining = 0, outOfOrder = 0
        var previous: [UInt8] = []
        try reopened.snapshot().scan("big") { key, _ in
            if !previous.lexicographicallyPrecedes(key) { outOfOrder += 1 }
            previous = Array(key)
            remaining += 1
            return true
        }
        #expect(outOfOrder == 0)
        #expect(remaining == n - deleted.count)
        for i in order.suffix(1000) { #expect(try reopened.snapshot().get(Key(i).bytes, in: "big") == Key(i &* 7).bytes) }
        for i in deleted.prefix(1000) { #expect(try reopened.snapshot().get(Key(i).bytes, in: "big") == nil) }
        try reopened.close()
    }
}

extension SeededGenerator {
    nonisolated(unsafe) static var shared = SeededGenerator(seed: 2024)
}

extension Array {
    func chunked(_ size: Int) -> [ArraySlice<Element>] {
        stride(from: 0, to: count, by: size).map { self[$0 ..< Swift.min($0 + size, count)] }
    }
}
