import Foundation
import Strata

/// Relations between records (the article's belongsTo, hasMany and hasManyThrough), through
/// foreign-key fields: a child stores its parent's id in an `Int64?` field. Every helper
/// needs saved records — an unsaved one is `RecordDatabaseError.notSaved`, as the article warns.
///
/// ```swift
/// struct User: ActiveRecord { ...; var groupId: Int64? }
/// var user = ...; let group = ...
/// try user.setParent(group, \.groupId, on: db)          // belongsTo: set and save
/// try user.parent(Group.self, \.groupId, on: db)       // the group
/// try group.children(User.self, \.groupId, on: db)     // hasMany
/// try group.add(&user, \.groupId, on: db) / remove
/// try user.related(Project.self, through: Membership.self, \.userId, \.projectId, on: db)   // hasManyThrough
/// ```
extension ActiveRecord {
    private func requireSaved() throws {
        if isNew { throw RecordDatabaseError.notSaved(model: Self.modelName) }
    }

    // MARK: belongsTo

    /// The parent this record's `key` names, or nil.
    ///
    /// - Parameters:
    ///   - type: The parent's type.
    ///   - key: This record's foreign key.
    ///   - context: The database or transaction to read; the default database when nil.
    /// - Returns: The parent, or nil when the key is nil or names no record.
    /// - Throws: `RecordDatabaseError.noDefaultDatabase` without a context; the storage's errors.
    public func parent<P: ActiveRecord>(_ type: P.Type, _ key: KeyPath<Self, Int64?>, on context: (any RecordContext)? = nil) throws -> P? {
        guard let parentID = self[keyPath: key] else { return nil }
        return try P.find(parentID, on: context)
    }

    /// Points `key` at `parent` and saves this record.
    ///
    /// - Parameters:
    ///   - parent: The new parent, or nil to detach this record.
    ///   - key: This record's foreign key.
    ///   - context: The database or transaction to write; the default database when nil.
    /// - Throws: `RecordDatabaseError.notSaved` when the parent was never saved; what saving
    ///   throws (validation, the storage's errors).
    public mutating func setParent<P: ActiveRecord>(_ parent: P?, _ key: WritableKeyPath<Self, Int64?>, on context: (any RecordContext)? = nil) throws {
        try parent?.requireSaved()
        self[keyPath: key] = parent?.id
        try save(on: context)
    }

    // MARK: hasMany

    /// The records of type `C` whose `key` names this record.
    ///
    /// - Parameters:
    ///   - type: The children's type.
    ///   - key: Their foreign key.
    ///   - context: The database or transaction to read; the default database when nil.
    /// - Returns: The children, in id order.
    /// - Throws: `RecordDatabaseError.notSaved` when this record was never saved; the storage's
    ///   errors.
    public func children<C: ActiveRecord>(_ type: C.Type, _ key: KeyPath<C, Int64?> & Sendable, on context: (any RecordContext)? = nil) throws -> [C] {
        try requireSaved()
        return try C.query(on: context).where(key == Optional(id)).fetch()
    }

    /// Makes `child` one of this record's children and saves it.
    ///
    /// - Parameters:
    ///   - child: The record to attach; saved, with its new id when it was new.
    ///   - key: Its foreign key.
    ///   - context: The database or transaction to write; the default database when nil.
    /// - Throws: `RecordDatabaseError.notSaved` when this record was never saved; what saving
    ///   throws.
    public func add<C: ActiveRecord>(_ child: inout C, _ key: WritableKeyPath<C, Int64?>, on context: (any RecordContext)? = nil) throws {
        try requireSaved()
        try child.setParent(self, key, on: context)
    }

    /// Detaches `child` (its `key` becomes nil) and saves it.
    ///
    /// - Parameters:
    ///   - child: The record to detach; saved.
    ///   - key: Its foreign key.
    ///   - context: The database or transaction to write; the default database when nil.
    /// - Throws: `RecordDatabaseError.notSaved` when this record was never saved; what saving
    ///   throws.
    public func remove<C: ActiveRecord>(_ child: inout C, _ key: WritableKeyPath<C, Int64?>, on context: (any RecordContext)? = nil) throws {
        try requireSaved()
        guard child[keyPath: key] == id else { return }
        try child.setParent(Optional<Self>.none, key, on: context)
    }

    // MARK: hasManyThrough

    /// The records of type `R` linked to this one by join records of type `J`, whose `from`
    /// names this record and `to` names the other.
    ///
    /// - Parameters:
    ///   - type: The related records' type.
    ///   - join: The join records' type.
    ///   - from: The join's key naming this record.
    ///   - to: The join's key naming the related record.
    ///   - context: The database or transaction to read; the default database when nil.
    /// - Returns: The related records, in id order.
    /// - Throws: `RecordDatabaseError.notSaved` when this record was never saved; the storage's
    ///   errors.
    public func related<R: ActiveRecord, J: ActiveRecord>(
        _ type: R.Type, through join: J.Type, _ from: KeyPath<J, Int64?> & Sendable, _ to: KeyPath<J, Int64?>,
        on context: (any RecordContext)? = nil
    ) throws -> [R] {
        try requireSaved()
        let links = try J.query(on: context).where(from == Optional(id)).fetch()
        return try links.compactMap { link in try link[keyPath: to].flatMap { try R.find($0, on: context) } }
    }

    /// Links `other` to this record with a new join record made by `makeJoin(thisID, otherID)`;
    /// does nothing when they are already linked.
    ///
    /// - Parameters:
    ///   - other: The record to link; it must be saved.
    ///   - join: The join records' type.
    ///   - from: The join's key naming this record.
    ///   - to: The join's key naming `other`.
    ///   - context: The database or transaction to write; the default database when nil.
    ///   - makeJoin: Makes the join record from the two ids.
    /// - Throws: `RecordDatabaseError.notSaved` when either record was never saved; what saving
    ///   the join throws.
    public func link<R: ActiveRecord, J: ActiveRecord>(
        _ other: R, through join: J.Type, _ from: KeyPath<J, Int64?> & Sendable, _ to: KeyPath<J, Int64?> & Sendable,
        on context: (any RecordContext)? = nil, makeJoin: (Int64, Int64) -> J
    ) throws {
        try requireSaved()
        try other.requireSaved()
        let existing = try J.query(on: context).where(from == Optional(id) && to == Optional(other.id)).count()
        guard existing == 0 else { return }
        var record = makeJoin(id, other.id)
        try record.save(on: context)
    }

    /// Removes the join records linking `other` to this record.
    ///
    /// - Parameters:
    ///   - other: The linked record.
    ///   - join: The join records' type.
    ///   - from: The join's key naming this record.
    ///   - to: The join's key naming `other`.
    ///   - context: The database or transaction to write; the default database when nil.
    /// - Throws: `RecordDatabaseError.notSaved` when either record was never saved; the storage's
    ///   errors.
    public func unlink<R: ActiveRecord, J: ActiveRecord>(
        _ other: R, through join: J.Type, _ from: KeyPath<J, Int64?> & Sendable, _ to: KeyPath<J, Int64?> & Sendable,
        on context: (any RecordContext)? = nil
    ) throws {
        try requireSaved()
        try other.requireSaved()
        for link in try J.query(on: context).where(from == Optional(id) && to == Optional(other.id)).fetch() {
            try link.delete(on: context)
        }
    }
}

/// What deleting a record does to the records that point at it, declared on the parent type:
///
/// ```swift
/// static let dependents: [Dependent<Group>] = [.nullify(User.self, \.groupId), .destroy(Project.self, \.groupId)]
/// ```
public struct Dependent<Parent: ActiveRecord>: Sendable {
    let apply: @Sendable (_ parentID: Int64, _ writer: any StorageWriter) throws -> Void

    /// Deletes the children too (their own dependents apply in turn).
    ///
    /// - Parameters:
    ///   - child: The children's type.
    ///   - key: Their foreign key.
    /// - Returns: The rule, for `dependents`.
    public static func destroy<C: ActiveRecord>(_ child: C.Type, _ key: KeyPath<C, Int64?> & Sendable) -> Dependent {
        Dependent { parentID, writer in
            for record in try writer.read(C.filter(key == Optional(parentID))) { try C.deleteCascading(record.id, writer) }
        }
    }

    /// Sets the children's foreign key to nil.
    ///
    /// - Parameters:
    ///   - child: The children's type.
    ///   - key: Their foreign key.
    /// - Returns: The rule, for `dependents`.
    public static func nullify<C: ActiveRecord>(_ child: C.Type, _ key: WritableKeyPath<C, Int64?> & Sendable) -> Dependent {
        Dependent { parentID, writer in
            for var record in try writer.read(C.filter(key == Optional(parentID))) {
                record[keyPath: key] = nil
                record.updatedAt = Date()
                try writer.persist(record)
            }
        }
    }

    /// Refuses the delete while children exist (`RecordDeleteRestricted`).
    ///
    /// - Parameters:
    ///   - child: The children's type.
    ///   - key: Their foreign key.
    /// - Returns: The rule, for `dependents`.
    public static func restrict<C: ActiveRecord>(_ child: C.Type, _ key: KeyPath<C, Int64?> & Sendable) -> Dependent {
        Dependent { parentID, writer in
            let count = try writer.count(C.filter(key == Optional(parentID)))
            if count > 0 {
                throw RecordDeleteRestricted(model: Parent.collectionName, id: parentID, dependent: C.collectionName, count: count)
            }
        }
    }
}

/// A delete refused by a `.restrict` rule; nothing was deleted.
public struct RecordDeleteRestricted: Error, Sendable, Equatable, CustomStringConvertible {
    /// The record type whose delete was refused.
    public var model: String
    /// The record's id.
    public var id: Int64
    /// The dependent type whose records still refer to it.
    public var dependent: String
    /// How many do.
    public var count: Int

    /// A refusal to delete `model` `id` while `count` `dependent` records refer to it.
    ///
    /// - Parameters:
    ///   - model: The parent's collection.
    ///   - id: The parent's id.
    ///   - dependent: The children's collection.
    ///   - count: How many children refer to it.
    public init(model: String, id: Int64, dependent: String, count: Int) {
        (self.model, self.id, self.dependent, self.count) = (model, id, dependent, count)
    }

    public var description: String { "\(model) \(id) cannot be deleted: \(count) \(dependent) record(s) still refer to it" }
}

/// Record types with delete rules for the records that point at them.
public protocol HasDependents: ActiveRecord {
    static var dependents: [Dependent<Self>] { get }
}

extension ActiveRecord {
    /// Deletes one record and applies its type's dependency rules, in the caller's transaction.
    static func deleteCascading(_ id: Int64, _ writer: any StorageWriter) throws {
        if let rules = (Self.self as? any HasDependents.Type)?.dependencyRules() {
            for rule in rules { try rule(id, writer) }
        }
        _ = try writer.erase(Self.self, primaryKey: id)
    }
}

extension HasDependents {
    static func dependencyRules() -> [@Sendable (Int64, any StorageWriter) throws -> Void] { dependents.map(\.apply) }
}
