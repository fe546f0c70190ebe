import Foundation
import StrataEngine

/// The catalog's rules, shared by every backend that keeps a `CatalogEntry` per collection
/// (the Strata file and the SQL backends): what a collection name may be, what a model's
/// declaration must satisfy, how a model is checked against what is stored, how stored types
/// are learned, how an auto-increment id is assigned, and how a declared rename moves a
/// record's field. A backend stores records and index keys its own way; the rules are these.
package enum CollectionRules {
    /// Refuses a model whose collection name or declaration cannot be stored.
    /// - Throws: `StorageError.schemaMismatch` naming the problem.
    package static func checkDeclaration<M: Model>(of type: M.Type) throws {
        let name = M.collectionName
        guard !name.isEmpty, name.utf8.count <= 120, !name.contains(":") else {
            throw StorageError.schemaMismatch(collection: name, reason: "collection names are 1 to 120 bytes without ':'")
        }
        if let problem = M.schema.description.problem ?? M.schema.indexes.lazy.compactMap(\.unstableNameProblem).first {
            throw StorageError.schemaMismatch(collection: name, reason: "\(M.self): " + problem)
        }
    }

    /// The catalog entry of a collection `M` creates: no fields, indexes or types yet.
    package static func newEntry<M: Model>(for type: M.Type) -> CatalogEntry {
        CatalogEntry(collection: M.collectionName, modelType: String(reflecting: M.self), fields: [], primaryKey: M.schema.primaryKey.map(\.name),
                     indexes: [], nextID: M.schema.autoIncrement == nil ? nil : 1, types: [:])
    }

    /// The error for a field written with another type than the one stored.
    package static func typeConflict<M>(collection: String, field: String, stored: StoredType, written: StoredType, by model: M.Type) -> StorageError {
        StorageError.schemaMismatch(collection: collection, reason: "field '\(field)' is stored as \(stored.rawValue), but \(M.self) writes \(written.rawValue); "
            + "a field keeps its type (the \"Models and schema changes\" article): write the new type under a new field name, or copy the records into a new collection")
    }

    package static func describe(_ index: CatalogEntry.Index) -> String {
        (index.unique ? "unique " : "") + "(" + index.fields.joined(separator: ", ") + ")"
    }

    /// The record with its top-level field `from` stored as `to`, or nil when it lacks `from`.
    /// Values are copied, never decoded, so index keys (which hold values, not names) stay valid.
    /// - Throws: `StorageError.schemaMismatch` when the record holds both names.
    package static func renaming(field from: UInt32, to: UInt32, in bytes: [UInt8], state: CollectionState, names: (String, String)) throws -> [UInt8]? {
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
}

/// A rename `M` declares that the stored records still need: the field ids to move between.
package struct PendingRename: Sendable {
    package let from: String
    package let to: String
    package let fromID: UInt32
    package let toID: UInt32
}

extension CollectionState {
    /// Checks `M` against the stored catalog: declared field types, the primary key, index
    /// definitions; an index on a computed value that `M` does not declare is refused, as `M`
    /// could not keep it up to date. Returns `M`'s index definitions and the stored indexes it
    /// does not declare (which stay, and are maintained from stored values).
    /// - Throws: `StorageError.schemaMismatch` saying what to do.
    package func check<M: Model>(_ type: M.Type) throws -> (declared: [CatalogEntry.Index], undeclared: [CatalogEntry.Index]) {
        let name = entry.collection
        for field in M.schema.description.fields {
            guard let declared = field.storedType, let stored = entry.types?[field.name], stored != declared else { continue }
            throw CollectionRules.typeConflict(collection: name, field: field.name, stored: stored, written: declared, by: M.self)
        }
        let primaryKey = M.schema.primaryKey.map(\.name)
        guard entry.primaryKey == primaryKey else {
            throw StorageError.schemaMismatch(collection: name, reason: "the primary key changed from \(entry.primaryKey) to \(primaryKey); copy the records into a new collection")
        }
        let declared = M.schema.indexes.map { CatalogEntry.Index(name: $0.name, fields: $0.storedFieldNames, unique: $0.isUnique) }
        for definition in declared {
            guard let stored = entry.indexes.first(where: { $0.name == definition.name }), stored != definition else { continue }
            throw StorageError.schemaMismatch(collection: name, reason: "index '\(definition.name)' is stored as \(CollectionRules.describe(stored)) but \(M.self) declares \(CollectionRules.describe(definition)); "
                + "drop it first with storage.dropIndex(\"\(definition.name)\", from: \"\(name)\"), or give the new definition another name")
        }
        let undeclared = entry.indexes.filter { !declared.contains($0) }
        if let computed = undeclared.first(where: \.isComputed) {
            throw StorageError.schemaMismatch(collection: name, reason: "index '\(computed.name)' is on a computed value that \(M.self) does not declare, so \(M.self) cannot keep it up to date; "
                + "declare it in \(M.self)'s schema, or drop it with storage.dropIndex(\"\(computed.name)\", from: \"\(name)\")")
        }
        return (declared, undeclared)
    }

    /// Records which fields a model that declares all of them reads (`storedump` reports the
    /// stored fields no model reads). Returns whether the catalog changed.
    package mutating func recordReader<M: Model>(_ type: M.Type) -> Bool {
        guard M.self is any DescribedModel.Type else { return false }
        let reads = M.schema.description.fields.map(\.name)
        let modelType = String(reflecting: M.self)
        guard entry.readers?[modelType] != reads else { return false }
        entry.readers = (entry.readers ?? [:]).merging([modelType: reads]) { $1 }
        return true
    }

    /// The renames `M` declares whose original name the catalog still holds, with the new
    /// name's id interned. The caller moves each record (`CollectionRules.renaming`), then
    /// calls `completeRename`.
    /// - Throws: `StorageError.schemaMismatch` when the two names hold different types.
    package mutating func pendingRenames<M: Model>(of type: M.Type) throws -> [PendingRename] {
        var pending: [PendingRename] = []
        for (from, to) in M.schema.description.renames {
            guard let fromID = fields.id(of: from), let fromType = entry.types?[from] else { continue }
            if let toType = entry.types?[to], toType != fromType {
                throw CollectionRules.typeConflict(collection: entry.collection, field: from, stored: fromType, written: toType, by: M.self)
            }
            pending.append(PendingRename(from: from, to: to, fromID: fromID, toID: fields.intern(to)))
        }
        return pending
    }

    /// The catalog after a rename's records moved: types, primary key and index definitions
    /// follow the new name.
    package mutating func completeRename(_ rename: PendingRename) {
        let (from, to) = (rename.from, rename.to)
        let type = entry.types?[from]
        entry.types?[to] = type
        entry.types?[from] = nil
        entry.primaryKey = entry.primaryKey.map { $0 == from ? to : $0 }
        for i in entry.indexes.indices {
            entry.indexes[i].fields = entry.indexes[i].fields.map { $0 == from ? to : $0 }
        }
        learn([])
    }

    /// Checks each top-level field of an encoded record against the type the catalog
    /// records for it, and records the types of fields written for the first time. Returns
    /// the fields learned (empty when the catalog did not change).
    /// - Throws: `StorageError.schemaMismatch` naming the field and both types.
    @discardableResult
    package mutating func checkStoredTypes<M>(_ bytes: [UInt8], of model: M.Type) throws -> [(name: String, type: StoredType)] {
        var learned: [(name: String, type: StoredType)] = []
        let current = self
        try bytes.withUnsafeBytes { buffer in
            try DecodingContext(buffer: buffer, fields: current.fields, collection: current.entry.collection).forEachTopLevelField { id, type in
                guard let type else { return }  // nil fits every type: the field is optional
                let stored = current.storedType(ofField: id)
                if stored == type { return }
                let field = current.fields.name(of: id) ?? "#\(id)"
                guard let stored else { return learned.append((field, type)) }
                throw CollectionRules.typeConflict(collection: current.entry.collection, field: field, stored: stored, written: type, by: M.self)
            }
        }
        if !learned.isEmpty { learn(learned) }
        return learned
    }

    /// Encodes `model` as the collection's record, by the catalog's rules: new field names
    /// join the field table, field types are checked (new ones learned), and a field still
    /// written under a declared original name is refused. Returns the record, the fields
    /// whose types were learned, and whether the catalog entry changed.
    /// - Throws: `StorageError.schemaMismatch`; the encoder's errors.
    /// - Parameter schema: `M.schema`, which the caller reads once per write: in the
    ///   unspecialized writers each read looks up `Schema<M>`'s metadata and copies it.
    package mutating func encodeRecord<M: Model>(_ model: M, schema: Schema<M>) throws -> (bytes: [UInt8], learned: [(name: String, type: StoredType)], catalogChanged: Bool) {
        let fieldCount = fields.names.count
        let bytes = try RecordEncoder.encode(model, fields: &fields, collection: entry.collection)
        let learned = try checkStoredTypes(bytes, of: M.self)
        try checkNoOriginalNames(in: bytes, of: M.self, renames: schema.description.renames)
        return (bytes, learned, fields.names.count != fieldCount || !learned.isEmpty)
    }

    /// A model that still writes a field under a name it declares as another field's
    /// original name would have had that field's values moved away: refused. Only a plain
    /// `Codable` model can get here; `@StoredModel` declarations are checked whole.
    package func checkNoOriginalNames<M: Model>(in bytes: [UInt8], of model: M.Type, renames: [(from: String, to: String)]) throws {
        guard !renames.isEmpty else { return }
        let originalIDs = renames.compactMap { fields.id(of: $0.from) }
        guard !originalIDs.isEmpty else { return }
        try bytes.withUnsafeBytes { buffer in
            try DecodingContext(buffer: buffer, fields: fields, collection: entry.collection).forEachTopLevelField { id, _ in
                guard originalIDs.contains(id), let rename = renames.first(where: { fields.id(of: $0.from) == id }) else { return }
                throw StorageError.schemaMismatch(collection: entry.collection, reason: "\(M.self): '\(rename.to)' declares the original name '\(rename.from)', which a current field still uses; "
                    + "rename that field too, or remove the originalName declaration")
            }
        }
    }

    /// Assigns an auto-increment id when the model's is 0, and keeps the counter above every
    /// id stored. Returns whether the counter moved.
    package mutating func assignID<M: Model>(_ model: inout M, schema: Schema<M>) -> Bool {
        guard let auto = schema.autoIncrement else { return false }
        let next = entry.nextID ?? 1
        let id = auto.get(model)
        if id == 0 {
            auto.set(&model, next)
            entry.nextID = next + 1
        } else if id >= next {
            entry.nextID = id + 1
        } else {
            return false
        }
        return true
    }
}
