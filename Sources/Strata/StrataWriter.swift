import Foundation
import StrataEngine

/// A write transaction of `StrataStorage`: records and their index entries change together.
final class StrataWriter: CollectionReading, StorageWriter {
    let storage: StrataStorage
    let transaction: WriteTransaction
    /// Collections touched by this transaction, with their (possibly changed) catalog.
    private var states: [String: CollectionState] = [:]
    private var changedCatalog: Set<String> = []
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
        return try StrataReader(storage: storage, engine: transaction).access(type)
    }

    // MARK: Schema

    /// Creates the collection on first use and brings its indexes in line with the model:
    /// new indexes are built from the existing records, dropped ones are removed.
    @discardableResult
    private func prepare<M: Model>(_ type: M.Type) throws -> CollectionState {
        let name = M.collectionName
        if let state = states[name] { return state }
        guard !name.isEmpty, name.utf8.count <= 120, !name.contains(":") else {
            throw StorageError.schemaMismatch(collection: name, reason: "collection names are 1 to 120 bytes without ':'")
        }
        let primaryKey = M.schema.primaryKey.map(\.name)
        var state: CollectionState
        if let existing = try storage.collectionForWriting(name, in: transaction) {
            state = existing
            guard state.entry.primaryKey == primaryKey else {
                throw StorageError.schemaMismatch(collection: name, reason: "the primary key changed from \(state.entry.primaryKey) to \(primaryKey); copy the records into a new collection")
            }
        } else {
            try transaction.createTree(CatalogEntry.tree, ifNotExists: true)
            try transaction.createTree(CatalogEntry.recordsTree(name), ifNotExists: true)
            state = CollectionState(CatalogEntry(
                collection: name, modelType: String(reflecting: M.self), fields: [], primaryKey: primaryKey, indexes: [],
                nextID: M.schema.autoIncrement == nil ? nil : 1))
            changedCatalog.insert(name)
        }
        let declared = M.schema.indexes.map { CatalogEntry.Index(name: $0.name, fields: $0.fields.map(\.name), unique: $0.isUnique) }
        for stored in state.entry.indexes where !declared.contains(stored) {
            try transaction.dropTree(state.entry.indexTree(stored.name))
            state.entry.indexes.removeAll { $0 == stored }
            changedCatalog.insert(name)
        }
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
        return state
    }

    // MARK: Index maintenance

    private func indexKey<M>(_ index: IndexDefinition<M>, of model: M, primaryKey: [UInt8]) -> [UInt8] {
        let key = index.key(of: model).bytes
        return index.isUnique ? key : key + primaryKey
    }

    private func addIndexEntry<M>(_ index: IndexDefinition<M>, of model: M, primaryKey: [UInt8], state: CollectionState) throws {
        let tree = state.entry.indexTree(index.name)
        let key = indexKey(index, of: model, primaryKey: primaryKey)
        if index.isUnique, let owner = try transaction.get(key, in: tree), owner != primaryKey {
            let violation = StorageError.uniqueViolation(collection: state.entry.collection, index: index.name, value: Key(bytes: key).description)
            abortedBy = violation
            throw violation
        }
        try transaction.put(primaryKey, forKey: key, in: tree)
    }

    private func removeIndexEntry<M>(_ index: IndexDefinition<M>, of model: M, primaryKey: [UInt8], state: CollectionState) throws {
        try transaction.delete(indexKey(index, of: model, primaryKey: primaryKey), in: state.entry.indexTree(index.name))
    }

    // MARK: Writing

    private func checkNotAborted() throws {
        if case .uniqueViolation(let c, let i, let v)? = abortedBy { throw StorageError.transactionAborted(collection: c, index: i, value: v) }
    }

    /// Assigns an auto-increment id when the model's is 0, and keeps the counter above
    /// every id stored.
    private func assignID<M: Model>(_ model: inout M, state: inout CollectionState) {
        guard let auto = M.schema.autoIncrement else { return }
        let next = state.entry.nextID ?? 1
        let id = auto.get(model)
        if id == 0 {
            auto.set(&model, next)
            state.entry.nextID = next + 1
        } else if id >= next {
            state.entry.nextID = id + 1
        } else {
            return
        }
        changedCatalog.insert(state.entry.collection)
    }

    @discardableResult
    func create<M: Model>(_ model: M) throws -> M { try write(model, mustBeNew: true) }

    @discardableResult
    func persist<M: Model>(_ model: M) throws -> M { try write(model, mustBeNew: false) }

    private func write<M: Model>(_ model: M, mustBeNew: Bool) throws -> M {
        try checkNotAborted()
        var state = try prepare(M.self)
        var model = model
        assignID(&model, state: &state)
        let key = M.schema.primaryKey(of: model).bytes
        let old = try CollectionAccess<M>(engine: transaction, state: state).get(key)
        if mustBeNew, old != nil {
            throw StorageError.duplicateKey(collection: state.entry.collection, key: Key(bytes: key).description)
        }
        try store(model, key: key, replacing: old, state: &state)
        return model
    }

    private func store<M: Model>(_ model: M, key: [UInt8], replacing old: M?, state: inout CollectionState) throws {
        let fieldCount = state.fields.names.count
        let bytes = try RecordEncoder.encode(model, fields: &state.fields, collection: state.entry.collection)
        if state.fields.names.count != fieldCount { changedCatalog.insert(state.entry.collection) }
        states[state.entry.collection] = state
        for index in M.schema.indexes {
            let newKey = indexKey(index, of: model, primaryKey: key)
            if let old {
                if indexKey(index, of: old, primaryKey: key) == newKey { continue }
                try removeIndexEntry(index, of: old, primaryKey: key, state: state)
            }
            try addIndexEntry(index, of: model, primaryKey: key, state: state)
        }
        try transaction.put(bytes, forKey: key, in: state.entry.recordsTree)
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
    }
}
