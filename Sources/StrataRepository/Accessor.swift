import Foundation
import Strata

/// The one place entities of a type are created, saved and deleted (the Realm tips article's
/// `NBRealmAccessor`). Per-entity work goes in a constrained extension, so each entity's
/// accessor holds only that entity's queries:
///
/// ```swift
/// typealias UserAccessor = Accessor<UserEntity>
/// extension Accessor<UserEntity> {
///     func named(_ name: String) throws -> [UserEntity] { try storage.read(UserEntity.filter(\.name == name)) }
/// }
///
/// enum AppModel {
///     static let users = UserAccessor(storage: appStorage)   // no try!, no @unchecked Sendable
/// }
/// var ada = try AppModel.users.create { $0.name = "Ada" }   // id 1, created = modified = now
/// ada.name = "Ada Lovelace"
/// ada = try AppModel.users.save(ada)                        // modified = now
/// ```
///
/// A value holding only its storage: `Sendable` as the compiler checks it, free to keep in a
/// `static let`. (It was a class to subclass, which Swift 6 made each subclass restate as
/// `@unchecked Sendable`, and its initializer threw, which made static holders `try!`.)
///
/// Ids come from the collection's auto-increment counter, kept in the file: unique and
/// increasing across reopens, never reused after a delete.
public struct Accessor<T: Entity>: Sendable {
    /// Where the entities are stored.
    public let storage: any Storage

    /// An accessor for `T` on `storage`. Cheap: keep one in a `static let`.
    ///
    /// - Parameter storage: The storage the entities are kept in.
    public init(storage: any Storage) {
        self.storage = storage
    }

    /// - Throws: `StorageError.schemaMismatch` when `T.schema` does not auto-increment its
    ///   id (the accessor assigns ids from the counter).
    private func checkSchema() throws {
        guard T.schema.isAutoIncrementing else {
            throw StorageError.schemaMismatch(collection: T.collectionName, reason: "an Entity's schema must be Schema.autoIncrementing(\\.id)")
        }
    }

    /// Creates, stores and returns a new entity: `configure` fills in its fields; the id and
    /// both times are assigned here.
    /// - Throws: `StorageError.schemaMismatch` when the schema does not auto-increment;
    ///   what `configure` or the storage throws.
    /// - Parameter configure: Sets the new entity's fields.
    /// - Returns: The stored entity, with its id and times.
    @discardableResult
    public func create(_ configure: (inout T) throws -> Void = { _ in }) throws -> T {
        try checkSchema()
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
    ///
    /// - Throws: `RepositoryError.recordNotFound` for an entity that is not stored;
    ///   `StorageError.schemaMismatch` when the schema does not auto-increment.
    /// - Parameter entity: The changed entity.
    /// - Returns: The entity as stored, its `modified` time set.
    @discardableResult
    public func save(_ entity: T) throws -> T {
        try checkSchema()
        return try storage.write { writer in
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
    ///
    /// - Parameter entity: The entity to delete (by its id).
    /// - Returns: True when it was stored.
    /// - Throws: The storage's errors.
    @discardableResult
    public func delete(_ entity: T) throws -> Bool { try storage.erase(T.self, primaryKey: entity.id) }

    /// The entity with this id, or nil.
    /// - Throws: the storage's errors.
    /// - Parameter id: The entity's id.
    /// - Returns: The entity, or nil.
    public func find(_ id: Int64) throws -> T? { try storage.read(T.self, primaryKey: id) }

    /// Every entity, in id order.
    ///
    /// - Returns: The entities.
    /// - Throws: The storage's errors.
    public func all() throws -> [T] { try storage.readAll(T.self) }

    /// How many entities are stored.
    /// - Throws: the storage's errors.
    /// - Returns: The number of entities.
    public func count() throws -> Int { try storage.count(T.self) }
}
