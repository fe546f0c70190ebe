import Foundation
import StrataEngine

/// Runs a chosen access path: walks the primary-key tree or an index (fetching each record
/// by its primary key), checks every condition on each record, then either sorts and
/// windows the matches or streams them, stopping at the limit. Shared by typed queries
/// (`Record` is the model) and `storedump find` (`Record` is a `RecordValue`).
struct QueryExecution<Record> {
    let engine: any TreeReading
    let entry: CatalogEntry
    let uniqueIndexes: Set<String>
    let decode: (UnsafeRawBufferPointer) throws -> Record
    /// A first check on a record's bytes, on every path: false skips it undecoded.
    let admits: ((UnsafeRawBufferPointer) -> Bool)?
    let matches: (Record) throws -> Bool
    /// How two records compare by the query's sort keys; nil when it is unsorted. Ties are
    /// broken by primary key, on every path and backend.
    let order: ((Record, Record) -> ComparisonResult)?
    let offset: Int
    let limit: Int?

    /// Visits the results with their primary keys. The key buffer is valid only during the
    /// call (streaming scans lend the tree's bytes: no copy per record).
    func run(_ access: ChosenAccess, _ visit: (UnsafeRawBufferPointer, Record) throws -> Bool) throws {
        if access.plan.sortsInMemory {
            let order = self.order
            // The sort keys, then the primary key: a total order, the same on every backend.
            func precedes(_ a: ([UInt8], Record), _ b: ([UInt8], Record)) -> Bool {
                if let result = order?(a.1, b.1), result != .orderedSame { return result == .orderedAscending }
                return a.0.lexicographicallyPrecedes(b.0)
            }
            // With a limit only the best `keep` can be results: a bounded top-k, trimmed
            // whenever it doubles (n log k, memory for 2k records).
            let keep = access.plan.keepsTop
            var found: [([UInt8], Record)] = []
            try candidates(access) { key, record in
                guard try matches(record) else { return true }
                found.append((Array(key), record))
                if let keep, found.count >= max(2 * keep, 64) {
                    found.sort(by: precedes)
                    found.removeLast(found.count - keep)
                }
                return true
            }
            found.sort(by: precedes)
            for (key, record) in window(found) where try !key.withUnsafeBytes({ try visit($0, record) }) { return }
            return
        }
        var skipped = 0, emitted = 0
        try candidates(access) { key, record in
            guard try matches(record) else { return true }
            if skipped < offset {
                skipped += 1
                return true
            }
            if let limit, emitted >= limit { return false }
            emitted += 1
            guard try visit(key, record) else { return false }
            return limit.map { emitted < $0 } ?? true
        }
    }

    func window<T>(_ results: [T]) -> ArraySlice<T> {
        let start = min(offset, results.count)
        let end = limit.map { min(start + $0, results.count) } ?? results.count
        return results[start ..< end]
    }

    /// The record an index entry names, or nil when `admits` rejects its bytes.
    private func fetch(_ key: UnsafeRawBufferPointer, index: String) throws -> Record? {
        let found = try engine.withValue(key, in: entry.recordsTree) { bytes -> Record? in
            if let admits, !admits(bytes) { return nil }
            return try decode(bytes)
        }
        guard let found else {
            throw RecordError.corruptRecord(collection: entry.collection, reason: "index '\(index)' names primary key \(Key(bytes: Array(key))) which has no record")
        }
        return found
    }

    /// Visits the records of the access path in its order, with their primary keys.
    private func candidates(_ access: ChosenAccess, _ visit: (UnsafeRawBufferPointer, Record) throws -> Bool) throws {
        let ranges = access.reverse ? access.ranges.reversed() : access.ranges
        switch access.source {
        case nil, .primaryKey?:
            for range in ranges {
                var more = true
                try engine.scan(entry.recordsTree, in: range, reverse: access.reverse) { key, value in
                    if let admits, !admits(value) { return true }
                    more = try visit(key, try decode(value))
                    return more
                }
                if !more { return }
            }
        case .index(let index)?:
            // Walking backwards, entries with equal index values come in descending
            // primary-key order; each such group is emitted in ascending order, the tie
            // order of every other path. (A unique index has no ties, and its keys do not
            // end with the primary key.)
            let groupsTies = access.reverse && !uniqueIndexes.contains(index)
            var groupValue: [UInt8]?
            var groupKeys: [[UInt8]] = []
            func flush() throws -> Bool {
                defer { groupKeys.removeAll(keepingCapacity: true) }
                for key in groupKeys.reversed() {
                    let more = try key.withUnsafeBytes { key in try fetch(key, index: index).map { try visit(key, $0) } ?? true }
                    if !more { return false }
                }
                return true
            }
            for range in ranges {
                var more = true
                try engine.scan(entry.indexTree(index), in: range, reverse: access.reverse) { indexKey, primaryKey in
                    guard groupsTies else {
                        more = try fetch(primaryKey, index: index).map { try visit(primaryKey, $0) } ?? true
                        return more
                    }
                    let key = Array(primaryKey)
                    let value = Array(indexKey.dropLast(key.count))
                    if value != groupValue {
                        more = try flush()
                        if !more { return false }
                        groupValue = value
                    }
                    groupKeys.append(key)
                    return true
                }
                if !more { return }
            }
            _ = try flush()
        }
    }
}
