import StrataEngine

/// The records a query names by primary key — an index walk's, in index order, the sorted
/// keys `fetchInPrimaryKeyOrder` collects, or the points of an `==` or `IN` on the primary
/// key — fetched a batch at a time
/// (`TreeReading.withValues`): a snapshot walks a batch's lookups down the records tree
/// together, their waits for memory overlapping, where one lookup per key waited for each
/// in turn.
///
/// Batches start at 8 keys and double up to 64, so a query whose limit or visitor stops it
/// early looks up at most a few records it did not need. (W1 at 1M, strata-typed, the age
/// range query sorted by age, which walks the index in its order: 7.3–7.7 → 11.0–11.1
/// queries/s.)
struct IndexedFetch {
    private var keys = KeyBatch()
    private var batchSize = 8
    private static let largestBatch = 64
    /// The records tree.
    let tree: String
    /// The error for a key whose record is missing (an index entry naming no record); nil
    /// when such keys are skipped (an `IN` list's values that name no record).
    let missing: ((UnsafeRawBufferPointer) -> any Error)?

    init(tree: String, missing: ((UnsafeRawBufferPointer) -> any Error)?) {
        self.tree = tree
        self.missing = missing
    }

    /// Adds the primary key an index entry names; fetches the batch once it is full.
    /// - Returns: Whether the visitor wants more.
    mutating func add(_ primaryKey: UnsafeRawBufferPointer, engine: any TreeReading,
                      visit: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Bool) throws -> Bool {
        keys.append(primaryKey)
        guard keys.count >= batchSize else { return true }
        batchSize = min(batchSize * 2, Self.largestBatch)
        return try flush(engine: engine, visit: visit)
    }

    /// Fetches the keys added since the last fetch and visits their records in order, up to
    /// the first the visitor declines.
    /// - Returns: Whether the visitor wants more.
    mutating func flush(engine: any TreeReading, visit: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Bool) throws -> Bool {
        defer { keys.removeAll() }
        var more = true
        let keys = keys
        try engine.withValues(keys, in: tree) { i, value in
            guard more else { return }
            try keys.withKey(at: i) { key in
                guard let value else {
                    if let missing { throw missing(key) }
                    return
                }
                more = try visit(key, value)
            }
        }
        return more
    }
}
