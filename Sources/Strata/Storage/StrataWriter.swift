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
        return try StrataReader(storage: storage, engine: transaction).access(type)
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
        guard !name.isEmpty, name.utf8.count <= 120, !name.contains(":") else {
            throw StorageError.schemaMismatch(collection: name, reason: "collection names are 1 to 120 bytes without ':'")
        }
        if let problem = M.schema.description.problem ?? M.schema.indexes.lazy.compactMap(\.unstableNameProblem).first {
            throw StorageError.schemaMismatch(collection: name, reason: "\(M.self): " + problem)
        }
        let primaryKey = M.schema.primaryKey.map(\.name)
        var state: CollectionState
        if let known = states[name] {
            state = known
        } else if let existing = try storage.collectionForWriting(name, in: transaction) {
            state = existing
            if state.entry.types == nil { try learnTypesFromFirstRecord(&state) }
        } else {
            try transaction.createTree(CatalogEntry.tree, ifNotExists: true)
            try transaction.createTree(CatalogEntry.recordsTree(name), ifNotExists: true)
            state = CollectionState(CatalogEntry(
                collection: name, modelType: String(reflecting: M.self), fields: [], primaryKey: primaryKey, indexes: [],
                nextID: M.schema.autoIncrement == nil ? nil : 1, types: [:]))
            changedCatalog.insert(name)
        }
        try moveRenamedFields(of: M.self, in: &state)
        try checkDeclaredTypes(of: M.self, against: state)
        guard state.entry.primaryKey == primaryKey else {
            throw StorageError.schemaMismatch(collection: name, reason: "the primary key changed from \(state.entry.primaryKey) to \(primaryKey); copy the records into a new collection")
        }
        let declared = M.schema.indexes.map { CatalogEntry.Index(name: $0.name, fields: $0.storedFieldNames, unique: $0.isUnique) }
        for definition in declared {
            guard let stored = state.entry.indexes.first(where: { $0.name == definition.name }), stored != definition else { continue }
            throw StorageError.schemaMismatch(collection: name, reason: "index '\(definition.name)' is stored as \(Self.describe(stored)) but \(M.self) declares \(Self.describe(definition)); "
                + "drop it first with StrataStorage.dropIndex(\"\(definition.name)\", from: \"\(name)\"), or give the new definition another name")
        }
        let undeclared = state.entry.indexes.filter { !declared.contains($0) }
        if let computed = undeclared.first(where: \.isComputed) {
            throw StorageError.schemaMismatch(collection: name, reason: "index '\(computed.name)' is on a computed value that \(M.self) does not declare, so \(M.self) cannot keep it up to date; "
                + "declare it in \(M.self)'s schema, or drop it with StrataStorage.dropIndex(\"\(computed.name)\", from: \"\(name)\")")
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
        undeclaredIndexes[ObjectIdentifier(M.self)] = undeclared
        recordReader(M.self, in: &state)
        states[name] = state
        return state
    }

    /// Records which fields a model that declares all of them reads (`storedump` reports the
    /// stored fields no model reads: renames nobody declared, fields a model dropped).
    private func recordReader<M: Model>(_ type: M.Type, in state: inout CollectionState) {
        guard M.self is any DescribedModel.Type else { return }
        let reads = M.schema.description.fields.map(\.name)
        let modelType = String(reflecting: M.self)
        guard state.entry.readers?[modelType] != reads else { return }
        state.entry.readers = (state.entry.readers ?? [:]).merging([modelType: reads]) { $1 }
        changedCatalog.insert(state.entry.collection)
    }

    /// A field whose declared Swift type cannot be stored as the catalog records the field
    /// is refused when the collection is opened for writing, before any record is written.
    private func checkDeclaredTypes<M: Model>(of type: M.Type, against state: CollectionState) throws {
        for field in M.schema.description.fields {
            guard let declared = field.storedType, let stored = state.entry.types?[field.name], stored != declared else { continue }
            throw Self.typeConflict(collection: state.entry.collection, field: field.name, stored: stored, written: declared, by: M.self)
        }
    }

    private static func typeConflict<M>(collection: String, field: String, stored: StoredType, written: StoredType, by model: M.Type) -> StorageError {
        StorageError.schemaMismatch(collection: collection, reason: "field '\(field)' is stored as \(stored.rawValue), but \(M.self) writes \(written.rawValue); "
            + "a field keeps its type (README, \"Changing your models\"): write the new type under a new field name, or copy the records into a new collection")
    }

    // MARK: Renamed fields

    /// Moves the values of each field `M` declares renamed (`StoredField.originalNames`)
    /// to the field's current name, in every record, in this transaction. Values are not
    /// decoded: each record's top-level field id changes, nothing else, so the index trees
    /// (whose keys hold values, not names) stay valid; the catalog's types and index
    /// definitions follow the new name.
    /// - Throws: `StorageError.schemaMismatch` when a record holds both names.
    private func moveRenamedFields<M: Model>(of type: M.Type, in state: inout CollectionState) throws {
        for (from, to) in M.schema.description.renames {
            guard let fromID = state.fields.id(of: from), let fromType = state.entry.types?[from] else { continue }
            if let toType = state.entry.types?[to], toType != fromType {
                throw Self.typeConflict(collection: state.entry.collection, field: from, stored: fromType, written: toType, by: M.self)
            }
            let toID = state.fields.intern(to)
            var keys: [[UInt8]] = []
            try transaction.scan(state.entry.recordsTree) { key, _ in
                keys.append(Array(key))
                return true
            }
            for key in keys {
                guard let bytes = try transaction.get(key, in: state.entry.recordsTree),
                      let moved = try Self.renaming(field: fromID, to: toID, in: bytes, state: state, names: (from, to)) else { continue }
                try transaction.put(moved, forKey: key, in: state.entry.recordsTree)
            }
            state.entry.types?[to] = fromType
            state.entry.types?[from] = nil
            state.entry.primaryKey = state.entry.primaryKey.map { $0 == from ? to : $0 }
            for i in state.entry.indexes.indices {
                state.entry.indexes[i].fields = state.entry.indexes[i].fields.map { $0 == from ? to : $0 }
            }
            state.learn([])
            changedCatalog.insert(state.entry.collection)
            storage.reportRename(collection: state.entry.collection, from: from, to: to, records: keys.count)
            changedRecords.insert(state.entry.collection)
        }
    }

    /// A model that still writes a field under a name it declares as another field's
    /// original name would have had that field's values moved away: refused (the
    /// transaction, and the move with it, rolls back). Only a plain `Codable` model can get
    /// here; `@StoredModel` declarations are checked whole (`ModelDescription.problem`).
    private func checkNoOriginalNames<M: Model>(in bytes: [UInt8], of model: M.Type, state: CollectionState) throws {
        let renames = M.schema.description.renames
        guard !renames.isEmpty else { return }
        let originalIDs = renames.compactMap { state.fields.id(of: $0.from) }
        guard !originalIDs.isEmpty else { return }
        try bytes.withUnsafeBytes { buffer in
            try DecodingContext(buffer: buffer, fields: state.fields, collection: state.entry.collection).forEachTopLevelField { id, _ in
                guard originalIDs.contains(id), let rename = renames.first(where: { state.fields.id(of: $0.from) == id }) else { return }
                throw StorageError.schemaMismatch(collection: state.entry.collection, reason: "\(M.self): '\(rename.to)' declares the original name '\(rename.from)', which a current field still uses; "
                    + "rename that field too, or remove the originalName declaration")
            }
        }
    }

    /// The record with its top-level field `from` stored as `to`, or nil when it lacks `from`.
    private static func renaming(field from: UInt32, to: UInt32, in bytes: [UInt8], state: CollectionState, names: (String, String)) throws -> [UInt8]? {
        try bytes.withUnsafeBytes { buffer -> [UInt8]? in
            let context = DecodingContext(buffer: buffer, fields: state.fields, collection: state.entry.collection)
            guard try context.tag(at: 0) == .keyed else { return nil }
            var p = 1
            let count = try context.varint(at: &p)
            var fields: [(id: UInt32, value: Range<Int>)] = []
            for _ in 0 ..< count {
                let id = UInt32(truncatingIfNeeded: try context.varint(at: &p))
                let end = try context.skip(at: p)
                fields.append((id, p ..< end))
                p = end
            }
            guard fields.contains(where: { $0.id == from }) else { return nil }
            if fields.contains(where: { $0.id == to }) {
                throw StorageError.schemaMismatch(collection: state.entry.collection, reason: "a record holds both '\(names.0)' and its new name '\(names.1)'; "
                    + "remove one of them before declaring the rename (originalName)")
            }
            var moved: [UInt8] = []
            moved.reserveCapacity(bytes.count + 2)
            moved.appendTag(.keyed)
            moved.appendVarint(count)
            for field in fields {
                moved.appendVarint(UInt64(field.id == from ? to : field.id))
                moved.append(contentsOf: buffer[field.value])
            }
            return moved
        }
    }

    private static func describe(_ index: CatalogEntry.Index) -> String {
        (index.unique ? "unique " : "") + "(" + index.fields.joined(separator: ", ") + ")"
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

    /// Checks each top-level field of an encoded record against the type the catalog
    /// records for it, and records the types of fields written for the first time.
    /// - Throws: `StorageError.schemaMismatch` naming the field and both types.
    private func checkStoredTypes<M>(_ bytes: [UInt8], of model: M.Type, state: inout CollectionState) throws {
        var learned: [(name: String, type: StoredType)] = []
        let current = state
        try bytes.withUnsafeBytes { buffer in
            try DecodingContext(buffer: buffer, fields: current.fields, collection: current.entry.collection).forEachTopLevelField { id, type in
                guard let type else { return }  // nil fits every type: the field is optional
                let stored = current.storedType(ofField: id)
                if stored == type { return }
                let field = current.fields.name(of: id) ?? "#\(id)"
                guard let stored else { return learned.append((field, type)) }
                throw Self.typeConflict(collection: current.entry.collection, field: field, stored: stored, written: type, by: M.self)
            }
        }
        guard !learned.isEmpty else { return }
        state.learn(learned)
        changedCatalog.insert(state.entry.collection)
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
        try checkStoredTypes(bytes, of: M.self, state: &state)
        try checkNoOriginalNames(in: bytes, of: M.self, state: state)
        states[state.entry.collection] = state
        let recordsTree = state.entry.recordsTree
        try maintainUndeclaredIndexes(of: M.self, key: key, old: { old == nil ? nil : try transaction.get(key, in: recordsTree) }, new: bytes, state: state)
        for index in M.schema.indexes {
            let newKey = indexKey(index, of: model, primaryKey: key)
            if let old {
                if indexKey(index, of: old, primaryKey: key) == newKey { continue }
                try removeIndexEntry(index, of: old, primaryKey: key, state: state)
            }
            try addIndexEntry(index, of: model, primaryKey: key, state: state)
        }
        try transaction.put(bytes, forKey: key, in: state.entry.recordsTree)
        changedRecords.insert(state.entry.collection)
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
