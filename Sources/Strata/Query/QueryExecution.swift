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
    /// A first check on a record's bytes, on every path: a record it rejects is skipped
    /// undecoded.
    let bytesCheck: ByteCheck?
    let matches: (Record) throws -> Bool
    /// How two records compare by the query's sort keys; nil when it is unsorted. Ties are
    /// broken by primary key, on every path and backend.
    let order: ((Record, Record) -> ComparisonResult)?
    /// The sort order and conditions read from record bytes, when they can be (see `ByteOrder`).
    var byteOrder: ByteOrder? = nil
    let offset: Int
    let limit: Int?

    /// Visits the results with their primary keys. The key buffer is valid only during the
    /// call (streaming scans lend the tree's bytes: no copy per record).
    func run(_ access: ChosenAccess, _ visit: (UnsafeRawBufferPointer, Record) throws -> Bool) throws {
        if order == nil, access.readsByPrimaryKey {
            return try runInPrimaryKeyOrder(access, visit)
        }
        if access.plan.sortsInMemory {
            let order = self.order
            // The sort keys, then the primary key: a total order, the same on every backend.
            func precedes(_ a: ([UInt8], Record), _ b: ([UInt8], Record)) -> Bool {
                if let result = order?(a.1, b.1), result != .orderedSame { return result == .orderedAscending }
                return a.0.lexicographicallyPrecedes(b.0)
            }
            var found: [([UInt8], Record)]
            if let keep = access.plan.keepsTop, let byteOrder, let kept = try topByBytes(access, keep: keep, byteOrder: byteOrder) {
                found = kept
            } else if let keep = access.plan.keepsTop {
                // With a limit only the best `keep` can be results: a bounded heap.
                var top = BoundedTop(capacity: keep, precedes: precedes)
                try candidates(access, anyOrder: true) { key, record in
                    guard try matches(record) else { return true }
                    // A record after the worst kept one by the sort keys is not kept:
                    // rejected without copying its key.
                    if let worst = top.worst, order?(record, worst.1) == .orderedDescending { return true }
                    top.offer((Array(key), record))
                    return true
                }
                found = top.elements
            } else {
                found = []
                try candidates(access, anyOrder: true) { key, record in
                    if try matches(record) { found.append((Array(key), record)) }
                    return true
                }
            }
            found.sort(by: precedes)
            for (key, record) in window(found) where try !key.withUnsafeBytes({ try visit($0, record) }) { return }
            return
        }
        var page = ResultWindow(offset: offset, limit: limit)
        try candidates(access) { key, record in try page.pass(key, record, matches: matches, to: visit) }
    }

    func window<T>(_ results: [T]) -> ArraySlice<T> {
        let start = min(offset, results.count)
        let end = limit.map { min(start + $0, results.count) } ?? results.count
        return results[start ..< end]
    }

    /// An unsorted query through an index (or several trees' keys): its results come in
    /// primary-key order, as on every path, so the records are read in that order
    /// (`fetchInPrimaryKeyOrder`) and streamed — a limit stops the reads — instead of fetched
    /// in index order and sorted.
    private func runInPrimaryKeyOrder(_ access: ChosenAccess, _ visit: (UnsafeRawBufferPointer, Record) throws -> Bool) throws {
        var page = ResultWindow(offset: offset, limit: limit)
        try fetchInPrimaryKeyOrder(access) { key, bytes in
            if let bytesCheck, !bytesCheck.admits(bytes) { return true }
            return try page.pass(key, try decode(bytes), matches: matches, to: visit)
        }
    }

    /// Reads the records the access names by primary key — an index's ranges, or a union's
    /// or intersection's trees — in primary-key order (`ChosenAccess.primaryKeys`), in
    /// batches walked down the records tree together (`IndexedFetch`). For every path whose
    /// reader does not need index order (results sorted in memory, kept in a heap, counted,
    /// or wanted in primary-key order). (One cursor seeking from key to key, which found a
    /// key in the leaf it was on without a descent, was 9–10% slower: W1 at 1M, typed
    /// scan.index 11.0/11.1 → 12.1/12.1 queries/s; W4 first page by tag 236/242 → 257/266,
    /// count by two fields 476/451 → 489/554, binaries alternating.)
    private func fetchInPrimaryKeyOrder(_ access: ChosenAccess, _ visit: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Bool) throws {
        let keys = try access.primaryKeys(engine: engine, entry: entry)
        let (collection, trees) = (entry.collection, access.keyTrees)
        var fetch = IndexedFetch(tree: entry.recordsTree) { key in
            RecordError.corruptRecord(collection: collection, reason: "\(trees) names primary key \(Key(bytes: Array(key))) which has no record")
        }
        var more = true
        try keys.forEach { primaryKey in
            more = try fetch.add(primaryKey, engine: engine, visit: visit)
            return more
        }
        if more { _ = try fetch.flush(engine: engine, visit: visit) }
    }

    /// The primary keys a primary-key access names one by one (`CatalogEntry.exactKeys`).
    private func exactPrimaryKeys(_ access: ChosenAccess) -> [[UInt8]]? {
        guard access.source == .primaryKey, access.keySets == nil else { return nil }
        return entry.exactKeys(of: .primaryKey, access.ranges)
    }

    /// Visits the records of `keys` that exist, in the keys' order (backwards with
    /// `reverse`), looked up a batch at a time (`IndexedFetch`): one scan per point, each
    /// a descent with its own waits for memory, was what an `IN` list paid before.
    private func fetchPoints(_ keys: [[UInt8]], reverse: Bool, _ visit: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Bool) throws {
        var fetch = IndexedFetch(tree: entry.recordsTree, missing: nil)
        for key in reverse ? keys.reversed() : keys {
            guard try key.withUnsafeBytes({ try fetch.add($0, engine: engine, visit: visit) }) else { return }
        }
        _ = try fetch.flush(engine: engine, visit: visit)
    }

    /// Visits the records of the access path in its order, decoded, with their primary keys;
    /// records `admits` rejects are skipped undecoded.
    private func candidates(_ access: ChosenAccess, anyOrder: Bool = false, _ visit: (UnsafeRawBufferPointer, Record) throws -> Bool) throws {
        if let keys = exactPrimaryKeys(access) {
            return try fetchPoints(keys, reverse: access.reverse) { key, bytes in
                if let bytesCheck, !bytesCheck.admits(bytes) { return true }
                return try visit(key, try decode(bytes))
            }
        }
        if !access.readsByPrimaryKey {
            // The scans' hot loop, without the extra closure of `records` (measured: 4.5% of
            // W1 scan.filter's instructions), and with the byte check called directly, not
            // through a closure (two indirect calls per record, ~25 instructions). The two
            // closures differ only in the check: one closure testing the optional check
            // instead cost 105 more instructions per record (callgrind, W1 typed
            // scan.filter: 931 → 1,036 in session 19).
            for range in access.reverse ? access.ranges.reversed() : access.ranges {
                var more = true
                if let bytesCheck {
                    try engine.scan(entry.recordsTree, in: range, reverse: access.reverse) { key, value in
                        if !bytesCheck.admits(value) { return true }
                        more = try visit(key, try decode(value))
                        return more
                    }
                } else {
                    try engine.scan(entry.recordsTree, in: range, reverse: access.reverse) { key, value in
                        more = try visit(key, try decode(value))
                        return more
                    }
                }
                if !more { return }
            }
            return
        }
        try records(access, anyOrder: anyOrder) { key, bytes in
            if let bytesCheck, !bytesCheck.admits(bytes) { return true }
            return try visit(key, try decode(bytes))
        }
    }

    /// Visits the stored records of the access path in its order, with their primary keys
    /// (both buffers valid only during the call).
    /// With `anyOrder` (the reader sorts, keeps or counts what it gets), an index's records
    /// come in primary-key order, the cheapest to read.
    private func records(_ access: ChosenAccess, anyOrder: Bool = false, _ visit: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Bool) throws {
        if access.keySets != nil || (anyOrder && access.readsByPrimaryKey) { return try fetchInPrimaryKeyOrder(access, visit) }
        let ranges = access.reverse ? access.ranges.reversed() : access.ranges
        switch access.source {
        case nil, .primaryKey?:
            if let keys = exactPrimaryKeys(access) { return try fetchPoints(keys, reverse: access.reverse, visit) }
            for range in ranges {
                var more = true
                try engine.scan(entry.recordsTree, in: range, reverse: access.reverse) { key, value in
                    more = try visit(key, value)
                    return more
                }
                if !more { return }
            }
        case .index(let index)?:
            let collection = entry.collection
            func missing(_ key: UnsafeRawBufferPointer) -> any Error {
                RecordError.corruptRecord(collection: collection, reason: "index '\(index)' names primary key \(Key(bytes: Array(key))) which has no record")
            }
            var fetch = IndexedFetch(tree: entry.recordsTree, missing: missing)
            if let keys = entry.exactKeys(of: .index(index), ranges) {
                // An `==` or `IN` on a unique index of one field: its entries looked up a
                // batch at a time (values naming no entry skipped), their records likewise.
                var entries = IndexedFetch(tree: entry.indexTree(index), missing: nil)
                func fetchRecord(_ indexKey: UnsafeRawBufferPointer, _ primaryKey: UnsafeRawBufferPointer) throws -> Bool {
                    try fetch.add(primaryKey, engine: engine, visit: visit)
                }
                for key in keys {
                    guard try key.withUnsafeBytes({ try entries.add($0, engine: engine, visit: fetchRecord) }) else { return }
                }
                guard try entries.flush(engine: engine, visit: fetchRecord) else { return }
                _ = try fetch.flush(engine: engine, visit: visit)
                return
            }
            // Walking backwards, entries with equal index values come in descending
            // primary-key order; each such group is emitted in ascending order, the tie
            // order of every other path. (A unique index has no ties, and its keys do not
            // end with the primary key.)
            let groupsTies = access.reverse && !uniqueIndexes.contains(index)
            var groupValue: [UInt8]?
            var groupKeys: [[UInt8]] = []
            func fetchGroup() throws -> Bool {
                defer { groupKeys.removeAll(keepingCapacity: true) }
                for key in groupKeys.reversed() {
                    guard try key.withUnsafeBytes({ try fetch.add($0, engine: engine, visit: visit) }) else { return false }
                }
                return true
            }
            for range in ranges {
                var more = true
                try engine.scan(entry.indexTree(index), in: range, reverse: access.reverse) { indexKey, primaryKey in
                    guard groupsTies else {
                        more = try fetch.add(primaryKey, engine: engine, visit: visit)
                        return more
                    }
                    let key = Array(primaryKey)
                    let value = Array(indexKey.dropLast(key.count))
                    if value != groupValue {
                        more = try fetchGroup()
                        if !more { return false }
                        groupValue = value
                    }
                    groupKeys.append(key)
                    return true
                }
                if !more { return }
            }
            if groupsTies, try !fetchGroup() { return }
            _ = try fetch.flush(engine: engine, visit: visit)
        }
    }

    /// A sort with a limit whose order the record bytes give (`byteOrder`), and whose
    /// conditions the bytes decide: the best rows are kept as bytes, by their sort key, and
    /// only they are decoded. Nil when a record's bytes leave its order or a condition unsure
    /// (the caller then runs the decoding path).
    private func topByBytes(_ access: ChosenAccess, keep: Int, byteOrder: ByteOrder) throws -> [([UInt8], Record)]? {
        // The heap's key: the sort key's bytes, then the primary key (ties in primary-key order).
        var top = BoundedTop<[UInt8]>(capacity: keep) { $0.0.lexicographicallyPrecedes($1.0) }
        var sortKey: [UInt8] = []
        var unsure = false
        try records(access, anyOrder: true) { key, bytes in
            switch byteOrder.decides(bytes) {
            case false?: return true
            case nil: unsure = true; return false
            case true?: break
            }
            sortKey.removeAll(keepingCapacity: true)
            guard byteOrder.key(bytes, &sortKey) else { unsure = true; return false }
            sortKey.append(contentsOf: key)
            // Most records lose to the worst kept: they are compared, never copied.
            if let worst = top.worst, !sortKey.lexicographicallyPrecedes(worst.0) { return true }
            top.offer((sortKey, Array(bytes)))
            return true
        }
        if unsure { return nil }
        let kept = top.elements.sorted { $0.0.lexicographicallyPrecedes($1.0) }
        return try kept.map { sortKey, bytes in
            (Array(sortKey.suffix(sortKey.count - byteOrder.keyLength)), try bytes.withUnsafeBytes { try decode($0) })
        }
    }
}

/// Reads a query's sort order and conditions from record bytes: when every sort key is a
/// declared field of fixed-width key encoding (integers, Booleans), the keys' bytes —
/// inverted for descending keys — compare as the values do, and the query's conditions are
/// decided on the bytes (`RecordPrefilter.decides`).
struct ByteOrder {
    /// The sort key's length in bytes (fixed: fixed-width encodings).
    let keyLength: Int
    /// Appends the record's sort key; false when its bytes do not tell (field absent, another type).
    let key: (UnsafeRawBufferPointer, inout [UInt8]) -> Bool
    /// Whether the record meets the query's conditions; nil when its bytes do not tell.
    let decides: (UnsafeRawBufferPointer) -> Bool?
}

/// The best `capacity` elements offered, by `precedes`: a max-heap whose root is the worst
/// kept, so an element that cannot be kept costs one comparison.
struct BoundedTop<Record> {
    private(set) var elements: [([UInt8], Record)] = []
    let capacity: Int
    let precedes: (([UInt8], Record), ([UInt8], Record)) -> Bool

    init(capacity: Int, precedes: @escaping (([UInt8], Record), ([UInt8], Record)) -> Bool) {
        (self.capacity, self.precedes) = (capacity, precedes)
        elements.reserveCapacity(min(capacity, 4096))
    }

    /// The worst element kept, once full: an element that does not precede it is not kept.
    var worst: ([UInt8], Record)? { elements.count == capacity && capacity > 0 ? elements[0] : nil }

    mutating func offer(_ element: ([UInt8], Record)) {
        guard capacity > 0 else { return }
        if elements.count < capacity {
            elements.append(element)
            siftUp(elements.count - 1)
            return
        }
        guard precedes(element, elements[0]) else { return }
        elements[0] = element
        siftDown(0)
    }

    private mutating func siftUp(_ start: Int) {
        var child = start
        while child > 0 {
            let parent = (child - 1) / 2
            guard precedes(elements[parent], elements[child]) else { return }
            elements.swapAt(parent, child)
            child = parent
        }
    }

    private mutating func siftDown(_ start: Int) {
        var parent = start
        while true {
            let left = 2 * parent + 1, right = left + 1
            var worst = parent
            if left < elements.count, precedes(elements[worst], elements[left]) { worst = left }
            if right < elements.count, precedes(elements[worst], elements[right]) { worst = right }
            if worst == parent { return }
            elements.swapAt(parent, worst)
            parent = worst
        }
    }
}

/// The offset and limit, applied to records streamed in their final order. Not generic (only
/// `pass` is): in a query's unspecialized code a generic type's methods take its metadata,
/// which the runtime looks up on each call — once per record.
private struct ResultWindow {
    let offset: Int
    let limit: Int?
    var skipped = 0, emitted = 0

    init(offset: Int, limit: Int?) { (self.offset, self.limit) = (offset, limit) }

    /// Passes a match past the offset to `visit`; whether to read on. In line in each
    /// caller's closure: called, this generic method took its type's metadata per record.
    @inline(__always)
    mutating func pass<Record>(_ key: UnsafeRawBufferPointer, _ record: Record, matches: (Record) throws -> Bool,
                             to visit: (UnsafeRawBufferPointer, Record) throws -> Bool) throws -> Bool {
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

/// The check a query makes on each record's bytes before decoding it (`RecordPrefilter`),
/// and whether its answers are the query's: then a record it accepts is noted in
/// `accepted`, and the match check after decoding reads that instead of checking again.
struct ByteCheck {
    let prefilter: RecordPrefilter
    /// Set for a record the bytes accepted (every condition met), read by the same record's
    /// match check, on the query's thread; nil when the bytes do not decide the query.
    let accepted: AcceptedByBytes?

    /// False only when the record certainly does not match.
    @inline(__always)
    func admits(_ record: UnsafeRawBufferPointer) -> Bool {
        let decision = prefilter.decides(record)
        accepted?.value = decision == true
        return decision != false
    }
}

/// Whether the record just checked on its bytes was accepted by them (see `ByteCheck`).
final class AcceptedByBytes {
    @exclusivity(unchecked) var value = false
}
