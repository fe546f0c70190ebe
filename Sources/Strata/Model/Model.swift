import Foundation
import StrataEngine
import Synchronization

/// Type names, computed once per type: `String(describing:)` demangles the type's name on
/// every call, and a query asks for its collection's name several times.
enum TypeNames {
    private static let names = Mutex<[ObjectIdentifier: String]>([:])

    static func name(of type: Any.Type) -> String {
        if let known = names.withLock({ $0[ObjectIdentifier(type)] }) { return known }
        let name = String(describing: type)
        names.withLock { $0[ObjectIdentifier(type)] = name }
        return name
    }
}

/// A value type stored in a collection: `Codable`, `Sendable`, with a schema naming its
/// primary key and indexes.
///
/// ```swift
/// struct User: Model {
///     var id: Int64
///     var name: String
///     var email: String
///     var age: Int
///
///     static let schema = Schema<User>(primaryKey: \.id, indexes: [
///         .index(\.age),
///         .unique(\.email),
///     ])
/// }
/// ```
///
/// A key path reaches the field `storedFields` declares for it, or else the field named
/// after the property (`\User.age` → `age`), which is where synthesized `Codable` stores it.
/// `@StoredModel` (product `StrataMacros`) declares every field and generates the record
/// coding; a plain `Codable` model declares only fields stored under another name, or
/// renamed (`StoredField.field(_:name:originalName:)`). The shape is read from these
/// declarations once per type (`Schema.description`), never learned by decoding made-up
/// records.
public protocol Model: Codable, Sendable {
    /// The collection's name in the file. Defaults to the type's name.
    static var collectionName: String { get }
    static var schema: Schema<Self> { get }
    /// The stored fields the model declares (see `StoredField`); none by default.
    static var storedFields: [StoredField<Self>] { get }
}

extension Model {
    /// The type's name: one collection per model type unless you name it.
    public static var collectionName: String { TypeNames.name(of: Self.self) }
    /// None declared: the fields are found by encoding a record (`@StoredModel` declares them).
    public static var storedFields: [StoredField<Self>] { [] }

    /// A query over this model's collection.
    ///
    /// - Returns: A query with no conditions: every model, in primary-key order.
    public static func query() -> Query<Self> { Query() }

    /// `query().filter(filter)`.
    ///
    /// - Parameter filter: The conditions, e.g. `\.age >= 18 && \.city == "Oslo"`.
    /// - Returns: A query of the models matching them.
    public static func filter(_ filter: Filter<Self>) -> Query<Self> { Query().filter(filter) }

    /// `query().filter(predicate)`.
    ///
    /// - Parameter predicate: A `#Predicate`; the comparisons the planner understands use indexes,
    ///   the rest are checked on each record.
    /// - Returns: A query of the models matching it.
    public static func filter(_ predicate: Predicate<Self>) -> Query<Self> { Query().filter(predicate) }
}

/// One stored field reached by a key path: how to read it into a key, and its name.
public struct FieldPath<M>: @unchecked Sendable, Hashable, CustomStringConvertible {
    /// The dotted property path, e.g. `age` or `address.city`.
    public private(set) var name: String
    package let keyPath: PartialKeyPath<M>
    let appendKey: (M, inout Key) -> Void

    /// The same field under the name `description` gives it.
    func named(by description: ModelDescription<M>) -> Self {
        guard let declared = description.field(keyPath) else { return self }
        var copy = self
        copy.name = declared.name
        return copy
    }

    /// The field at `keyPath`, stored under `name` (the property's name by default).
    ///
    /// - Parameters:
    ///   - keyPath: The stored property (or a path into a nested value).
    ///   - name: The field's stored name, when it is not the property path (say, for a custom
    ///     `CodingKeys` or a computed property).
    public init<V: KeyComponent>(_ keyPath: KeyPath<M, V>, name: String? = nil) {
        self.keyPath = keyPath
        self.name = name ?? Self.propertyName(of: keyPath)
        self.appendKey = { model, key in key.append(model[keyPath: keyPath]) }
    }

    /// `\User.address.city` → `address.city`: the stored field a key path reaches, as
    /// synthesized `Codable` names it. When reflection metadata is stripped the description
    /// is not a path; pass `name:` explicitly then.
    ///
    /// - Parameter keyPath: A key path from the model type.
    /// - Returns: The dotted property path.
    public static func propertyName(of keyPath: AnyKeyPath) -> String {
        let description = String(describing: keyPath)
        let prefix = "\\" + String(describing: M.self) + "."
        return description.hasPrefix(prefix) ? String(description.dropFirst(prefix.count)) : description
    }

    /// Whether the key path reaches a computed property rather than a stored field: Swift
    /// names those by an address that changes from one launch to the next, so they are
    /// stored under their index's explicit name instead (`IndexDefinition`).
    public var isComputed: Bool { name.hasPrefix("<computed") }

    /// The field's name.
    public var description: String { name }
    /// Fields are the same when their key paths are.
    public static func == (a: Self, b: Self) -> Bool { a.keyPath == b.keyPath }
    /// Hashes the key path.
    public func hash(into hasher: inout Hasher) { hasher.combine(keyPath) }
}

/// A secondary index over one field or a tuple of fields; unique or not.
///
/// An index on a computed property needs an explicit `name:`, which is what the file
/// records for it (Swift names a computed key path by an address that changes on every
/// launch):
///
/// ```swift
/// .index(\.fullName, name: "fullName")   // fullName is `var fullName: String { first + " " + last }`
/// ```
public struct IndexDefinition<M>: Sendable, Equatable {
    /// The index's name in the file (derived from its fields unless given).
    public private(set) var name: String
    /// The indexed fields, in key order.
    public private(set) var fields: [FieldPath<M>]
    /// Whether two records may not share the indexed value.
    public let isUnique: Bool
    /// Whether `name` was given rather than derived from the fields.
    let hasExplicitName: Bool

    /// The fields as the catalog records them: a stored field by its property path, a
    /// computed one as `@` + the index name (with `.N` for its position when the index
    /// has several fields), which stays the same across launches.
    package var storedFieldNames: [String] {
        fields.enumerated().map { position, field in
            guard field.isComputed else { return field.name }
            return "@" + name + (fields.count > 1 ? ".\(position)" : "")
        }
    }

    /// Why this index cannot be stored, or nil when it can.
    var unstableNameProblem: String? {
        guard fields.contains(where: \.isComputed), !hasExplicitName else { return nil }
        return "index '\(name)' is on a computed property, which Swift names differently on every launch; give it a stable name: .index(\\.property, name: \"…\")"
    }

    /// An index on one or more fields, e.g. `.index(\.age)` or `.index(\.lastName, \.firstName)`.
    ///
    /// - Parameters:
    ///   - first: The first indexed field.
    ///   - rest: The other fields, in key order; a query can use any leading run of them.
    ///   - name: The index's name in the file (the field names joined with `+` by default);
    ///     required for a computed property.
    /// - Returns: The index definition, for `Schema`'s `indexes:`.
    public static func index<First: KeyComponent, each V: KeyComponent>(_ first: KeyPath<M, First>, _ rest: repeat KeyPath<M, each V>, name: String? = nil) -> Self {
        make(first, repeat each rest, name: name, unique: false)
    }

    /// An index whose key (the field values together) no two records may share.
    ///
    /// - Parameters:
    ///   - first: The first indexed field.
    ///   - rest: The other fields, in key order.
    ///   - name: The index's name in the file (the field names joined with `+` by default).
    /// - Returns: The index definition; a write that would give two records the same key fails
    ///   with `StorageError.uniqueViolation`.
    public static func unique<First: KeyComponent, each V: KeyComponent>(_ first: KeyPath<M, First>, _ rest: repeat KeyPath<M, each V>, name: String? = nil) -> Self {
        make(first, repeat each rest, name: name, unique: true)
    }

    /// An array field cannot be indexed (only `[UInt8]`, stored as bytes): an index holds one
    /// key per record, and an array would need one per element. Store the elements as
    /// records of their own collection, each with the owner's id, and index those.
    // Unavailable: no call compiles, so the bodies never run.
    @available(*, unavailable, message: "an index holds one key per record, and an array would need one per element: store the elements as records of their own collection (with the owner's id) and index that field")
    public static func index<Element: KeyComponent>(_ elements: KeyPath<M, [Element]>, name: String? = nil) -> Self { fatalError("unavailable") }

    /// Refused at compile time, as `index` on an array is.
    @available(*, unavailable, message: "an index holds one key per record, and an array would need one per element: store the elements as records of their own collection (with the owner's id) and index that field")
    public static func unique<Element: KeyComponent>(_ elements: KeyPath<M, [Element]>, name: String? = nil) -> Self { fatalError("unavailable") }

    private static func make<First: KeyComponent, each V: KeyComponent>(_ first: KeyPath<M, First>, _ rest: repeat KeyPath<M, each V>, name: String?, unique: Bool) -> Self {
        var fields: [FieldPath<M>] = [FieldPath(first)]
        for path in repeat each rest { fields.append(FieldPath(path)) }
        // A closure, not `\.name`: a key-path literal in a parameter-pack generic context
        // fails to demangle at run time (Swift 6.3).
        return IndexDefinition(name: name ?? fields.map { $0.name }.joined(separator: "+"), fields: fields, isUnique: unique, hasExplicitName: name != nil)
    }

    /// The index with its fields named by `description` (and its derived name after them).
    func named(by description: ModelDescription<M>) -> Self {
        var copy = self
        copy.fields = fields.map { $0.named(by: description) }
        if !hasExplicitName { copy.name = copy.fields.map(\.name).joined(separator: "+") }
        return copy
    }

    /// The index key of `model`: its field values, in order.
    package func key(of model: M) -> Key {
        var key = Key()
        for field in fields { field.appendKey(model, &key) }
        return key
    }
}

/// How a model is stored: its primary key (one field or several), its indexes, and
/// optionally an auto-assigned integer id.
public struct Schema<M: Model>: Sendable {
    /// The primary key's fields, in key order.
    public let primaryKey: [FieldPath<M>]
    /// The secondary indexes.
    public let indexes: [IndexDefinition<M>]
    /// The model's declared fields (`Model.storedFields`), read once, here.
    public let description: ModelDescription<M>
    let autoIncrement: AutoIncrement<M>?

    /// A schema with a primary key of one or more fields (at least one: an empty primary
    /// key does not compile).
    ///
    /// ```swift
    /// Schema<Order>(primaryKey: \.customerId, \.number, indexes: [.index(\.placedAt)])
    /// ```
    ///
    /// - Parameters:
    ///   - first: The primary key's first field.
    ///   - rest: Its other fields, in key order (records are stored in this order).
    ///   - indexes: The secondary indexes, built on first use when the collection already holds
    ///     records.
    public init<First: KeyComponent, each V: KeyComponent>(primaryKey first: KeyPath<M, First>, _ rest: repeat KeyPath<M, each V>, indexes: [IndexDefinition<M>] = []) {
        var fields: [FieldPath<M>] = [FieldPath(first)]
        for path in repeat each rest { fields.append(FieldPath(path)) }
        self.init(primaryKey: fields, indexes: indexes, autoIncrement: nil)
    }

    /// A schema whose integer primary key is assigned on `create` when it is 0: ids are
    /// unique and increasing, never reused, across reopens and deletes.
    ///
    /// - Parameters:
    ///   - id: The id property; a model created with 0 there is given the next id.
    ///   - indexes: The secondary indexes.
    /// - Returns: The schema.
    public static func autoIncrementing(_ id: WritableKeyPath<M, Int64>, indexes: [IndexDefinition<M>] = []) -> Schema {
        Schema(primaryKey: [FieldPath(id)], indexes: indexes, autoIncrement: AutoIncrement(get: { $0[keyPath: id] }, set: { $0[keyPath: id] = $1 }))
    }

    /// `autoIncrementing` for an `Int` id.
    ///
    /// - Parameters:
    ///   - id: The id property; a model created with 0 there is given the next id.
    ///   - indexes: The secondary indexes.
    /// - Returns: The schema.
    public static func autoIncrementing(_ id: WritableKeyPath<M, Int>, indexes: [IndexDefinition<M>] = []) -> Schema {
        Schema(primaryKey: [FieldPath(id)], indexes: indexes, autoIncrement: AutoIncrement(get: { Int64($0[keyPath: id]) }, set: { $0[keyPath: id] = Int($1) }))
    }

    /// Whether `create` assigns ids (the schema was made by `autoIncrementing`).
    public var isAutoIncrementing: Bool { autoIncrement != nil }

    private init(primaryKey: [FieldPath<M>], indexes: [IndexDefinition<M>], autoIncrement: AutoIncrement<M>?) {
        let description = ModelDescription(fields: M.storedFields)
        self.description = description
        self.primaryKey = primaryKey.map { $0.named(by: description) }
        self.indexes = indexes.map { $0.named(by: description) }
        self.autoIncrement = autoIncrement
    }

    /// The primary key of `model`, encoded: pass it wherever a primary key is asked for.
    ///
    /// ```swift
    /// try storage.erase(User.self, primaryKey: User.schema.primaryKey(of: user))
    /// ```
    ///
    /// - Parameter model: A model of this schema.
    /// - Returns: Its primary key's field values, encoded as one key.
    public func primaryKey(of model: M) -> Key {
        var key = Key()
        for field in primaryKey { field.appendKey(model, &key) }
        return key
    }
}

/// Reads and assigns an auto-incremented id.
struct AutoIncrement<M>: @unchecked Sendable {
    let get: (M) -> Int64
    let set: (inout M, Int64) -> Void
}
