import Foundation
import StrataEngine

/// A write transaction of `StrataStorage`: records and their index entries change together.
final class StrataWriter: CollectionReading, StorageWriter {
    let storage: StrataStorage
    let transaction: WriteTransaction
    /// Collections touched by this transaction, with their (possibly changed) catalog.
    private var states: [String: CollectionState] = [:]
    private var changedCatalog: Set<String> = []
    /// Collections whose records changed: what commit observers are told.
    private var changedRecords: Set<String> = []
    /// Per model type: the collection's indexes it does not declare. They stay, and this
    /// transaction maintains them from the stored values (the catalog is the truth).
    private var undeclaredIndexes: [ObjectIdentifier: [CatalogEntry.Index]] = [:]
    /// Set by a unique violation: the transaction can no longer commit.
    private var abortedBy: StorageError?

    init(storage: StrataStorage, transaction: WriteTransaction) {
        self.storage = storage
        self.transaction = transaction
    }

    // MARK: Reading sees this transaction's writes

    /// Explaining in a write transaction prepares the collection first, so indexes the model
    /// declares are built and counted.
    func explain<M: Model>(_ query: Query<M>) throws -> QueryPlan {
        try prepare(M.self)
        return try plan(query)
    }

    func access<M: Model>(_ type: M.Type) throws -> CollectionAccess<M>? {
        if let state = states[M.collectionName] { return CollectionAccess(engine: transaction, state: state) }
        return try StrataReader(storage: storage, engine: transaction, catalogSequence: nil, accesses: nil).access(type)
    }

    // MARK: Schema

    /// Creates the collection on first use and checks the model against its catalog. The
    /// catalog is the truth: an index the model declares is built when missing and must match
    /// the stored definition; an index it does not declare stays and is maintained (only
    /// `StrataStorage.dropIndex` removes one); field types are checked on every write.
    @discardableResult
    private func prepare<M: Model>(_ type: M.Type) throws -> CollectionState {
        let name = M.collectionName
        if let state = states[name], undeclaredIndexes[ObjectIdentifier(M.self)] != nil { return state }
        try CollectionRules.checkDeclaration(of: M.self)
        var state: CollectionState
        if let known = states[name] {
            state = known
        } else if let existing = try storage.collectionForWriting(name, in: transaction) {
            state = existing
            if state.entry.types == nil { try learnTypesFromFirstRecord(&state) }
        } else {
            try transaction.createTree(CatalogEntry.tree, ifNotExists: true)
            try transaction.createTree(CatalogEntry.recordsTree(name), ifNotExists: true)
            state = CollectionState(CollectionRules.newEntry(for: M.self))
            changedCatalog.insert(name)
        }
        try moveRenamedFields(of: M.self, in: &state)
        let (declared, undeclared) = try state.check(M.self)
        states[name] = state
        for (index, definition) in zip(M.schema.indexes, declared) where !state.entry.indexes.contains(definition) {
            try transaction.createTree(state.entry.indexTree(index.name))
            try CollectionAccess<M>(engine: transaction, state: state).execute(Query<M>()) { key, model in
                try addIndexEntry(index, of: model, primaryKey: Array(key), state: state)
                return true
            }
            state.entry.indexes.append(definition)
            states[name] = state
            changedCatalog.insert(name)
        }
        undeclaredIndexes[ObjectIdentifier(M.self)] = undeclared
        if state.recordReader(M.self) { changedCatalog.insert(name) }
        states[name] = state
        return state
    }

    // MARK: Renamed fields

    /// Moves the values of each field `M` declares renamed (`StoredField.originalNames`)
    /// to the field's current name, in every record, in this transaction. Values are not
    /// decoded: each record's top-level field id changes, nothing else, so the index trees
    /// (whose keys hold values, not names) stay valid; the catalog's types and index
    /// definitions follow the new name.
    /// - Throws: `StorageError.schemaMismatch` when a record holds both names.
    private func moveRenamedFields<M: Model>(of type: M.Type, in state: inout CollectionState) throws {
        for rename in try state.pendingRenames(of: M.self) {
            var keys: [[UInt8]] = []
            try transaction.scan(state.entry.recordsTree) { key, _ in
                keys.append(Array(key))
                return true
            }
            for key in keys {
                guard let bytes = try transaction.get(key, in: state.entry.recordsTree),
                      let moved = try CollectionRules.renaming(field: rename.fromID, to: rename.toID, in: bytes, state: state, names: (rename.from, rename.to)) else { continue }
                try transaction.put(moved, forKey: key, in: state.entry.recordsTree)
            }
            state.completeRename(rename)
            changedCatalog.insert(state.entry.collection)
            storage.reportRename(collection: state.entry.collection, from: rename.from, to: rename.to, records: keys.count)
            changedRecords.insert(state.entry.collection)
        }
    }

    /// A file written before field types were recorded: take them from a stored record.
    private func learnTypesFromFirstRecord(_ state: inout CollectionState) throws {
        state.entry.types = [:]
        state.learn([])
        changedCatalog.insert(state.entry.collection)
        let cursor = try transaction.cursor(state.entry.recordsTree)
        // Against an empty type map, checking a record only learns its types.
        if try cursor.first() { try checkStoredTypes(try cursor.value(), of: RecordValue.self, state: &state) }
    }

    private func checkStoredTypes<M>(_ bytes: [UInt8], of model: M.Type, state: inout CollectionState) throws {
        if try !state.checkStoredTypes(bytes, of: M.self).isEmpty { changedCatalog.insert(state.entry.collection) }
    }

    // MARK: Index maintenance

    private func indexKey<M>(_ index: IndexDefinition<M>, of model: M, primaryKey: [UInt8]) -> [UInt8] {
        let key = index.key(of: model).bytes
        return index.isUnique ? key : key + primaryKey
    }

    private func addIndexEntry<M>(_ index: IndexDefinition<M>, of model: M, primaryKey: [UInt8], state: CollectionState) throws {
        try addIndexEntry(indexKey(index, of: model, primaryKey: primaryKey), index: index.name, unique: index.isUnique, primaryKey: primaryKey, state: state)
    }

    private func addIndexEntry(_ key: [UInt8], index: String, unique: Bool, primaryKey: [UInt8], state: CollectionState) throws {
        let tree = state.entry.indexTree(index)
        if unique, let owner = try transaction.get(key, in: tree), owner != primaryKey {
            let violation = StorageError.uniqueViolation(collection: state.entry.collection, index: index, value: Key(bytes: key).description)
            abortedBy = violation
            throw violation
        }
        try transaction.put(primaryKey, forKey: key, in: tree)
    }

    private func removeIndexEntry<M>(_ index: IndexDefinition<M>, of model: M, primaryKey: [UInt8], state: CollectionState) throws {
        try transaction.delete(indexKey(index, of: model, primaryKey: primaryKey), in: state.entry.indexTree(index.name))
    }

    /// The key of an index the writing model does not declare, from the record's stored
    /// values (as `storedump verify` checks indexes).
    private func storedIndexKey(_ index: CatalogEntry.Index, of record: RecordValue, primaryKey: [UInt8], collection: String) throws -> [UInt8] {
        guard let key = index.key(of: record, primaryKey: primaryKey) else {
            throw StorageError.schemaMismatch(collection: collection, reason: "index '\(index.name)' covers a field whose stored value cannot be an index key (\(index.fields.joined(separator: ", ")))")
        }
        return key
    }

    /// Moves the entries of the indexes `M` does not declare from the old record (if any)
    /// to the new one (if any).
    /// `old` is read only when there are such indexes: most writers declare every index.
    private func maintainUndeclaredIndexes<M>(of model: M.Type, key: [UInt8], old: () throws -> [UInt8]?, new: [UInt8]?, state: CollectionState) throws {
        guard let undeclared = undeclaredIndexes[ObjectIdentifier(M.self)], !undeclared.isEmpty else { return }
        let name = state.entry.collection
        let oldRecord = try old().map { try RecordValue.decode($0, fields: state.fields, collection: name) }
        let newRecord = try new.map { try RecordValue.decode($0, fields: state.fields, collection: name) }
        for index in undeclared {
            let oldKey = try oldRecord.map { try storedIndexKey(index, of: $0, primaryKey: key, collection: name) }
            let newKey = try newRecord.map { try storedIndexKey(index, of: $0, primaryKey: key, collection: name) }
            if oldKey == newKey { continue }
            if let oldKey { try transaction.delete(oldKey, in: state.entry.indexTree(index.name)) }
            if let newKey { try addIndexEntry(newKey, index: index.name, unique: index.unique, primaryKey: key, state: state) }
        }
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
        // Read once: in this unspecialized code each `M.schema` looks up `Schema<M>`'s
        // metadata and copies it (five reads were ~1,000 instructions of a typed insert).
        let schema = M.schema
        var model = model
        if state.assignID(&model, schema: schema) { changedCatalog.insert(state.entry.collection) }
        let key = schema.primaryKey(of: model).bytes
        if mustBeNew {
            // One descent: the record goes in unless the key is taken, and then nothing changed.
            let bytes = try encode(model, schema: schema, state: &state)
            guard try transaction.insert(bytes, forKey: key, in: state.entry.recordsTree) else {
                throw StorageError.duplicateKey(collection: state.entry.collection, key: Key(bytes: key).description)
            }
            try maintainIndexes(schema.indexes, of: model, key: key, bytes: bytes, replacing: nil, state: state)
        } else {
            let old = try CollectionAccess<M>(engine: transaction, state: state).get(key)
            let bytes = try encode(model, schema: schema, state: &state)
            try maintainIndexes(schema.indexes, of: model, key: key, bytes: bytes, replacing: old, state: state)
            try transaction.put(bytes, forKey: key, in: state.entry.recordsTree)
        }
        changedRecords.insert(state.entry.collection)
        return model
    }

    /// The record's bytes; notes a field the catalog learned.
    private func encode<M: Model>(_ model: M, schema: Schema<M>, state: inout CollectionState) throws -> [UInt8] {
        let (bytes, _, catalogChanged) = try state.encodeRecord(model, schema: schema)
        if catalogChanged { changedCatalog.insert(state.entry.collection) }
        states[state.entry.collection] = state
        return bytes
    }

    /// Moves the record's index entries (`indexes`: `M.schema.indexes`) from `old` (nil: a
    /// new record) to `model`.
    private func maintainIndexes<M: Model>(_ indexes: [IndexDefinition<M>], of model: M, key: [UInt8], bytes: [UInt8], replacing old: M?, state: CollectionState) throws {
        let recordsTree = state.entry.recordsTree
        try maintainUndeclaredIndexes(of: M.self, key: key, old: { old == nil ? nil : try transaction.get(key, in: recordsTree) }, new: bytes, state: state)
        for index in indexes {
            let newKey = indexKey(index, of: model, primaryKey: key)
            if let old {
                if indexKey(index, of: old, primaryKey: key) == newKey { continue }
                try removeIndexEntry(index, of: old, primaryKey: key, state: state)
            }
            try addIndexEntry(index, of: model, primaryKey: key, state: state)
        }
    }

    @discardableResult
    func erase<M: Model>(_ type: M.Type, primaryKey: some KeyComponent) throws -> Bool {
        try checkNotAborted()
        guard try access(type) != nil else { return false }
        let state = try prepare(type)
        return try erase(M.self, key: Key(primaryKey).bytes, state: state)
    }

    private func erase<M: Model>(_ type: M.Type, key: [UInt8], state: CollectionState) throws -> Bool {
        guard let old = try CollectionAccess<M>(engine: transaction, state: state).get(key) else { return false }
        for index in M.schema.indexes { try removeIndexEntry(index, of: old, primaryKey: key, state: state) }
        try maintainUndeclaredIndexes(of: M.self, key: key, old: { try transaction.get(key, in: state.entry.recordsTree) }, new: nil, state: state)
        changedRecords.insert(state.entry.collection)
        return try transaction.delete(key, in: state.entry.recordsTree)
    }

    @discardableResult
    func erase<M: Model>(_ query: Query<M>) throws -> Int {
        try checkNotAborted()
        guard try access(M.self) != nil else { return 0 }
        let state = try prepare(M.self)
        var keys: [[UInt8]] = []
        try CollectionAccess<M>(engine: transaction, state: state).execute(query) { key, _ in
            keys.append(Array(key))
            return true
        }
        for key in keys { _ = try erase(M.self, key: key, state: state) }
        return keys.count
    }

    func eraseAll<M: Model>(_ type: M.Type) throws {
        try checkNotAborted()
        guard try access(type) != nil else { return }
        let state = try prepare(type)
        for tree in [state.entry.recordsTree] + state.entry.indexes.map({ state.entry.indexTree($0.name) }) {
            try transaction.dropTree(tree)
            try transaction.createTree(tree)
        }
        changedRecords.insert(state.entry.collection)
    }

    // MARK: Importing records without their model

    /// Creates `entry`'s collection when the file lacks it (its field table and types are
    /// rebuilt from the records imported; indexes on computed values are left for the model
    /// to build), or checks that the file's agrees on the primary key. Returns the indexes
    /// left out.
    func importCatalog(_ entry: CatalogEntry) throws -> [String] {
        let name = entry.collection
        if var state = try states[name] ?? storage.collectionForWriting(name, in: transaction) {
            guard state.entry.primaryKey == entry.primaryKey else {
                throw StorageError.schemaMismatch(collection: name, reason: "the file's primary key is \(state.entry.primaryKey), the export's \(entry.primaryKey)")
            }
            if let computed = state.entry.indexes.first(where: \.isComputed) {
                throw StorageError.schemaMismatch(collection: name, reason: "index '\(computed.name)' is on a computed value, which only its model can compute; "
                    + "import into a file without the collection, or drop the index first")
            }
            if let next = entry.nextID, next > (state.entry.nextID ?? next) {
                state.entry.nextID = next
                changedCatalog.insert(name)
            }
            states[name] = state
            return []
        }
        try transaction.createTree(CatalogEntry.tree, ifNotExists: true)
        try transaction.createTree(CatalogEntry.recordsTree(name))
        var fresh = entry
        fresh.fields = []
        fresh.types = [:]
        fresh.indexes = entry.indexes.filter { !$0.isComputed }
        for index in fresh.indexes { try transaction.createTree(fresh.indexTree(index.name)) }
        states[name] = CollectionState(fresh)
        changedCatalog.insert(name)
        return entry.indexes.filter(\.isComputed).map(\.name)
    }

    /// Stores a record given as a value, under the key its primary-key fields make, checked
    /// against the catalog's types and maintaining every index from the stored values.
    /// - Throws: `StorageError.duplicateKey`, `.uniqueViolation`, `.schemaMismatch`.
    func importRecord(_ record: RecordValue, into collection: String) throws {
        try checkNotAborted()
        guard var state = states[collection] else { throw StorageError.collectionNotFound(collection, existing: Array(states.keys)) }
        var key = Key()
        for field in state.entry.primaryKey {
            guard let value = record.value(at: field), value != .null, value.appendKey(to: &key) else {
                throw StorageError.schemaMismatch(collection: collection, reason: "the record has no primary-key value '\(field)'")
            }
        }
        let fieldCount = state.fields.names.count
        let bytes = record.encoded(fields: &state.fields)
        if state.fields.names.count != fieldCount { changedCatalog.insert(collection) }
        try checkStoredTypes(bytes, of: RecordValue.self, state: &state)
        states[collection] = state
        guard try !transaction.contains(key.bytes, in: state.entry.recordsTree) else {
            throw StorageError.duplicateKey(collection: collection, key: key.description)
        }
        for index in state.entry.indexes where !index.isComputed {
            try addIndexEntry(try storedIndexKey(index, of: record, primaryKey: key.bytes, collection: collection),
                              index: index.name, unique: index.unique, primaryKey: key.bytes, state: state)
        }
        try transaction.put(bytes, forKey: key.bytes, in: state.entry.recordsTree)
        changedRecords.insert(collection)
    }

    // MARK: Dropping an index

    /// Removes an index's tree and its catalog entry.
    func dropIndex(_ index: String, from collection: String) throws {
        guard var state = try states[collection] ?? storage.collectionForWriting(collection, in: transaction) else {
            throw StorageError.collectionNotFound(collection, existing: try CatalogEntry.collectionNames(in: transaction))
        }
        guard state.entry.indexes.contains(where: { $0.name == index }) else {
            throw StorageError.indexNotFound(collection: collection, index: index, existing: state.entry.indexes.map(\.name))
        }
        try transaction.dropTree(state.entry.indexTree(index))
        state.entry.indexes.removeAll { $0.name == index }
        states[collection] = state
        // Models prepared earlier in this transaction see the catalog anew.
        undeclaredIndexes = [:]
        changedCatalog.insert(collection)
    }

    // MARK: Commit

    func commit() throws {
        try checkNotAborted()
        for name in changedCatalog {
            guard let state = states[name] else { continue }
            try transaction.put(try state.current.encoded(), forKey: Key(name).bytes, in: CatalogEntry.tree)
            // Field tables only grow, so a reader may see the larger one before the commit
            // it belongs to is visible; indexes and counters wait for the commit.
            storage.publishFields(state)
        }
        try transaction.commit()
        for name in changedCatalog { if let state = states[name] { storage.publish(state) } }
        storage.observers.committed(changedRecords)
    }
}
