import Foundation
import Strata

/// A record that saves itself (the iActiveRecord article, in Swift idiom): a `Model` value
/// with an auto-assigned `id`, `createdAt` and `updatedAt` kept by the library, validations,
/// and dirty tracking. Its collection is created on first use.
///
/// ```swift
/// struct User: ActiveRecord {
///     var id: Int64 = 0
///     var createdAt = Date()
///     var updatedAt = Date()
///     var recordState = RecordState()
///     var name = ""
///     var email = ""
///
///     static let schema = Schema<User>.autoIncrementing(\.id, indexes: [.unique(\.email)])
///     static let validations: [Validation<User>] = [.presence(\.name), .uniqueness(\.email)]
/// }
///
/// var user = User(name: "Ada", email: "ada@example.com")
/// try user.save(on: db)              // insert: id, createdAt, updatedAt assigned
/// user.name = "Ada Lovelace"
/// user.changedFields                 // ["name"]
/// try user.save(on: db)              // update: writes only the changed field
/// ```
public protocol ActiveRecord: Model {
    var id: Int64 { get set }
    var createdAt: Date { get set }
    var updatedAt: Date { get set }
    /// Declare as `var recordState = RecordState()`; never stored.
    var recordState: RecordState { get set }
    /// Rules `save()` checks first; none by default.
    static var validations: [Validation<Self>] { get }
}

extension ActiveRecord {
    /// No rules.
    public static var validations: [Validation<Self>] { [] }

    static var modelName: String { collectionName }

    private static func context(_ given: (any RecordContext)?) throws -> any RecordContext { try RecordDatabase.context(given) }

    /// True until the record is saved the first time.
    public var isNew: Bool { id == 0 }

    /// Stored fields that differ from the record as last loaded or saved (all of them for a
    /// new record).
    public var changedFields: [String] {
        guard let current = try? SnapshotTables.fields(of: self) else { return [] }
        guard let loaded = recordState.loaded else { return current.names }
        return current.changed(from: loaded).filter { $0 != "updatedAt" }
    }

    /// Whether `save()` would write anything.
    public var hasChanges: Bool { !changedFields.isEmpty }

    /// The rules this record breaks, checked against `context` (uniqueness reads it).
    ///
    /// - Parameter context: The database or transaction; the default database when nil.
    /// - Returns: The failures, in the order the rules are declared.
    /// - Throws: `RecordDatabaseError.noDefaultDatabase` without a context; the storage's errors.
    public func errors(on context: (any RecordContext)? = nil) throws -> [ValidationError] {
        try Self.context(context).read { reader in try validationErrors(reader) }
    }

    /// Whether the record breaks no rule (`errors(on:)` is empty).
    ///
    /// - Parameter context: The database or transaction; the default database when nil.
    /// - Returns: True when every rule holds.
    /// - Throws: As `errors(on:)`.
    public func isValid(on context: (any RecordContext)? = nil) throws -> Bool { try errors(on: context).isEmpty }

    func validationErrors(_ reader: any StorageReader) throws -> [ValidationError] {
        try Self.validations.flatMap { rule in
            try rule.check(self, reader).map { ValidationError(model: Self.modelName, field: rule.field, key: $0) }
        }
    }

    /// Inserts a new record or updates a saved one, after validating it; an invalid record
    /// stores nothing and throws `RecordInvalid`. An update writes only `changedFields`, on
    /// top of the row as it is now, so two copies of a record that change different fields
    /// both keep their change; with no changes it writes nothing.
    ///
    /// - Parameter context: The database or transaction; the default database when nil.
    /// - Throws: `RecordInvalid` when a validation fails (nothing is stored);
    ///   `RecordDatabaseError.schemaNotAutoIncrementing`, `.noDefaultDatabase`; what the storage
    ///   throws.
    public mutating func save(on context: (any RecordContext)? = nil) throws {
        guard Self.schema.isAutoIncrementing else { throw RecordDatabaseError.schemaNotAutoIncrementing(model: Self.modelName) }
        let changes = changedFields
        guard isNew || !changes.isEmpty else { return }
        self = try Self.context(context).write { writer in
            // An update is validated as it will be stored: the changed fields on top of the row.
            let candidate = isNew ? self : try merged(changes, writer)
            let errors = try candidate.validationErrors(writer)
            guard errors.isEmpty else { throw RecordInvalid(errors: errors) }
            do {
                return isNew ? try insert(writer) : try store(candidate, writer)
            } catch let StorageError.uniqueViolation(_, index, _) {
                throw RecordInvalid(errors: [ValidationError(model: Self.modelName, field: index, key: .taken)])
            }
        }
    }

    private func insert(_ writer: any StorageWriter) throws -> Self {
        var record = self
        let now = Date()
        (record.createdAt, record.updatedAt) = (now, now)
        record = try writer.create(record)
        record.recordState.loaded = try SnapshotTables.fields(of: record)
        return record
    }

    /// The row as stored now, with this record's changed fields on top and a new `updatedAt`.
    private func merged(_ changes: [String], _ writer: any StorageWriter) throws -> Self {
        guard let stored = try writer.read(Self.self, primaryKey: id) else {
            throw RecordDatabaseError.notFound(model: Self.modelName, id: id)
        }
        var fields = try SnapshotTables.fields(of: stored)
        fields.take(changes, from: try SnapshotTables.fields(of: self))
        var merged = try SnapshotTables.model(Self.self, from: fields)
        merged.updatedAt = max(Date(), stored.updatedAt.addingTimeInterval(0.000_001))
        return merged
    }

    private func store(_ merged: Self, _ writer: any StorageWriter) throws -> Self {
        var stored = try writer.persist(merged)
        stored.recordState.loaded = try SnapshotTables.fields(of: stored)
        return stored
    }

    /// `save()` for a record that must already be saved.
    ///
    /// - Parameter context: The database or transaction; the default database when nil.
    /// - Throws: `RecordDatabaseError.notSaved` for a new record; as `save(on:)`.
    public mutating func update(on context: (any RecordContext)? = nil) throws {
        guard !isNew else { throw RecordDatabaseError.notSaved(model: Self.modelName) }
        try save(on: context)
    }

    /// Deletes the record (the article's `dropRecord`) and, in the same transaction, applies
    /// its type's dependency rules (`HasDependents`: destroy, nullify, restrict). Returns false
    /// when it was already gone.
    ///
    /// - Parameter context: The database or transaction; the default database when nil.
    /// - Returns: True when the record was stored.
    /// - Throws: `RecordDatabaseError.notSaved` for a new record; `RecordDeleteRestricted` when a
    ///   `restrict` rule finds children (nothing is deleted); the storage's errors.
    @discardableResult
    public func delete(on context: (any RecordContext)? = nil) throws -> Bool {
        guard !isNew else { throw RecordDatabaseError.notSaved(model: Self.modelName) }
        return try Self.context(context).write { writer in
            guard try writer.read(Self.self, primaryKey: id) != nil else { return false }
            try Self.deleteCascading(id, writer)
            return true
        }
    }

    /// Marks a record read from storage as loaded, for dirty tracking.
    func loaded() throws -> Self {
        var record = self
        record.recordState.loaded = try SnapshotTables.fields(of: record)
        return record
    }

    /// The record with this id, or nil.
    ///
    /// - Parameters:
    ///   - id: The record's id.
    ///   - context: The database or transaction; the default database when nil.
    /// - Returns: The record, or nil.
    /// - Throws: `RecordDatabaseError.noDefaultDatabase` without a context; the storage's errors.
    public static func find(_ id: Int64, on context: (any RecordContext)? = nil) throws -> Self? {
        try Self.context(context).read { try $0.read(Self.self, primaryKey: id) }?.loaded()
    }

    /// Every record, in id order.
    ///
    /// - Parameter context: The database or transaction; the default database when nil.
    /// - Returns: The records.
    /// - Throws: `RecordDatabaseError.noDefaultDatabase` without a context; the storage's errors.
    public static func all(on context: (any RecordContext)? = nil) throws -> [Self] {
        try Self.context(context).read { try $0.readAll(Self.self) }.map { try $0.loaded() }
    }

    /// How many records of the type are stored.
    ///
    /// - Parameter context: The database or transaction; the default database when nil.
    /// - Returns: The number of records.
    /// - Throws: `RecordDatabaseError.noDefaultDatabase` without a context; the storage's errors.
    public static func count(on context: (any RecordContext)? = nil) throws -> Int {
        try Self.context(context).read { try $0.count(Query<Self>()) }
    }

    /// Deletes every record; with dependency rules (`HasDependents`), each record's apply.
    ///
    /// - Parameter context: The database or transaction; the default database when nil.
    /// - Throws: `RecordDeleteRestricted` when a `restrict` rule finds children (nothing is
    ///   deleted); the storage's errors.
    public static func deleteAll(on context: (any RecordContext)? = nil) throws {
        try Self.context(context).write { writer in
            guard Self.self is any HasDependents.Type else { return try writer.eraseAll(Self.self) }
            for record in try writer.readAll(Self.self) { try deleteCascading(record.id, writer) }
        }
    }

    /// Saves a copy of the record and returns it as saved (id, timestamps and change
    /// tracking updated), leaving this value as it was. The shape for records that live in
    /// state you cannot mutate in place, such as a `let`, or a property read through a
    /// function's result.
    ///
    /// - Throws: `RecordInvalid` when a validation fails (nothing is stored);
    ///   `RecordDatabaseError` when there is no database or the schema does not
    ///   auto-increment; what the storage throws.
    /// - Parameter context: The database or transaction; the default database when nil.
    /// - Returns: The record as saved.
    public func saved(on context: (any RecordContext)? = nil) throws -> Self {
        var copy = self
        try copy.save(on: context)
        return copy
    }

    // MARK: async

    /// `save(on:)`, off the caller's thread.
    ///
    /// - Parameter context: The database or transaction; the default database when nil.
    /// - Throws: As the synchronous `save(on:)`.
    public mutating func save(on context: (any RecordContext)? = nil) async throws {
        self = try await saved(on: context)
    }

    /// `saved(on:)`, off the caller's thread: the shape for a record held by a
    /// `@MainActor` view model (or any actor), whose properties cannot be passed `inout` to
    /// an async call, so `try await user.save()` does not compile there.
    ///
    /// ```swift
    /// @MainActor @Observable final class ProfileModel {
    ///     var user: User
    ///     func rename(to name: String) async throws {
    ///         user.name = name
    ///         user = try await user.saved()
    ///     }
    /// }
    /// ```
    /// - Throws: as `saved(on:)`.
    /// - Parameter context: The database or transaction; the default database when nil.
    /// - Returns: The record as saved.
    public func saved(on context: (any RecordContext)? = nil) async throws -> Self {
        let record = self
        return try await offload { try record.saved(on: context) }
    }

    /// `find(_:on:)`, off the caller's thread.
    ///
    /// - Parameters:
    ///   - id: The record's id.
    ///   - context: The database or transaction; the default database when nil.
    /// - Returns: The record, or nil.
    /// - Throws: As the synchronous `find(_:on:)`.
    public static func find(_ id: Int64, on context: (any RecordContext)? = nil) async throws -> Self? {
        try await offload { try find(id, on: context) }
    }

    /// `all(on:)`, off the caller's thread.
    ///
    /// - Parameter context: The database or transaction; the default database when nil.
    /// - Returns: The records.
    /// - Throws: As the synchronous `all(on:)`.
    public static func all(on context: (any RecordContext)? = nil) async throws -> [Self] {
        try await offload { try all(on: context) }
    }
}
