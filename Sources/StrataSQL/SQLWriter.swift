import Foundation
import Strata

/// A write transaction of `SQLStorage`. The catalog rules are the Strata file's
/// (`CollectionRules`); rows, index keys and readable columns change together in the
/// database's transaction.
final class SQLWriter: SQLCollectionReading, StorageWriter {
    let storage: SQLStorage
    let connection: any SQLConnection
    private var dialect: SQLDialect { storage.database.dialect }
    private var states: [String: CollectionState] = [:]
    private var changedCatalog: Set<String> = []
    private var changedRecords: Set<String> = []
    /// Per model type: the collection's indexes it does not declare, maintained from the
    /// stored values.
    private var undeclaredIndexes: [ObjectIdentifier: [CatalogEntry.Index]] = [:]
    private var abortedBy: StorageError?

    init(storage: SQLStorage, connection: any SQLConnection) {
        (self.storage, self.connection) = (storage, connection)
    }

    func collection<M: Model>(_ type: M.Type) throws -> SQLCollection<M>? {
        if let state = states[M.collectionName] { return SQLCollection(connection: connection, dialect: dialect, state: state) }
        // Not prepared by this transaction: read its entry each time (a write may create it).
        guard let state = try storage.collection(M.collectionName, in: connection) else { return nil }
        return SQLCollection(connection: connection, dialect: dialect, state: state)
    }

    func explain<M: Model>(_ query: Query<M>) throws -> QueryPlan {
        try prepare(M.self)
        return try plan(query)
    }

    private func run(_ statement: SQLStatement) throws { try connection.execute(statement.text, statement.arguments) }

    private func table(_ state: CollectionState) -> String { SQLNames.quoted(state.entry.collection) }

    // MARK: Schema

    /// Creates the collection's table on first use and checks the model against its catalog,
    /// by the rules of the Strata file: indexes `M` declares are built when missing, others
    /// stay and are maintained, declared renames move the stored values.
    @discardableResult
    private func prepare<M: Model>(_ type: M.Type) throws -> CollectionState {
        let name = M.collectionName
        if let state = states[name], undeclaredIndexes[ObjectIdentifier(M.self)] != nil { return state }
        try CollectionRules.checkDeclaration(of: M.self)
        var state: CollectionState
        if let known = states[name] {
            state = known
        } else if let existing = try storage.collection(name, in: connection) {
            state = existing
        } else {
            try checkTableName(name)
            try connection.execute("CREATE TABLE \(SQLNames.quoted(name)) (\(SQLNames.keyColumn) \(dialect.bytesType) PRIMARY KEY, \(SQLNames.recordColumn) \(dialect.bytesType) NOT NULL)", [])
            state = CollectionState(CollectionRules.newEntry(for: M.self))
            changedCatalog.insert(name)
        }
        try moveRenamedFields(of: M.self, in: &state)
        let (declared, undeclared) = try state.check(M.self)
        states[name] = state
        for (index, definition) in zip(M.schema.indexes, declared) where !state.entry.indexes.contains(definition) {
            try build(index, of: M.self, state: state)
            state.entry.indexes.append(definition)
            states[name] = state
            changedCatalog.insert(name)
        }
        undeclaredIndexes[ObjectIdentifier(M.self)] = undeclared
        if state.recordReader(M.self) { changedCatalog.insert(name) }
        states[name] = state
        return state
    }

    private func checkTableName(_ name: String) throws {
        if let limit = dialect.maxIdentifierBytes, name.utf8.count > limit {
            throw StorageError.schemaMismatch(collection: name, reason: "\(dialect.name) table names are at most \(limit) bytes; give the model a shorter collectionName")
        }
        if name == SQLNames.catalogTable || name.lowercased().hasPrefix("sqlite_") || name.lowercased().hasPrefix("pg_") {
            throw StorageError.schemaMismatch(collection: name, reason: "'\(name)' is a name \(dialect.name) or Strata keeps for itself; give the model another collectionName")
        }
    }

    /// Adds an index's key column, fills it from every stored record, then creates the SQL
    /// index (unique for a unique index: a duplicate is found before, and named).
    private func build<M: Model>(_ index: IndexDefinition<M>, of type: M.Type, state: CollectionState) throws {
        let column = SQLNames.indexColumn(index.name)
        try connection.execute("ALTER TABLE \(table(state)) ADD COLUMN \(column) \(dialect.bytesType)", [])
        let access = SQLCollection<M>(connection: connection, dialect: dialect, state: state)
        var keys: [([UInt8], [UInt8])] = []
        try access.execute(Query<M>()) { key, model in
            keys.append((key, index.key(of: model).bytes))
            return true
        }
        if index.isUnique {
            var seen: Set<[UInt8]> = []
            for (_, value) in keys where !seen.insert(value).inserted {
                throw StorageError.uniqueViolation(collection: state.entry.collection, index: index.name, value: Key(bytes: value).description)
            }
        }
        for (key, value) in keys {
            var update = SQLStatement(dialect)
            update += "UPDATE \(table(state)) SET \(column) = \(update.bind(.blob(value))) WHERE \(SQLNames.keyColumn) = \(update.bind(.blob(key)))"
            try run(update)
        }
        let unique = index.isUnique ? "UNIQUE " : ""
        // Ties of a non-unique index come in primary-key order, as in the Strata file.
        let columns = index.isUnique ? column : "\(column), \(SQLNames.keyColumn)"
        try connection.execute("CREATE \(unique)INDEX \(SQLNames.sqlIndex(state.entry.collection, index.name)) ON \(table(state)) (\(columns))", [])
    }

    /// Moves the values of each field `M` declares renamed, in every row, and renames its
    /// readable column.
    private func moveRenamedFields<M: Model>(of type: M.Type, in state: inout CollectionState) throws {
        for rename in try state.pendingRenames(of: M.self) {
            var rows: [([UInt8], [UInt8])] = []
            try connection.query("SELECT \(SQLNames.keyColumn), \(SQLNames.recordColumn) FROM \(table(state))", []) { row in
                if let key = try row.blob(at: 0), let record = try row.blob(at: 1) { rows.append((key, record)) }
                return true
            }
            for (key, record) in rows {
                guard let moved = try CollectionRules.renaming(field: rename.fromID, to: rename.toID, in: record, state: state, names: (rename.from, rename.to)) else { continue }
                var update = SQLStatement(dialect)
                update += "UPDATE \(table(state)) SET \(SQLNames.recordColumn) = \(update.bind(.blob(moved))) WHERE \(SQLNames.keyColumn) = \(update.bind(.blob(key)))"
                try run(update)
            }
            let hadColumn = readableColumns(state).contains(rename.from)
            state.completeRename(rename)
            if hadColumn, readableColumns(state).contains(rename.to) {
                try connection.execute("ALTER TABLE \(table(state)) RENAME COLUMN \(SQLNames.quoted(rename.from)) TO \(SQLNames.quoted(rename.to))", [])
            }
            changedCatalog.insert(state.entry.collection)
            changedRecords.insert(state.entry.collection)
        }
    }

    /// The top-level fields with a readable column: scalars whose names the database takes.
    private func readableColumns(_ state: CollectionState) -> [String] {
        (state.entry.types ?? [:]).filter { $0.value.isScalar && SQLNames.hasReadableColumn($0.key, dialect: dialect) }.map(\.key).sorted()
    }

    // MARK: Writing

    private func checkNotAborted() throws {
        if case .uniqueViolation(let c, let i, let v)? = abortedBy { throw StorageError.transactionAborted(collection: c, index: i, value: v) }
    }

    @discardableResult
    func create<M: Model>(_ model: M) throws -> M { try write(model, mustBeNew: true) }

    @discardableResult
    func persist<M: Model>(_ model: M) throws -> M { try write(model, mustBeNew: false) }

    private func write<M: Model>(_ model: M, mustBeNew: Bool) throws -> M {
        try checkNotAborted()
        var state = try prepare(M.self)
        let schema = M.schema   // read once, as StrataWriter does
        var model = model
        if state.assignID(&model, schema: schema) { changedCatalog.insert(state.entry.collection) }
        let key = schema.primaryKey(of: model).bytes
        let exists = try SQLCollection<M>(connection: connection, dialect: dialect, state: state).contains(key)
        if mustBeNew, exists {
            throw StorageError.duplicateKey(collection: state.entry.collection, key: Key(bytes: key).description)
        }
        let (bytes, learned, catalogChanged) = try state.encodeRecord(model, schema: schema)
        if catalogChanged { changedCatalog.insert(state.entry.collection) }
        for field in learned where field.type.isScalar && SQLNames.hasReadableColumn(field.name, dialect: dialect) {
            try connection.execute("ALTER TABLE \(table(state)) ADD COLUMN \(SQLNames.quoted(field.name)) \(dialect.columnType(field.type))", [])
        }
        states[state.entry.collection] = state
        var indexKeys: [(CatalogEntry.Index, [UInt8])] = schema.indexes.map {
            (CatalogEntry.Index(name: $0.name, fields: $0.storedFieldNames, unique: $0.isUnique), $0.key(of: model).bytes)
        }
        let record = try RecordValue.decode(bytes, fields: state.fields, collection: state.entry.collection)
        for index in undeclaredIndexes[ObjectIdentifier(M.self)] ?? [] {
            guard let indexKey = index.key(of: record, primaryKey: []) else {
                throw StorageError.schemaMismatch(collection: state.entry.collection, reason: "index '\(index.name)' covers a field whose stored value cannot be an index key (\(index.fields.joined(separator: ", ")))")
            }
            indexKeys.append((index, indexKey))
        }
        for (index, indexKey) in indexKeys where index.unique { try checkUnique(index.name, indexKey, key: key, state: state) }
        try upsert(key: key, record: bytes, value: record, indexKeys: indexKeys.map { ($0.0.name, $0.1) }, state: state)
        changedRecords.insert(state.entry.collection)
        return model
    }

    /// A unique index's key held by another row: the transaction can no longer commit.
    private func checkUnique(_ index: String, _ indexKey: [UInt8], key: [UInt8], state: CollectionState) throws {
        var statement = SQLStatement(dialect)
        statement += "SELECT 1 FROM \(table(state)) WHERE \(SQLNames.indexColumn(index)) = \(statement.bind(.blob(indexKey))) AND \(SQLNames.keyColumn) <> \(statement.bind(.blob(key)))"
        var taken = false
        try connection.query(statement.text, statement.arguments) { _ in taken = true; return false }
        guard taken else { return }
        let violation = StorageError.uniqueViolation(collection: state.entry.collection, index: index, value: Key(bytes: indexKey).description)
        abortedBy = violation
        throw violation
    }

    private func upsert(key: [UInt8], record: [UInt8], value: RecordValue, indexKeys: [(String, [UInt8])], state: CollectionState) throws {
        var columns = [SQLNames.keyColumn, SQLNames.recordColumn]
        var statement = SQLStatement(dialect)
        var values = [statement.bind(.blob(key)), statement.bind(.blob(record))]
        for (index, indexKey) in indexKeys {
            columns.append(SQLNames.indexColumn(index))
            values.append(statement.bind(.blob(indexKey)))
        }
        for field in readableColumns(state) {
            columns.append(SQLNames.quoted(field))
            values.append(statement.bind(value.value(atPath: [field])?.sqlValue ?? .null))
        }
        let updates = columns.dropFirst().map { "\($0) = excluded.\($0)" }.joined(separator: ", ")
        statement += "INSERT INTO \(table(state)) (\(columns.joined(separator: ", "))) VALUES (\(values.joined(separator: ", "))) "
            + "ON CONFLICT (\(SQLNames.keyColumn)) DO UPDATE SET \(updates)"
        try run(statement)
    }

    @discardableResult
    func erase<M: Model>(_ type: M.Type, primaryKey: some KeyComponent) throws -> Bool {
        try checkNotAborted()
        guard try collection(type) != nil else { return false }
        return try erase(key: Key(primaryKey).bytes, state: try prepare(type))
    }

    private func erase(key: [UInt8], state: CollectionState) throws -> Bool {
        var statement = SQLStatement(dialect)
        statement += "DELETE FROM \(table(state)) WHERE \(SQLNames.keyColumn) = \(statement.bind(.blob(key))) RETURNING \(SQLNames.keyColumn)"
        var existed = false
        try connection.query(statement.text, statement.arguments) { _ in existed = true; return true }
        if existed { changedRecords.insert(state.entry.collection) }
        return existed
    }

    @discardableResult
    func erase<M: Model>(_ query: Query<M>) throws -> Int {
        try checkNotAborted()
        guard try collection(M.self) != nil else { return 0 }
        let state = try prepare(M.self)
        var keys: [[UInt8]] = []
        try SQLCollection<M>(connection: connection, dialect: dialect, state: state).execute(query) { key, _ in
            keys.append(key)
            return true
        }
        for key in keys { _ = try erase(key: key, state: state) }
        return keys.count
    }

    func eraseAll<M: Model>(_ type: M.Type) throws {
        try checkNotAborted()
        guard try collection(type) != nil else { return }
        let state = try prepare(type)
        try connection.execute("DELETE FROM \(table(state))", [])
        changedRecords.insert(state.entry.collection)
    }

    func dropIndex(_ index: String, from collection: String) throws {
        guard var state = try states[collection] ?? storage.collection(collection, in: connection) else {
            throw StorageError.collectionNotFound(collection, existing: try collectionNames())
        }
        guard state.entry.indexes.contains(where: { $0.name == index }) else {
            throw StorageError.indexNotFound(collection: collection, index: index, existing: state.entry.indexes.map(\.name))
        }
        try connection.execute("DROP INDEX \(SQLNames.sqlIndex(collection, index))", [])
        try connection.execute("ALTER TABLE \(table(state)) DROP COLUMN \(SQLNames.indexColumn(index))", [])
        state.entry.indexes.removeAll { $0.name == index }
        states[collection] = state
        undeclaredIndexes = [:]
        changedCatalog.insert(collection)
    }

    private func collectionNames() throws -> [String] {
        var names: [String] = []
        try connection.query("SELECT collection FROM \(SQLNames.catalogTable) ORDER BY collection", []) { row in
            if let bytes = try row.blob(at: 0) { names.append(String(decoding: bytes, as: UTF8.self)) }
            return true
        }
        return names
    }

    // MARK: Commit

    /// Writes the changed catalog entries; returns the collections whose records changed.
    /// - Throws: `StorageError.transactionAborted` after a unique violation.
    func finish() throws -> Set<String> {
        try checkNotAborted()
        for name in changedCatalog {
            guard let state = states[name] else { continue }
            var statement = SQLStatement(dialect)
            let entry = String(decoding: try state.current.encoded(), as: UTF8.self)
            statement += "INSERT INTO \(SQLNames.catalogTable) (collection, entry) VALUES (\(statement.bind(.text(name))), \(statement.bind(.text(entry)))) "
                + "ON CONFLICT (collection) DO UPDATE SET entry = excluded.entry"
            try run(statement)
        }
        return changedRecords
    }
}

extension SQLCollection {
    func contains(_ key: [UInt8]) throws -> Bool {
        var found = false
        try connection.query("SELECT 1 FROM \(table) WHERE \(SQLNames.keyColumn) = \(dialect.placeholder(1))", [.blob(key)]) { _ in found = true; return false }
        return found
    }
}
