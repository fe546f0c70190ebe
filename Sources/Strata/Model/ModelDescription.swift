import Foundation

/// One stored field of a model as the model declares it: the key path that reads it, the name
/// it is stored under, the names it was stored under before (renames), and its stored type
/// where the Swift type fixes it.
///
/// `@StoredModel` (product `StrataMacros`) declares every stored property this way. A plain
/// `Codable` model declares the fields whose stored name or history differs from the
/// property, in `storedFields`:
///
/// ```swift
/// struct Note: Model {
///     var id: Int64
///     var body: String          // was `text` in version 1 of the app
///     static let storedFields: [StoredField<Note>] = [.field(\.body, originalName: "text")]
///     static let schema = Schema<Note>(primaryKey: \.id)
/// }
/// ```
public struct StoredField<M>: @unchecked Sendable {
    /// The name the field is stored under.
    public let name: String
    /// The property.
    public let keyPath: PartialKeyPath<M>
    /// Names the field was stored under by earlier versions of the model, newest first:
    /// opening a collection for writing moves their values to `name`.
    public let originalNames: [String]
    /// The stored type the Swift type maps to; nil when only a stored value tells (enums,
    /// custom `Codable` types).
    public let storedType: StoredType?

    /// A field read by `keyPath`, stored under `name` (by default the property's name, as
    /// synthesized `Codable` stores it).
    ///
    /// - Parameters:
    ///   - keyPath: The stored property.
    ///   - name: Its stored name, when not the property's (a custom `CodingKeys`).
    ///   - originalName: The name it was stored under before a rename: opening the collection
    ///     for writing moves the values, and reads find either.
    /// - Returns: The declaration, for `Model.storedFields`.
    public static func field<V>(_ keyPath: KeyPath<M, V>, name: String? = nil, originalName: String? = nil) -> Self {
        StoredField(name: name ?? FieldPath<M>.propertyName(of: keyPath), keyPath: keyPath,
                    originalNames: originalName.map { [$0] } ?? [], storedType: StoredType(of: V.self))
    }
}

/// Everything the typed layer knows about a model's stored shape, built once per type from
/// its declarations (`Model.storedFields` and `Model.schema`) — never by running the model's
/// coding on made-up records.
///
/// A key path the model declares maps to its declared field; any other key path to the
/// property's name, which is where synthesized `Codable` stores it. Only declared fields are
/// trusted to hold exactly what their key path reads, so only they are compared on stored
/// bytes before decoding (`RecordPrefilter`).
public struct ModelDescription<M>: @unchecked Sendable {
    /// The declared fields, in declaration order.
    public let fields: [StoredField<M>]
    private let byKeyPath: [AnyKeyPath: Int]
    /// Declared renames, as (earlier name, current name). Kept, not computed: every
    /// collection access and write consults it.
    let renames: [(from: String, to: String)]

    init(fields: [StoredField<M>]) {
        self.fields = fields
        byKeyPath = Dictionary(fields.enumerated().map { ($1.keyPath as AnyKeyPath, $0) }, uniquingKeysWith: { first, _ in first })
        renames = fields.flatMap { field in field.originalNames.map { (from: $0, to: field.name) } }
    }

    /// The declared field `keyPath` reads, or nil.
    ///
    /// - Parameter keyPath: A key path from the model type.
    /// - Returns: The declaration, or nil when the model declares no field at that path.
    public func field(_ keyPath: AnyKeyPath) -> StoredField<M>? {
        byKeyPath[keyPath].map { fields[$0] }
    }

    /// The stored name of the field `keyPath` reads.
    ///
    /// - Parameter keyPath: A key path from the model type.
    /// - Returns: The declared name, or the property path.
    public func name(of keyPath: AnyKeyPath) -> String {
        field(keyPath)?.name ?? FieldPath<M>.propertyName(of: keyPath)
    }

    /// Why the declarations cannot be used, or nil when they can.
    var problem: String? {
        var seen: Set<String> = []
        for field in fields {
            guard seen.insert(field.name).inserted else { return "two fields are stored as '\(field.name)'" }
        }
        for (from, to) in renames where seen.contains(from) {
            return "'\(to)' declares the original name '\(from)', which a current field still uses"
        }
        return nil
    }
}

/// A model whose `storedFields` lists every stored field, as `@StoredModel` generates it.
/// The catalog then records which fields the model reads, and `storedump` reports stored
/// fields that no such model reads (a rename nobody declared, a dropped field).
public protocol DescribedModel: Model {}

extension StoredType {
    /// The stored type a Swift type is encoded as, when the type alone fixes it.
    init?(of type: Any.Type) {
        switch type {
        case is any BinaryInteger.Type: self = .integer
        case is any BinaryFloatingPoint.Type: self = .floating
        case is Bool.Type: self = .bool
        case is String.Type, is Substring.Type: self = .string
        case is Data.Type: self = .bytes
        case is Date.Type: self = .date
        case is UUID.Type: self = .uuid
        case is URL.Type: self = .url
        case is Decimal.Type: self = .decimal
        case let optional as any OptionalType.Type: self.init(of: optional.wrappedType)
        default: return nil
        }
    }
}

/// `Optional`'s wrapped type, reachable from a metatype.
private protocol OptionalType { static var wrappedType: Any.Type { get } }
extension Optional: OptionalType { static var wrappedType: Any.Type { Wrapped.self } }
