import Foundation
import StrataEngine

/// A description of which models to read: filters (key-path `Filter`s and `#Predicate`s,
/// all of which must hold), sort order, limit and offset. Queries are values; run them
/// with a `Storage` (`read`, `count`, `erase`, `explain`).
///
/// ```swift
/// let adults = User.query()
///     .filter(\.age >= 18)
///     .filter(#Predicate { $0.name.starts(with: "A") })
///     .sorted(by: \.name)
///     .limit(20)
/// let page = try storage.read(adults)
/// ```
public struct Query<M: Model>: Sendable {
    var filters: [Filter<M>] = []
    var predicates: [Predicate<M>] = []
    package var sortKeys: [SortKey<M>] = []
    /// At most this many models are returned; nil for all.
    public private(set) var limit: Int?
    /// This many matches are skipped first.
    public private(set) var offset = 0
    /// The stored fields to decode, when the query reads only some (`only`, `except`).
    public private(set) var projection: Projection?

    /// Which stored fields a query decodes; the others read as their zero values (or nil).
    /// A left-out field whose type has no zero value (`Date`, `UUID`, `URL`, an enum, a
    /// custom type) is decoded from its stored value instead, so every model projects.
    public enum Projection: Sendable, Equatable {
        case only(Set<String>)
        case except(Set<String>)

        func keeps(_ name: String) -> Bool {
            switch self {
            case .only(let names): names.contains(name)
            case .except(let names): !names.contains(name)
            }
        }

        /// The projection that also keeps `name`.
        func keeping(_ name: String) -> Projection {
            switch self {
            case .only(let names): .only(names.union([name]))
            case .except(let names): .except(names.subtracting([name]))
            }
        }
    }

    /// Every model of the type, in primary-key order; narrow it with `filter`, order it
    /// with `sorted`, page it with `offset` and `limit`.
    ///
    /// - Parameter type: The model type, which names the collection (inferred when omitted).
    public init(_ type: M.Type = M.self) {}

    /// The query with `filter` added: a model must also meet it (conditions are AND-ed).
    ///
    /// ```swift
    /// User.query().filter(\.age >= 18).filter(.in(\.city, ["Oslo", "Lima"]))
    /// ```
    ///
    /// - Parameter filter: The condition to add.
    /// - Returns: A new query; this one is unchanged.
    public func filter(_ filter: Filter<M>) -> Query {
        var copy = self
        copy.filters.append(filter)
        return copy
    }

    /// The query with a Foundation predicate added; the planner reads the conditions it
    /// can answer from indexes out of the predicate's expression tree.
    ///
    /// ```swift
    /// User.query().filter(#Predicate { $0.age >= 18 && $0.name.starts(with: "A") })
    /// ```
    ///
    /// - Parameter predicate: The `#Predicate` to add.
    /// - Returns: A new query; this one is unchanged.
    public func filter(_ predicate: Predicate<M>) -> Query {
        var copy = self
        copy.predicates.append(predicate)
        return copy
    }

    /// Sorts by a field; further calls add tie-breakers.
    ///
    /// - Parameters:
    ///   - keyPath: The field to sort by.
    ///   - ascending: Smallest first (`true`, the default) or largest first.
    /// - Returns: A new query; ties are broken by the primary key.
    public func sorted<V: Comparable>(by keyPath: KeyPath<M, V> & Sendable, ascending: Bool = true) -> Query {
        var copy = self
        copy.sortKeys.append(SortKey(keyPath: keyPath, ascending: ascending) { a, b in
            let x = a[keyPath: keyPath], y = b[keyPath: keyPath]
            return x < y ? .orderedAscending : x == y ? .orderedSame : .orderedDescending
        })
        return copy
    }

    /// Sorts by an optional field: nil first (as SQLite and SwiftData order NULL), then by
    /// value; descending puts nil last.
    ///
    /// ```swift
    /// Task.query().sorted(by: \.dueDate)   // dueDate: Date?
    /// ```
    ///
    /// - Parameters:
    ///   - keyPath: The optional field to sort by.
    ///   - ascending: Smallest first (`true`, the default) or largest first.
    /// - Returns: A new query; ties are broken by the primary key.
    public func sorted<V: Comparable>(by keyPath: KeyPath<M, V?> & Sendable, ascending: Bool = true) -> Query {
        var copy = self
        copy.sortKeys.append(SortKey(keyPath: keyPath, ascending: ascending) { a, b in
            switch (a[keyPath: keyPath], b[keyPath: keyPath]) {
            case (nil, nil): return .orderedSame
            case (nil, _): return .orderedAscending
            case (_, nil): return .orderedDescending
            case let (x?, y?): return x < y ? .orderedAscending : x == y ? .orderedSame : .orderedDescending
            }
        })
        return copy
    }

    /// Sorts with Foundation's `SortDescriptor`.
    ///
    /// - Parameter descriptor: The field and order; string comparisons use its comparator.
    /// - Returns: A new query.
    public func sorted(by descriptor: SortDescriptor<M>) -> Query {
        var copy = self
        copy.sortKeys.append(SortKey(keyPath: nil, ascending: true) { descriptor.compare($0, $1) })
        return copy
    }

    /// At most `count` models (negative counts as 0). With a sort and no index to read in
    /// order, only the best `offset + count` are kept while reading (a bounded top-k).
    ///
    /// - Parameter count: The most models to return.
    /// - Returns: A new query.
    public func limit(_ count: Int) -> Query {
        var copy = self
        copy.limit = max(0, count)
        return copy
    }

    /// Skips the first `count` matches (negative counts as 0). For deep pages prefer keyset
    /// paging: a filter on the sort field from the last model seen.
    ///
    /// - Parameter count: How many matches to skip.
    /// - Returns: A new query.
    public func offset(_ count: Int) -> Query {
        var copy = self
        copy.offset = max(0, count)
        return copy
    }

    /// Decodes only the named stored fields (plus those the conditions and sort read); the
    /// others read as zero or nil, and are never decoded — the article's "text fields without
    /// the heavy pictures". A left-out field with no zero value (Date, UUID, URL, enums) is
    /// decoded from its stored value.
    ///
    /// - Parameter fields: Stored names of the top-level fields to decode.
    /// - Returns: A new query.
    public func only(_ fields: some Sequence<String>) -> Query {
        var copy = self
        copy.projection = .only(Set(fields))
        return copy
    }

    /// Decodes every stored field except the named ones (see `only`).
    ///
    /// - Parameter fields: Stored names of the top-level fields to leave undecoded.
    /// - Returns: A new query.
    public func except(_ fields: some Sequence<String>) -> Query {
        var copy = self
        copy.projection = .except(Set(fields))
        return copy
    }

    /// The projection to apply to stored bytes, widened to the fields conditions and sort
    /// keys read; nil (decode everything) when a condition or sort reads the model in ways
    /// the planner cannot see.
    package var storedProjection: Projection? {
        guard let projection else { return nil }
        let (conditions, hasOpaque) = planTerm.conjuncts
        guard !hasOpaque, sortKeys.allSatisfy({ $0.keyPath != nil }) else { return nil }
        let read = Set((conditions.map(\.0) + sortKeys.compactMap(\.keyPath)).map { M.schema.description.name(of: $0) })
        switch projection {
        case .only(let names): return .only(names.union(read))
        case .except(let names): return .except(names.subtracting(read))
        }
    }

    package var hasConditions: Bool { !filters.isEmpty || !predicates.isEmpty }

    /// Whether `model` satisfies every filter and predicate.
    package func matches(_ model: M) throws -> Bool {
        for filter in filters where !filter.evaluate(model) { return false }
        for predicate in predicates where try !predicate.evaluate(model) { return false }
        return true
    }

    var planTerm: PlanTerm {
        .and(filters.map(\.plan) + predicates.map(PredicateAnalysis.plan))
    }

    /// The query as the planner sees it: fields are key paths.
    package func planRequest(collection: String) -> PlanRequest<AnyKeyPath> {
        let term = planTerm
        let (conditions, hasOpaque) = term.conjuncts
        return PlanRequest(collection: collection, conditions: conditions, hasOpaque: hasOpaque, elementConditions: term.elementConjuncts,
                           onlyFieldAndElementConditions: term.isFieldAndElementConditions, disjunctions: term.disjunctions,
                           hasConditions: hasConditions, sort: sortKeys.map { ($0.keyPath, $0.ascending) }, limit: limit, offset: offset)
    }

    /// Orders `items` by the sort keys applied to their models (stable).
    /// How two models compare by the sort keys (`.orderedSame` when unsorted or tied).
    package func compare(_ a: M, _ b: M) -> ComparisonResult {
        for key in sortKeys {
            let result = key.compare(a, b)
            if result != .orderedSame { return key.ascending ? result : result == .orderedAscending ? .orderedDescending : .orderedAscending }
        }
        return .orderedSame
    }

    package func sort<T>(_ items: inout [T], by model: (T) -> M) {
        guard !sortKeys.isEmpty else { return }
        let keys = sortKeys
        let indexed = items.enumerated().sorted { a, b in
            for key in keys {
                let result = key.compare(model(a.element), model(b.element))
                if result != .orderedSame { return (result == .orderedAscending) == key.ascending }
            }
            return a.offset < b.offset
        }
        items = indexed.map(\.element)
    }

    /// Applies offset and limit to a sorted result.
    package func window<T>(_ results: [T]) -> ArraySlice<T> {
        let start = min(offset, results.count)
        let end = limit.map { min(start + $0, results.count) } ?? results.count
        return results[start ..< end]
    }

    /// How many matching records are needed before sorting can be skipped and reading can stop.
    var needed: Int? { limit.map { offset + $0 } }
}

package struct SortKey<M>: @unchecked Sendable {
    /// The field, when sorting by a key path (the planner may then use an index's order).
    package let keyPath: AnyKeyPath?
    package let ascending: Bool
    let compare: (M, M) -> ComparisonResult
}

/// The access path chosen for a query, as returned by `explain`: which tree is read and how,
/// whether records are filtered after reading, sorted in memory, and read only in part.
public struct QueryPlan: Sendable, Equatable, CustomStringConvertible {
    /// How the records are reached.
    public enum Access: Sendable, Equatable {
        /// Every record of the collection.
        case fullScan
        /// A range of the primary-key tree.
        case primaryKeyRange
        /// Point lookups in the primary-key tree (`==`, `IN`).
        case primaryKeyPoints(count: Int)
        /// A range of the named index.
        case indexRange(index: String)
        /// Point lookups in the named index (`==`, `IN`).
        case indexPoints(index: String, count: Int)
        /// The named index walked in order, to return records sorted without sorting them.
        case indexOrder(index: String, descending: Bool)
        /// An OR read as the union of its branches' accesses (each a point or range access
        /// on the primary key or an index): their primary keys, merged without duplicates,
        /// name the records, which are read in primary-key order and checked against the
        /// whole condition.
        indirect case union([Access])
        /// An AND of conditions on fields with an index each, read as the primary keys both
        /// accesses find: each tree's keys are read, only the keys in both name records.
        indirect case intersection([Access])
    }

    /// The collection queried.
    public var collection: String
    /// The access path chosen.
    public var access: Access
    /// The range read, as decoded keys (nil for point lookups and full scans).
    public var range: String?
    /// Records read are checked against conditions the access path does not answer.
    public var residualFilter: Bool
    /// Results are sorted after reading.
    public var sortsInMemory: Bool
    /// Reading stops after this many matches (limit + offset), when no sort is needed.
    public var stopsAfter: Int?
    /// The statement a SQL backend runs (`SQLStorage`), with its database's name; the
    /// residual filter and in-memory sort are what it leaves to Swift. Nil on Strata files.
    public var sql: String?
    /// With an in-memory sort and a limit: only the best `limit + offset` matches are kept
    /// while reading (a bounded top-k, not a sort of every match).
    public var keepsTop: Int?
    /// The records an index (or a union or intersection of trees) names are fetched in
    /// primary-key order: its keys are read and sorted first, then the records read in that
    /// order, neighbours sharing tree pages. Unsorted results come in that order on every
    /// path, so such a read streams and stops at `stopsAfter`.
    public var fetchesInPrimaryKeyOrder = false
    /// The rows the chosen access reads, as the planner estimated them (counted on the tree's
    /// keys; a count that reached the point where the choice was clear is a lower bound).
    /// Nil where the planner does not estimate (SQL backends: see `sql`).
    public var estimatedRows: Int?
    /// The other ways the planner considered, with the rows each would read.
    public var alternatives: [Alternative] = []

    /// A way of running the query that the planner considered and did not choose.
    public struct Alternative: Sendable, Equatable, CustomStringConvertible {
        /// The access path.
        public var access: Access
        /// The rows it would read, as estimated.
        public var estimatedRows: Int
        public var description: String { "\(access) ~\(estimatedRows) rows" }
    }

    package init(collection: String, access: Access, range: String?, residualFilter: Bool, sortsInMemory: Bool, stopsAfter: Int?, sql: String? = nil) {
        (self.collection, self.access, self.range, self.residualFilter, self.sortsInMemory, self.stopsAfter, self.sql) =
            (collection, access, range, residualFilter, sortsInMemory, stopsAfter, sql)
    }

    public var description: String {
        var parts = ["\(collection): \(access)"]
        if let range { parts.append("range \(range)") }
        if fetchesInPrimaryKeyOrder { parts.append("fetched in primary-key order") }
        if let sql {
            // A SQL backend: the statement, then what Swift does with its rows.
            let swift = (residualFilter ? ["filter"] : []) + (sortsInMemory ? ["sort"] : []) + (stopsAfter.map { ["stop after \($0)"] } ?? [])
            parts.append(sql + (swift.isEmpty ? "" : "; then in Swift: " + swift.joined(separator: ", ")))
            return parts.joined(separator: ", ")
        }
        if residualFilter { parts.append("then filter") }
        if sortsInMemory { parts.append(keepsTop.map { "then sort, keeping the top \($0)" } ?? "then sort") }
        if let stopsAfter { parts.append("stop after \(stopsAfter)") }
        if let estimatedRows { parts.append("~\(estimatedRows) rows read") }
        var text = parts.joined(separator: ", ")
        if !alternatives.isEmpty { text += "; considered: " + alternatives.map(\.description).joined(separator: "; ") }
        return text
    }
}

/// The JSON of `storedump find --explain --json` and Studio's query view: every field, the
/// access path as text, and the whole plan as `text` (what `description` prints).
extension QueryPlan: Encodable {
    private enum CodingKeys: String, CodingKey {
        case collection, access, range, residualFilter, sortsInMemory, stopsAfter, keepsTop, fetchesInPrimaryKeyOrder, estimatedRows, alternatives, sql, text
    }

    /// Encodes the plan as JSON-ready fields (access as text, the description as `text`).
    /// - Parameter encoder: The encoder.
    /// - Throws: What the encoder throws.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(collection, forKey: .collection)
        try container.encode("\(access)", forKey: .access)
        try container.encodeIfPresent(range, forKey: .range)
        try container.encode(residualFilter, forKey: .residualFilter)
        try container.encode(sortsInMemory, forKey: .sortsInMemory)
        try container.encodeIfPresent(stopsAfter, forKey: .stopsAfter)
        try container.encodeIfPresent(keepsTop, forKey: .keepsTop)
        try container.encode(fetchesInPrimaryKeyOrder, forKey: .fetchesInPrimaryKeyOrder)
        try container.encodeIfPresent(estimatedRows, forKey: .estimatedRows)
        try container.encode(alternatives, forKey: .alternatives)
        try container.encodeIfPresent(sql, forKey: .sql)
        try container.encode(description, forKey: .text)
    }
}

extension QueryPlan.Access: CustomStringConvertible {
    /// The access as `explain()` prints it: `indexPoints(index: "tag", count: 1)`,
    /// `union(primaryKeyPoints(count: 1), indexRange(index: "age"))`.
    public var description: String {
        switch self {
        case .fullScan: "fullScan"
        case .primaryKeyRange: "primaryKeyRange"
        case .primaryKeyPoints(let count): "primaryKeyPoints(count: \(count))"
        case .indexRange(let index): "indexRange(index: \(String(reflecting: index)))"
        case .indexPoints(let index, let count): "indexPoints(index: \(String(reflecting: index)), count: \(count))"
        case .indexOrder(let index, let descending): "indexOrder(index: \(String(reflecting: index)), descending: \(descending))"
        case .union(let parts): "union(" + parts.map(\.description).joined(separator: ", ") + ")"
        case .intersection(let parts): "intersection(" + parts.map(\.description).joined(separator: ", ") + ")"
        }
    }
}

extension QueryPlan.Alternative: Encodable {
    private enum CodingKeys: String, CodingKey { case access, estimatedRows }

    /// Encodes the alternative's access (as text) and estimated rows.
    /// - Parameter encoder: The encoder.
    /// - Throws: What the encoder throws.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode("\(access)", forKey: .access)
        try container.encode(estimatedRows, forKey: .estimatedRows)
    }
}
