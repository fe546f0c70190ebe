import Foundation
@testable import StrataEngine

/// Commits numbered 1, 2, 3, …: commit n writes several keys (so a partial commit would
/// show), some values large enough to go out of line, and deletes an older key now and
/// then. `expected(through:)` is the exact content after commit n.
enum NumberedWorkload {
    static let tree = "numbers"

    static func changes(of n: Int) -> (puts: [([UInt8], [UInt8])], deletes: [[UInt8]]) {
        let puts = (0 ..< 1 + n % 4).map { part -> ([UInt8], [UInt8]) in
            let size = n % 9 == 0 ? 700 : 10 + (n * 13 + part) % 90
            return (Key(n, part).bytes, (0 ..< size).map { UInt8(truncatingIfNeeded: n &* 3 &+ part &+ $0) })
        }
        return (puts, n % 5 == 0 && n > 6 ? [Key(n - 6, 0).bytes] : [])
    }

    static func commit(_ n: Int, to db: Database) throws {
        try db.write { tx in
            try tx.createTree(tree, ifNotExists: true)
            for (key, value) in changes(of: n).puts { try tx.put(value, forKey: key, in: tree) }
            for key in changes(of: n).deletes { try tx.delete(key, in: tree) }
        }
    }

    /// The content after each commit: index 0 is the empty database.
    static func states(through last: Int) -> [[[UInt8]: [UInt8]]] {
        var states: [[[UInt8]: [UInt8]]] = [[:]]
        var current: [[UInt8]: [UInt8]] = [:]
        for n in stride(from: 1, through: last, by: 1) {
            for (key, value) in changes(of: n).puts { current[key] = value }
            for key in changes(of: n).deletes { current[key] = nil }
            states.append(current)
        }
        return states
    }

    /// The content of the database as a dictionary (empty when the tree does not exist).
    static func content(of db: Database) throws -> [[UInt8]: [UInt8]] {
        let snapshot = try db.snapshot()
        guard snapshot.hasTree(tree) else { return [:] }
        var content: [[UInt8]: [UInt8]] = [:]
        try snapshot.scan(tree) { key, value in
            content[Array(key)] = Array(value)
            return true
        }
        for (key, value) in content where try snapshot.get(key, in: tree) != value {
            throw StrataError.corruption(path: "test", offset: 0, reason: "get disagrees with scan")
        }
        return content
    }
}
