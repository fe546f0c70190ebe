import Foundation
import Strata

/// The one place entities of a type are created, saved and deleted (the Realm tips article's
/// `NBRealmAccessor`): a generic base that per-entity accessors extend.
///
/// ```swift
/// final class UserAccessor: Accessor<UserEntity> {
///     func named(_ name: String) throws -> [UserEntity] { try storage.read(UserEntity.filter(\.name == name)) }
/// }
/// let users = try UserAccessor(storage: StrataStorage(path: "app.strata"))
/// var ada = try users.create { $0.name = "Ada" }      // id 1, created = modified = now
/// ada.name = "Ada Lovelace"
/// ada = try users.save(ada)                           // modified = now
/// ```
///
/// Ids come from the collection's auto-increment counter, kept in the file: unique and
/// increasing across reopens, never reused after a delete.
open class Accessor<T: Entity>: @unchecked Sendable {  // immutable state only
    public let storage: any Storage

    /// Fails when `T.schema` does not auto-increment its id.
    public init(storage: any Storage) throws {
        guard T.schema.isAutoIncrementing else {
            throw StorageError.schemaMismatch(collection: T.collectionName, reason: "an Entity's schema must be Schema.autoIncrementing(\\.id)")
        }
        self.storage = storage
    }

    /// Creates, stores and returns a new entity: `configure` fills in its fields; the id and
    /// both times are assigned here.
    @discardableResult
    open func create(_ configure: (inout T) throws -> Void = { _ in }) throws -> T {
        var entity = T()
        try configure(&entity)
        entity.id = 0
        let now = Date()
        entity.created = now
        entity.modified = now
        return try storage.create(entity)
    }

    /// Stores changes to an entity created by this accessor, setting `modified`; returns the
    /// stored value. An entity that was never created (or was deleted) is an error, not a
    /// silent insert: only `create` makes entities.
    @discardableResult
    open func save(_ entity: T) throws -> T {
        try storage.write { writer in
            guard let stored = try writer.read(T.self, primaryKey: entity.id) else {
                throw RepositoryError.recordNotFound(id: String(entity.id))
            }
            var saved = entity
            saved.created = stored.created
            saved.modified = max(Date(), stored.modified.addingTimeInterval(0.000_001))
            return try writer.persist(saved)
        }
    }

    /// Deletes the entity; false when it was not stored.
    @discardableResult
    open func delete(_ entity: T) throws -> Bool { try storage.erase(T.self, primaryKey: entity.id) }

    open func find(_ id: Int64) throws -> T? { try storage.read(T.self, primaryKey: id) }

    /// Every entity, in id order.
    open func all() throws -> [T] { try storage.readAll(T.self) }

    open func count() throws -> Int { try storage.count(T.self) }
}
