import Foundation
import Strata

/// A query that runs only when asked (the article's lazy fetcher): conditions, order,
/// window, then `fetch()`, `first()` or `count()`. Conditions on indexed fields use the
/// indexes (Strata's planner); `explain()` shows the plan.
///
/// ```swift
/// let adults = try User.query(on: db)
///     .where(\.age >= 18)
///     .where(.like(\.name, "A%"))
///     .order(by: \.name)
///     .limit(10)
///     .fetch()
/// ```
public struct Fetcher<M: ActiveRecord>: @unchecked Sendable {
    var query = Query<M>()
    let context: (any RecordContext)?
    var shuffled = false

    init(context: (any RecordContext)?) { self.context = context }

    /// Adds a condition (conditions are AND-ed); indexed ones are answered from the index.
    ///
    /// - Parameter filter: The condition, e.g. `\.age >= 18`.
    /// - Returns: A new fetcher; this one is unchanged.
    public func `where`(_ filter: Filter<M>) -> Fetcher { with { $0.query = $0.query.filter(filter) } }
    /// Adds a Foundation predicate.
    ///
    /// - Parameter predicate: The `#Predicate` to add.
    /// - Returns: A new fetcher.
    public func `where`(_ predicate: Predicate<M>) -> Fetcher { with { $0.query = $0.query.filter(predicate) } }

    /// Orders by a field; later calls break ties.
    ///
    /// - Parameters:
    ///   - keyPath: The field to order by.
    ///   - ascending: Smallest first (`true`, the default) or largest first.
    /// - Returns: A new fetcher.
    public func order<V: Comparable>(by keyPath: KeyPath<M, V> & Sendable, ascending: Bool = true) -> Fetcher {
        with { $0.query = $0.query.sorted(by: keyPath, ascending: ascending) }
    }

    /// Decodes only these fields (and `id`, `createdAt`, `updatedAt`, and what the conditions
    /// and order read); the others read as zero or nil without being decoded. Saving such a
    /// record is safe: untouched fields are not changed fields, so the stored ones stay.
    ///
    /// - Parameter fields: The properties to decode.
    /// - Returns: A new fetcher.
    public func only(_ fields: PartialKeyPath<M>...) -> Fetcher {
        with { $0.query = $0.query.only(Self.names(fields).union(Self.recordFields)) }
    }

    /// Decodes every field except these (see `only`).
    ///
    /// - Parameter fields: The properties to leave undecoded.
    /// - Returns: A new fetcher.
    public func except(_ fields: PartialKeyPath<M>...) -> Fetcher {
        with { $0.query = $0.query.except(Self.names(fields).subtracting(Self.recordFields)) }
    }

    /// The fields every record keeps, whatever the projection.
    private static var recordFields: Set<String> { ["id", "createdAt", "updatedAt"] }

    private static func names(_ keyPaths: [PartialKeyPath<M>]) -> Set<String> { Set(keyPaths.map { M.schema.description.name(of: $0) }) }

    /// Results in random order (applied before `limit` and `offset`).
    ///
    /// - Returns: A new fetcher.
    public func randomOrder() -> Fetcher { with { $0.shuffled = true } }
    /// At most `count` records.
    ///
    /// - Parameter count: The most records to return.
    /// - Returns: A new fetcher.
    public func limit(_ count: Int) -> Fetcher { with { $0.query = $0.query.limit(count) } }
    /// Skips the first `count` records.
    ///
    /// - Parameter count: How many records to skip.
    /// - Returns: A new fetcher.
    public func offset(_ count: Int) -> Fetcher { with { $0.query = $0.query.offset(count) } }

    /// Runs the query.
    /// - Throws: `RecordDatabaseError.noDefaultDatabase` without a context; the storage's
    ///   errors.
    /// - Returns: The matching records.
    public func fetch() throws -> [M] {
        try RecordDatabase.context(context).read { try results(from: $0) }
    }

    /// The records this fetcher selects, read through `reader`.
    private func results(from reader: any StorageReader) throws -> [M] {
        guard shuffled else { return try reader.read(query).map { try $0.loaded() } }
        var all = try reader.read(query.unwindowed)
        all.shuffle()
        let start = min(query.offset, all.count)
        let end = query.limit.map { min(start + $0, all.count) } ?? all.count
        return try all[start ..< end].map { try $0.loaded() }
    }

    /// The records now, then after every commit that changes the collection (see
    /// `Storage.observe`: one snapshot per result, coalesced, ended by cancellation).
    ///
    /// ```swift
    /// for try await adults in try User.query().where(\.age >= 18).order(by: \.name).observe() { show(adults) }
    /// ```
    /// - Throws: `RecordDatabaseError.observationNeedsDatabase` inside a transaction (a
    ///   transaction has no later commits to observe); `.noDefaultDatabase`.
    /// - Returns: The sequence of result arrays.
    public func observe() throws -> AsyncThrowingStream<[M], Error> {
        guard let database = try RecordDatabase.context(context) as? RecordDatabase else {
            throw RecordDatabaseError.observationNeedsDatabase
        }
        let fetcher = self
        return database.storage.observe(collections: [M.collectionName], isDuplicate: nil) { try fetcher.results(from: $0) }
    }

    /// The first record the query returns, or nil.
    /// - Throws: as `fetch()`.
    /// - Returns: The first match, or nil.
    public func first() throws -> M? { try limit(1).fetch().first }

    /// `fetch()` off the cooperative thread pool.
    ///
    /// - Returns: The matching records.
    /// - Throws: As the synchronous `fetch()`.
    public func fetch() async throws -> [M] {
        let fetcher = self
        return try await offload { try fetcher.fetch() }
    }

    /// How many records match (answered from an index where the plan allows).
    /// - Throws: as `fetch()`.
    /// - Returns: The number of matches.
    public func count() throws -> Int { try RecordDatabase.context(context).read { try $0.count(query) } }

    /// How the query will run: which tree and range, and what is checked per record.
    ///
    /// - Returns: The plan, with the alternatives considered and their estimated rows.
    /// - Throws: `RecordDatabaseError.noDefaultDatabase` without a context; the storage's errors.
    public func explain() throws -> QueryPlan { try RecordDatabase.context(context).read { try $0.explain(query) } }

    private func with(_ change: (inout Fetcher) -> Void) -> Fetcher {
        var copy = self
        change(&copy)
        return copy
    }
}

extension Query {
    /// The same conditions and order without offset and limit.
    var unwindowed: Query { limit(Int.max).offset(0) }
}

extension ActiveRecord {
    /// A lazy fetcher over this type's records.
    ///
    /// - Parameter context: The database or transaction to read; the default database when nil.
    /// - Returns: A fetcher of every record, in id order, until narrowed.
    public static func query(on context: (any RecordContext)? = nil) -> Fetcher<Self> { Fetcher(context: context) }
}
