import Foundation
import Testing
@testable import StrataEngine

/// bbolt-style simulation: thousands of random transactions against the engine and against
/// a plain dictionary model, compared after every step; snapshots are compared against the
/// model as of their commit, across checkpoints, reopens and compactions.
@Suite("Model-based randomized test")
struct ModelBasedTests {
    typealias Model = [String: [[UInt8]: [UInt8]]]

    struct Checker {
        var rng: SeededGenerator
        let fs = SimulatedFileSystem()
        var db: Database
        var model: Model = [:]
        var snapshots: [(Snapshot, Model)] = []
        let options: Database.Options
        var failures = 0

        init(seed: UInt64, writeBuffer: Int?) throws {
            rng = SeededGenerator(seed: seed)
            var options = smallOptions(pageSize: 512, checkpointLogBytes: 4096)
            options.writeBufferEntries = writeBuffer
            // Odd seeds merge on the writer's thread, even ones beside it.
            options.mergesWriteBufferInBackground = seed % 2 == 0
            // Seed 4 also merges the buffers a millisecond after each pause in the commits,
            // racing the writer's next transaction.
            if seed == 4 { options.writeBufferIdleMerge = .milliseconds(1) }
            self.options = options
            db = try Database(path: "/model.strata", options: options, fileSystem: fs)
        }

        mutating func randomKey() -> [UInt8] {
            Int.random(in: 0 ..< 10, using: &rng) == 0
                ? Key("long", [UInt8](repeating: 7, count: Int.random(in: 0 ... 100, using: &rng)), Int.random(in: 0 ..< 50, using: &rng)).bytes
                : Key(Int.random(in: 0 ..< 600, using: &rng)).bytes
        }

        mutating func randomValue() -> [UInt8] {
            let size = Int.random(in: 0 ..< 20, using: &rng) == 0 ? Int.random(in: 129 ... 2000, using: &rng) : Int.random(in: 0 ... 60, using: &rng)
            let fill = UInt8.random(in: 0 ... 255, using: &rng)
            return (0 ..< size).map { fill &+ UInt8(truncatingIfNeeded: $0) }
        }

        mutating func randomRange() -> KeyRange {
            var bounds = [randomKey(), randomKey()].sorted { $0.lexicographicallyPrecedes($1) }
            if Bool.random(using: &rng) { bounds[0] = Key(Int.random(in: 0 ..< 600, using: &rng)).bytes }
            func bound(_ key: [UInt8]) -> KeyRange.Bound {
                [.unbounded, .included(key), .excluded(key)].randomElement(using: &rng)!
            }
            return KeyRange(lower: bound(bounds[0]), upper: bound(bounds[1]))
        }

        static func expected(_ tree: [[UInt8]: [UInt8]], _ range: KeyRange, reverse: Bool) -> [([UInt8], [UInt8])] {
            let sorted = tree.filter { range.contains($0.key) }.sorted { $0.key.lexicographicallyPrecedes($1.key) }.map { ($0.key, $0.value) }
            return reverse ? sorted.reversed() : sorted
        }

        mutating func check(_ condition: Bool, _ what: @autoclosure () -> String) {
            if !condition {
                failures += 1
                if failures < 10 { Issue.record(Comment(rawValue: what())) }
            }
        }

        mutating func compare(_ reader: some TreeReading, with model: Model, _ label: String) throws {
            check(reader.treeNames == model.keys.sorted(), "\(label): trees \(reader.treeNames) vs \(model.keys.sorted())")
            for (name, tree) in model {
                let actual = try allEntries(reader, name)
                let wanted = Self.expected(tree, .all, reverse: false)
                check(actual.map(\.0) == wanted.map(\.0) && actual.map(\.1) == wanted.map(\.1), "\(label): tree \(name) differs (\(actual.count) vs \(wanted.count) entries)")
                check(try reader.count(in: name) == tree.count, "\(label): count of \(name)")
            }
        }

        mutating func writeTransaction() throws {
            let tx = try db.beginWrite()
            var working = model
            let trees = ["a", "b", "c"]
            for _ in 0 ..< Int.random(in: 1 ... 25, using: &rng) {
                let tree = trees.randomElement(using: &rng)!
                guard working[tree] != nil else {
                    try tx.createTree(tree)
                    working[tree] = [:]
                    continue
                }
                switch Int.random(in: 0 ..< 100, using: &rng) {
                case 0 ..< 44:
                    let key = randomKey(), value = randomValue()
                    try tx.put(value, forKey: key, in: tree)
                    working[tree]![key] = value
                case 44 ..< 50:
                    let key = Bool.random(using: &rng) ? (working[tree]!.keys.randomElement(using: &rng) ?? randomKey()) : randomKey()
                    let value = randomValue()
                    let inserted = try tx.insert(value, forKey: key, in: tree)
                    check(inserted == (working[tree]![key] == nil), "insert result")
                    if inserted { working[tree]![key] = value }
                case 50 ..< 75:
                    let key = Bool.random(using: &rng) ? (working[tree]!.keys.randomElement(using: &rng) ?? randomKey()) : randomKey()
                    let removed = try tx.delete(key, in: tree)
                    check(removed == (working[tree]![key] != nil), "delete result")
                    working[tree]![key] = nil
                case 75 ..< 88:
                    let key = randomKey()
                    check(try tx.get(key, in: tree) == working[tree]![key], "get in transaction")
                    check(try tx.count(in: tree) == working[tree]!.count, "count in transaction")
                case 88 ..< 98:
                    let range = randomRange(), reverse = Bool.random(using: &rng)
                    var actual: [([UInt8], [UInt8])] = []
                    try tx.scan(tree, in: range, reverse: reverse) { key, value in
                        actual.append((Array(key), Array(value)))
                        return true
                    }
                    let wanted = Self.expected(working[tree]!, range, reverse: reverse)
                    check(actual.map(\.0) == wanted.map(\.0) && actual.map(\.1) == wanted.map(\.1), "range scan \(range) reverse \(reverse)")
                default:
                    try tx.dropTree(tree)
                    working[tree] = nil
                }
            }
            if Int.random(in: 0 ..< 7, using: &rng) == 0 {
                tx.rollback()
            } else {
                try tx.commit()
                model = working
            }
        }

        mutating func step() throws {
            switch Int.random(in: 0 ..< 100, using: &rng) {
            case 0 ..< 75:
                try writeTransaction()
            case 75 ..< 83:
                snapshots.append((try db.snapshot(), model))
                if snapshots.count > 6 { snapshots.removeFirst() }
            case 83 ..< 91:
                if let (snapshot, state) = snapshots.randomElement(using: &rng) { try compare(snapshot, with: state, "snapshot \(snapshot.sequence)") }
            case 91 ..< 95:
                try db.close()
                db = try Database(path: "/model.strata", options: options, fileSystem: fs)
            case 95 ..< 98:
                try db.checkpoint()
            default:
                try db.compact()
            }
            try compare(db.snapshot(), with: model, "latest")
        }
    }

    /// Three seeds writing straight into the trees, and three with writes buffered and
    /// merged every few entries (3), or at about a tree's eighth (40 entries at least), so
    /// that lookups, scans and counts meet pending writes, runs and merges at every step:
    /// on the writer's thread (seed 5) and beside it (4 and 6), and once commits pause (4).
    @Test("random transactions match a dictionary model, with reopens, checkpoints, compactions and old snapshots",
          arguments: [(1, nil), (2, nil), (3, nil), (4, 3), (5, 3), (6, 40)] as [(UInt64, Int?)])
    func randomTransactions(seed: UInt64, writeBuffer: Int?) throws {
        var checker = try Checker(seed: seed, writeBuffer: writeBuffer)
        for _ in 0 ..< TestScale.randomTransactions / 3 {
            try checker.step()
            if checker.failures > 0 { break }
        }
        for (snapshot, state) in checker.snapshots { try checker.compare(snapshot, with: state, "final snapshot \(snapshot.sequence)") }
        #expect(checker.failures == 0, "seed \(seed)")
    }
}
