import Foundation
import Strata

/// Joins pair each fetched record with the record its foreign key names, as in SQL:
///
/// ```swift
/// let rows = try User.query(on: db).where(\.age > 30).join(Group.self, on: \.groupId)       // [(User, Group)]
/// let all  = try User.query(on: db).leftJoin(Group.self, on: \.groupId)                      // [(User, Group?)]
/// let byGroup = try User.query(on: db).rightJoin(Group.self, on: \.groupId)                  // [(User?, Group)]
/// ```
///
/// The fetcher's conditions, order and window apply to the left side (`M`); the right side
/// is every `O` (for right and full joins) or the ones the left side names.
extension Fetcher {
    /// Inner join: records whose key names an existing `O`, paired with it.
    ///
    /// - Parameters:
    ///   - other: The joined type.
    ///   - key: This type's foreign key.
    /// - Returns: The pairs, in this query's order.
    /// - Throws: As `fetch()`.
    public func join<O: ActiveRecord>(_ other: O.Type, on key: KeyPath<M, Int64?>) throws -> [(M, O)] {
        let (left, named) = try leftAndNamed(O.self, key)
        return left.compactMap { record in record[keyPath: key].flatMap { named[$0] }.map { (record, $0) } }
    }

    /// Left outer join: every record, with the `O` its key names or nil.
    ///
    /// - Parameters:
    ///   - other: The joined type.
    ///   - key: This type's foreign key.
    /// - Returns: The pairs, in this query's order.
    /// - Throws: As `fetch()`.
    public func leftJoin<O: ActiveRecord>(_ other: O.Type, on key: KeyPath<M, Int64?>) throws -> [(M, O?)] {
        let (left, named) = try leftAndNamed(O.self, key)
        return left.map { record in (record, record[keyPath: key].flatMap { named[$0] }) }
    }

    /// Right outer join: every `O` (in id order), with each record naming it, or nil when none does.
    ///
    /// - Parameters:
    ///   - other: The joined type.
    ///   - key: This type's foreign key.
    /// - Returns: The pairs.
    /// - Throws: As `fetch()`.
    public func rightJoin<O: ActiveRecord>(_ other: O.Type, on key: KeyPath<M, Int64?>) throws -> [(M?, O)] {
        try rightJoin(try fetch(), O.self, key)
    }

    /// Full outer join: the right join, then the records naming no existing `O`.
    ///
    /// - Parameters:
    ///   - other: The joined type.
    ///   - key: This type's foreign key.
    /// - Returns: The pairs.
    /// - Throws: As `fetch()`.
    public func fullJoin<O: ActiveRecord>(_ other: O.Type, on key: KeyPath<M, Int64?>) throws -> [(M?, O?)] {
        let left = try fetch()
        let right = try rightJoin(left, O.self, key)
        let matched = Set(right.compactMap { $0.0?.id })
        return right.map { ($0.0, Optional($0.1)) } + left.filter { !matched.contains($0.id) }.map { (Optional($0), nil) }
    }

    private func rightJoin<O: ActiveRecord>(_ left: [M], _ other: O.Type, _ key: KeyPath<M, Int64?>) throws -> [(M?, O)] {
        let byKey = Dictionary(grouping: left) { $0[keyPath: key] }
        return try O.all(on: context).flatMap { other -> [(M?, O)] in
            let matches = byKey[other.id] ?? []
            return matches.isEmpty ? [(nil, other)] : matches.map { ($0, other) }
        }
    }

    /// The fetched records and, by id, the `O`s their keys name.
    private func leftAndNamed<O: ActiveRecord>(_ other: O.Type, _ key: KeyPath<M, Int64?>) throws -> ([M], [Int64: O]) {
        let left = try fetch()
        let ids = Array(Set(left.compactMap { $0[keyPath: key] }))
        let context = try RecordDatabase.context(self.context)
        let named = try context.read { try $0.read(O.self, primaryKeys: ids) }
        return (left, Dictionary(try named.map { ($0.id, try $0.loaded()) }, uniquingKeysWith: { first, _ in first }))
    }
}
