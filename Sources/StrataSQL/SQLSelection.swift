import Foundation
import Strata
import StrataEngine

/// A typed query as SQL: the key-column ranges that answer its conditions, the order SQL
/// returns rows in, and what is left to Swift (conditions on other fields, sorts SQL cannot
/// order as Swift does, and then the window).
struct SQLSelection<M: Model> {
    /// A column SQL can constrain: the primary key's or an index's key encoding, keyed by
    /// its first field.
    struct KeyColumn {
        let name: String
        let firstField: AnyKeyPath
        /// The column holds exactly one field's key (a single-field primary key or index),
        /// so points can be compared with `IN`.
        let isSingleField: Bool
        let access: (_ isPoints: Bool, _ count: Int) -> QueryPlan.Access
    }

    var conditions: [String] = []
    var statement: SQLStatement
    /// No row can match (contradictory conditions).
    var isEmpty = false
    /// Conditions SQL does not answer are checked on each decoded model.
    var residual: Bool
    /// The rows are sorted in Swift after reading (in primary-key order from SQL).
    var sortsInSwift: Bool
    var orderBy: String
    var access: QueryPlan.Access = .fullScan

    init(_ query: Query<M>, state: CollectionState, dialect: SQLDialect) {
        statement = SQLStatement(dialect)
        let request = query.planRequest(collection: state.entry.collection)
        let columns = Self.keyColumns(state: state)
        var unanswered = false
        var grouped: [(AnyKeyPath, [FieldBounds])] = []
        for (field, bounds) in request.conditions {
            if let i = grouped.firstIndex(where: { $0.0 == field }) { grouped[i].1.append(bounds) } else { grouped.append((field, [bounds])) }
        }
        for (field, all) in grouped {
            guard let column = columns.first(where: { $0.firstField == field }) else {
                unanswered = true
                continue
            }
            guard let bounds = Planner.intersect(all) else {
                isEmpty = true
                continue
            }
            conditions.append(Self.condition(bounds, on: column, into: &statement))
            if access == .fullScan {
                if case .points(let points) = bounds { access = column.access(true, points.count) } else { access = column.access(false, 0) }
            }
        }
        residual = unanswered || request.hasOpaque
        // Unsorted results come in primary-key order on every backend. A sort on a column's
        // first field is SQL's when that order is Swift's: ascending or descending values,
        // ties in primary-key order.
        orderBy = SQLNames.keyColumn
        sortsInSwift = !query.sortKeys.isEmpty
        if query.sortKeys.count == 1, let path = query.sortKeys[0].keyPath,
           let column = columns.first(where: { $0.firstField == path && $0.isSingleField }) {
            let direction = query.sortKeys[0].ascending ? "ASC" : "DESC"
            orderBy = column.name == SQLNames.keyColumn ? "\(column.name) \(direction)" : "\(column.name) \(direction), \(SQLNames.keyColumn)"
            sortsInSwift = false
            if access == .fullScan, column.name != SQLNames.keyColumn {
                access = .indexOrder(index: String(column.name), descending: !query.sortKeys[0].ascending)
            }
        }
    }

    /// SQL answers the window too: nothing is filtered or sorted after reading.
    var windowInSQL: Bool { !residual && !sortsInSwift }

    var whereClause: String {
        if isEmpty { return " WHERE 1 = 0" }
        return conditions.isEmpty ? "" : " WHERE " + conditions.joined(separator: " AND ")
    }

    /// The primary key and every index `M` declares that the collection has built.
    private static func keyColumns(state: CollectionState) -> [KeyColumn] {
        let primaryKey = M.schema.primaryKey
        var columns = [KeyColumn(name: SQLNames.keyColumn, firstField: primaryKey[0].keyPath, isSingleField: primaryKey.count == 1) { isPoints, count in
            isPoints ? .primaryKeyPoints(count: count) : .primaryKeyRange
        }]
        for index in M.schema.indexes where state.entry.indexes.contains(where: { $0.name == index.name }) {
            let name = index.name
            columns.append(KeyColumn(name: SQLNames.indexColumn(name), firstField: index.fields[0].keyPath, isSingleField: index.fields.count == 1) { isPoints, count in
                isPoints ? .indexPoints(index: name, count: count) : .indexRange(index: name)
            })
        }
        return columns
    }

    /// The condition on `column` that holds exactly for keys within `bounds`. A point is
    /// the keys starting with its elements (a compound key continues with more fields).
    private static func condition(_ bounds: FieldBounds, on column: KeyColumn, into statement: inout SQLStatement) -> String {
        switch bounds {
        case .points(let points):
            if points.isEmpty { return "1 = 0" }
            if column.isSingleField {
                return "\(column.name) IN (" + points.map { statement.bind(.blob($0)) }.joined(separator: ", ") + ")"
            }
            return "(" + points.map { range(KeyRange.startingWith(elements: $0), on: column.name, into: &statement) }.joined(separator: " OR ") + ")"
        case .range(let lower, let upper):
            return range(KeyRange(lower: lower, upper: upper), on: column.name, into: &statement)
        }
    }

    private static func range(_ range: KeyRange, on column: String, into statement: inout SQLStatement) -> String {
        var parts: [String] = []
        switch range.lower {
        case .unbounded: break
        case .included(let key): parts.append("\(column) >= \(statement.bind(.blob(key)))")
        case .excluded(let key): parts.append("\(column) > \(statement.bind(.blob(key)))")
        }
        switch range.upper {
        case .unbounded: break
        case .included(let key): parts.append("\(column) <= \(statement.bind(.blob(key)))")
        case .excluded(let key): parts.append("\(column) < \(statement.bind(.blob(key)))")
        }
        return parts.isEmpty ? "\(column) IS NOT NULL" : "(" + parts.joined(separator: " AND ") + ")"
    }
}
