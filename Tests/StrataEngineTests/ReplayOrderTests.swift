import Foundation
import Testing
@testable import StrataEngine

/// Opening replays the commits since the last checkpoint with their puts and deletes in key
/// order (`KeyOrderedReplay`), not in the order they were committed: these check that the
/// tree it builds is the one the commits made.
@Suite("Replay in key order")
struct ReplayOrderTests {
    /// Runs `commits` on a file whose handle writes no checkpoint, reopens it (a replay of
    /// every commit), and returns every entry of `trees` before and after.
    func entriesBeforeAndAfterReplay(trees: [String], _ commits: (Database) throws -> Void)
        throws -> (before: [[([UInt8], [UInt8])]], after: [[([UInt8], [UInt8])]], replayed: Int)
    {
        let fs = SimulatedFileSystem()
        var options = smallOptions(pageSize: 4096)
        options.checkpointOnClose = false
        let db = try Database(path: "/r.strata", options: options, fileSystem: fs)
        try commits(db)
        let before = try trees.map { try allEntries(db.snapshot(), $0) }
        try db.close()
        let reopened = try Database(path: "/r.strata", options: smallOptions(pageSize: 4096), fileSystem: fs)
        defer { try? reopened.close() }
        let after = try trees.map { try allEntries(reopened.snapshot(), $0) }
        return (before, after, try reopened.statistics().commitsReplayedAtOpen)
    }

    func same(_ a: [[([UInt8], [UInt8])]], _ b: [[([UInt8], [UInt8])]]) -> Bool {
        a.count == b.count && zip(a, b).allSatisfy { x, y in x.count == y.count && zip(x, y).allSatisfy { $0 == $1 } }
    }

    @Test("a key put, deleted and put again across commits keeps its last value")
    func eachKeyKeepsItsCommitOrder() throws {
        var random = SeededGenerator(seed: 29)
        let result = try entriesBeforeAndAfterReplay(trees: ["a", "b"]) { db in
            try db.write { tx in
                try tx.createTree("a")
                try tx.createTree("b")
            }
            for round in 0 ..< 200 {
                try db.write { tx in
                    for _ in 0 ..< 50 {
                        let key = Key(Int.random(in: 0 ..< 300, using: &random)).bytes
                        let tree = Bool.random(using: &random) ? "a" : "b"
                        if Int.random(in: 0 ..< 4, using: &random) == 0 {
                            _ = try tx.delete(key, in: tree)
                        } else {
                            try tx.put(Array("\(round)".utf8), forKey: key, in: tree)
                        }
                    }
                }
            }
        }
        #expect(result.replayed == 201)
        #expect(result.before[0].count > 100 && result.before[1].count > 100)
        let identical = same(result.before, result.after)
        #expect(identical, "the replayed tree differs from the committed one")
    }

    @Test("a tree dropped and created again between puts holds only the puts after it")
    func droppingATreeSeparatesTheOperationsAroundIt() throws {
        let result = try entriesBeforeAndAfterReplay(trees: ["t"]) { db in
            try db.write { tx in
                try tx.createTree("t")
                for i in 0 ..< 100 { try tx.put([1], forKey: Key(i).bytes, in: "t") }
            }
            try db.write { tx in
                try tx.dropTree("t")
                try tx.createTree("t")
                for i in stride(from: 0, to: 100, by: 10) { try tx.put([2], forKey: Key(i).bytes, in: "t") }
            }
        }
        #expect(result.after[0].count == 10)
        #expect(result.after[0].allSatisfy { $0.1 == [2] })
        let identical = same(result.before, result.after)
        #expect(identical, "the replayed tree differs from the committed one")
    }

    @Test("operations beyond one gathered batch are applied in their commit order too")
    func operationsAcrossBatchesKeepCommitOrder() throws {
        // The first two commits fill one batch, which is applied; the third overwrites
        // some of its keys from the next batch.
        let keys = KeyOrderedReplay.batchLimit / 2 + 1000
        let result = try entriesBeforeAndAfterReplay(trees: ["t"]) { db in
            for pass in 0 ..< 3 {
                try db.write { tx in
                    try tx.createTree("t", ifNotExists: true)
                    for i in 0 ..< keys where pass < 2 || i % 7 == 0 {
                        try tx.put([UInt8(pass)], forKey: Key(i).bytes, in: "t")
                    }
                }
            }
        }
        #expect(result.after[0].count == keys)
        #expect(result.after[0].filter { $0.1 == [2] }.count == (keys + 6) / 7)
        let identical = same(result.before, result.after)
        #expect(identical, "the replayed tree differs from the committed one")
    }
}
