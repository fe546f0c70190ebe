import Foundation
import Strata

/// One collection as a transaction reads it through SQL.
struct SQLCollection<M: Model> {
    let connection: any SQLConnection
    let dialect: SQLDialect
    let state: CollectionState
    let decoding: ModelDecoding<M>

    init(connection: any SQLConnection, dialect: SQLDialect, state: CollectionState) {
        (self.connection, self.dialect, self.state) = (connection, dialect, state)
        decoding = ModelDecoding(state)
    }

    var table: String { SQLNames.quoted(state.entry.collection) }

    func get(_ key: [UInt8]) throws -> M? {
        var model: M?
        try connection.query("SELECT \(SQLNames.recordColumn) FROM \(table) WHERE \(SQLNames.keyColumn) = \(dialect.placeholder(1))", [.blob(key)]) { row in
            model = try decode(try row.blob(at: 0))
            return false
        }
        return model
    }

    func decode(_ bytes: [UInt8]?) throws -> M {
        guard let bytes else { throw RecordError.corruptRecord(collection: state.entry.collection, reason: "a row's \(SQLNames.recordColumn) is NULL") }
        return try bytes.withUnsafeBytes { try decoding.decode($0) }
    }

    /// The statement that reads the query's rows (key and record), and how it was chosen.
    func select(_ query: Query<M>) -> (SQLSelection<M>, SQLStatement) {
        let selection = SQLSelection(query, state: state, dialect: dialect)
        var statement = selection.statement
        statement += "SELECT \(SQLNames.keyColumn), \(SQLNames.recordColumn) FROM \(table)" + selection.whereClause + " ORDER BY " + selection.orderBy
        if selection.windowInSQL, query.limit != nil || query.offset > 0 {
            // LIMIT -1 / ALL: SQLite needs a LIMIT before OFFSET.
            statement += " LIMIT " + (query.limit.map { statement.bind(.integer(Int64($0))) } ?? statement.bind(.integer(Int64.max)))
            if query.offset > 0 { statement += " OFFSET " + statement.bind(.integer(Int64(query.offset))) }
        }
        return (selection, statement)
    }

    /// Visits the query's results in order, after offset, up to limit.
    func execute(_ query: Query<M>, _ visit: (_ key: [UInt8], M) throws -> Bool) throws {
        let (selection, statement) = select(query)
        if selection.isEmpty { return }
        let projection = query.storedProjection.map(WidenedProjection<M>.init)
        func model(_ row: any SQLRow) throws -> M {
            guard let projection, let bytes = try row.blob(at: 1) else { return try decode(try row.blob(at: 1)) }
            return try bytes.withUnsafeBytes { try decoding.decode($0, keeping: projection) }
        }
        if selection.windowInSQL {
            try connection.query(statement.text, statement.arguments) { row in try visit(try key(row), try model(row)) }
            return
        }
        if selection.sortsInSwift {
            var found: [([UInt8], M)] = []
            try connection.query(statement.text, statement.arguments) { row in
                let m = try model(row)
                if try !selection.residual || query.matches(m) { found.append((try key(row), m)) }
                return true
            }
            query.sort(&found) { $0.1 }
            for (key, m) in query.window(found) where try !visit(key, m) { return }
            return
        }
        var skipped = 0, emitted = 0
        try connection.query(statement.text, statement.arguments) { row in
            let m = try model(row)
            guard try query.matches(m) else { return true }
            if skipped < query.offset {
                skipped += 1
                return true
            }
            if let limit = query.limit, emitted >= limit { return false }
            emitted += 1
            guard try visit(try key(row), m) else { return false }
            return query.limit.map { emitted < $0 } ?? true
        }
    }

    private func key(_ row: any SQLRow) throws -> [UInt8] {
        guard let key = try row.blob(at: 0) else { throw RecordError.corruptRecord(collection: state.entry.collection, reason: "a row's \(SQLNames.keyColumn) is NULL") }
        return key
    }

    func count(_ query: Query<M>) throws -> Int {
        let unsorted = Query<M>(query: query, droppingSort: true)
        let selection = SQLSelection(unsorted, state: state, dialect: dialect)
        if selection.isEmpty { return 0 }
        guard !selection.residual else {
            var n = 0
            try execute(unsorted) { _, _ in n += 1; return true }
            return n
        }
        var statement = selection.statement
        statement += "SELECT COUNT(*) FROM \(table)" + selection.whereClause
        var total = 0
        try connection.query(statement.text, statement.arguments) { row in
            total = Int(try row.integer(at: 0) ?? 0)
            return false
        }
        total = max(0, total - query.offset)
        return query.limit.map { min($0, total) } ?? total
    }

    func plan(_ query: Query<M>) -> QueryPlan {
        let (selection, statement) = select(query)
        var sql = statement.text
        for (i, argument) in statement.arguments.enumerated().reversed() {
            sql = sql.replacingOccurrences(of: dialect.placeholder(i + 1), with: Self.literal(argument))
        }
        var plan = QueryPlan(collection: state.entry.collection, access: selection.access, range: nil, residualFilter: selection.residual,
                             sortsInMemory: selection.sortsInSwift, stopsAfter: selection.windowInSQL || selection.sortsInSwift ? nil : query.limit.map { query.offset + $0 })
        plan.sql = "\(dialect.name): " + sql
        return plan
    }

    /// An argument as `explain` shows it: a key as its decoded elements.
    private static func literal(_ value: SQLValue) -> String {
        switch value {
        // `k ++ FF` is "just above k" (`KeyRange.afterElements`).
        case .blob(let bytes) where bytes.last == 0xFF: "key(after \(Key(bytes: Array(bytes.dropLast()))))"
        case .blob(let bytes): "key\(Key(bytes: bytes))"
        case .integer(let i): "\(i)"
        case .text(let s): "'\(s)'"
        default: "\(value)"
        }
    }
}

/// Reads shared by the SQL read and write transactions, which differ in how they find a
/// collection.
protocol SQLCollectionReading: StorageReader {
    func collection<M: Model>(_ type: M.Type) throws -> SQLCollection<M>?
}

extension SQLCollectionReading {
    func read<M: Model>(_ type: M.Type, primaryKey: some KeyComponent) throws -> M? {
        try collection(type)?.get(Key(primaryKey).bytes)
    }

    func read<M: Model>(_ query: Query<M>) throws -> [M] {
        var models: [M] = []
        try forEach(query) { models.append($0); return true }
        return models
    }

    func forEach<M: Model>(_ query: Query<M>, _ body: (M) throws -> Bool) throws {
        try collection(M.self)?.execute(query) { try body($1) }
    }

    func count<M: Model>(_ query: Query<M>) throws -> Int {
        try collection(M.self)?.count(query) ?? 0
    }

    func plan<M: Model>(_ query: Query<M>) throws -> QueryPlan {
        guard let collection = try collection(M.self) else {
            return QueryPlan(collection: M.collectionName, access: .fullScan, range: nil, residualFilter: query.hasConditions, sortsInMemory: false, stopsAfter: nil)
        }
        return collection.plan(query)
    }
}

/// A read transaction of `SQLStorage`. A snapshot's catalog does not change, so each
/// collection's entry is read once per transaction (one round trip fewer per query on a server).
final class SQLReader: SQLCollectionReading {
    let storage: SQLStorage
    let connection: any SQLConnection
    private var states: [String: CollectionState?] = [:]

    init(storage: SQLStorage, connection: any SQLConnection) {
        (self.storage, self.connection) = (storage, connection)
    }

    func collection<M: Model>(_ type: M.Type) throws -> SQLCollection<M>? {
        let name = M.collectionName
        let state: CollectionState?
        if let known = states[name] {
            state = known
        } else {
            state = try storage.collection(name, in: connection)
            states[name] = state
        }
        guard let state else { return nil }
        return SQLCollection(connection: connection, dialect: storage.database.dialect, state: state)
    }

    func explain<M: Model>(_ query: Query<M>) throws -> QueryPlan { try plan(query) }
}
