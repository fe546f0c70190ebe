import Foundation
import Synchronization

/// Encodes `Encodable` values into Strata's binary record format. Field names are interned
/// in `fields`; the record holds only their ids.
///
/// ```swift
/// var fields = FieldTable()
/// let bytes = try RecordEncoder.encode(user, fields: &fields, collection: "users")
/// let back = try RecordDecoder.decode(User.self, from: bytes, fields: fields, collection: "users")
/// ```
public enum RecordEncoder {
    public static func encode<T: Encodable>(_ value: T, fields: inout FieldTable, collection: String) throws -> [UInt8] {
        let context = EncodingContext(fields: fields, collection: collection)
        let root = try context.box(value, parent: nil, key: nil)
        var out = RecordBytes(capacity: 128)
        context.write(root, to: &out)
        fields = context.fields
        return out.bytes
    }
}

/// An encoded value before serialization.
enum EncodedValue {
    case null
    case bool(Bool)
    case int(Int64)
    case uint(UInt64)
    case double(Double)
    case float(Float)
    case string(String)
    case bytes(Data)
    case date(Double)
    case uuid(UUID)
    case url(String)
    case decimal(String)
    case keyed(KeyedBox)
    case unkeyed(UnkeyedBox)
    case map(MapBox)
    case deferred(DeferredBox)
}

final class KeyedBox {
    var fields: [(UInt32, EncodedValue)] = []
    init() { fields.reserveCapacity(8) }
}
final class UnkeyedBox { var values: [EncodedValue] = [] }
final class MapBox { var entries: [(String, EncodedValue)] = [] }
/// The value of a `superEncoder`, filled in after it is handed out.
final class DeferredBox { var encoder: ValueEncoder? }

final class EncodingContext {
    var fields: FieldTable
    let collection: String
    /// How many field names this record has interned so far (for the order hint).
    var fieldPosition = 0

    init(fields: FieldTable, collection: String) {
        self.fields = fields
        self.collection = collection
    }

    /// Encodes one value, short-cutting the Foundation types the format stores natively.
    /// Metatype identity is compared rather than casting the value: a pointer comparison
    /// instead of a runtime dynamic cast per check.
    func box<T: Encodable>(_ value: T, parent: ValueEncoder?, key: CodingKey?) throws -> EncodedValue {
        let type = T.self
        if type == String.self { return .string(value as! String) }
        if type == Date.self { return .date((value as! Date).timeIntervalSince1970) }
        if type == UUID.self { return .uuid(value as! UUID) }
        if type == Data.self { return .bytes(value as! Data) }
        if type == URL.self { return .url((value as! URL).absoluteString) }
        if type == Decimal.self { return .decimal((value as! Decimal).description) }
        let encoder = ValueEncoder(context: self, parent: parent, key: key)
        try value.encode(to: encoder)
        return encoder.value ?? .keyed(KeyedBox())
    }

    func write(_ value: EncodedValue, to out: inout RecordBytes) {
        switch value {
        case .null: out.tag(.null)
        case .bool(let v): out.tag(.bool); out.bytes.append(v ? 1 : 0)
        case .int(let v): out.tag(.int); out.varint(RecordBytes.zigzag(v))
        case .uint(let v): out.tag(.uint); out.varint(v)
        case .double(let v): out.tag(.double); out.fixed(v.bitPattern)
        case .float(let v): out.tag(.float); out.fixed(v.bitPattern)
        case .string(let v): out.tag(.string); out.string(v)
        case .bytes(let v): out.tag(.bytes); out.varint(UInt64(v.count)); out.bytes.append(contentsOf: v)
        case .date(let v): out.tag(.date); out.fixed(v.bitPattern)
        case .uuid(let v): out.tag(.uuid); withUnsafeBytes(of: v.uuid) { out.bytes.append(contentsOf: $0) }
        case .url(let v): out.tag(.url); out.string(v)
        case .decimal(let v): out.tag(.decimal); out.string(v)
        case .keyed(let box):
            out.tag(.keyed)
            out.varint(UInt64(box.fields.count))
            for (id, field) in box.fields {
                out.varint(UInt64(id))
                write(field, to: &out)
            }
        case .unkeyed(let box):
            out.tag(.unkeyed)
            out.varint(UInt64(box.values.count))
            for element in box.values { write(element, to: &out) }
        case .map(let box):
            out.tag(.map)
            out.varint(UInt64(box.entries.count))
            for (key, element) in box.entries {
                out.string(key)
                write(element, to: &out)
            }
        case .deferred(let box):
            write(box.encoder?.value ?? .null, to: &out)
        }
    }
}

/// Whether a keyed container is Swift's `Dictionary` (its keys are data, stored inline as
/// a map) rather than a type's coding keys (interned as field names).
enum DictionaryKeys {
    private static let cache = Mutex<[ObjectIdentifier: Bool]>([:])

    static func isDictionary<Key: CodingKey>(_ type: Key.Type) -> Bool {
        let id = ObjectIdentifier(type)
        if let known = cache.withLock({ $0[id] }) { return known }
        let result = String(reflecting: type).contains("DictionaryCodingKey")
        cache.withLock { $0[id] = result }
        return result
    }
}

final class ValueEncoder: Encoder, CodingPathNode {
    let context: EncodingContext
    let parent: ValueEncoder?
    let key: CodingKey?
    var value: EncodedValue?

    init(context: EncodingContext, parent: ValueEncoder?, key: CodingKey?) {
        self.context = context
        self.parent = parent
        self.key = key
    }

    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        if DictionaryKeys.isDictionary(type) {
            if case .map(let box) = value { return KeyedEncodingContainer(MapEncodingContainer(encoder: self, box: box)) }
            let box = MapBox()
            value = .map(box)
            return KeyedEncodingContainer(MapEncodingContainer(encoder: self, box: box))
        }
        if case .keyed(let box) = value { return KeyedEncodingContainer(KeyedRecordEncodingContainer(encoder: self, box: box)) }
        let box = KeyedBox()
        value = .keyed(box)
        return KeyedEncodingContainer(KeyedRecordEncodingContainer(encoder: self, box: box))
    }

    func unkeyedContainer() -> UnkeyedEncodingContainer {
        if case .unkeyed(let box) = value { return UnkeyedRecordEncodingContainer(encoder: self, box: box) }
        let box = UnkeyedBox()
        value = .unkeyed(box)
        return UnkeyedRecordEncodingContainer(encoder: self, box: box)
    }

    func singleValueContainer() -> SingleValueEncodingContainer { SingleValueRecordEncodingContainer(encoder: self) }

    /// An encoder whose value is read when the record is written, for `superEncoder`.
    func deferredEncoder(key: CodingKey) -> (ValueEncoder, EncodedValue) {
        let nested = ValueEncoder(context: context, parent: self, key: key)
        let box = DeferredBox()
        box.encoder = nested
        return (nested, .deferred(box))
    }
}

/// The key `superEncoder()` and `superDecoder()` use.
struct SuperKey: CodingKey {
    var stringValue: String { "super" }
    var intValue: Int? { nil }
    init() {}
    init?(stringValue: String) { guard stringValue == "super" else { return nil } }
    init?(intValue: Int) { nil }
}

struct KeyedRecordEncodingContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let encoder: ValueEncoder
    let box: KeyedBox
    var codingPath: [CodingKey] { encoder.codingPath }

    private func put(_ value: EncodedValue, _ key: Key) {
        let context = encoder.context
        box.fields.append((context.fields.intern(key.stringValue, at: context.fieldPosition), value))
        context.fieldPosition += 1
    }

    mutating func encodeNil(forKey key: Key) throws { put(.null, key) }
    mutating func encode(_ value: Bool, forKey key: Key) throws { put(.bool(value), key) }
    mutating func encode(_ value: String, forKey key: Key) throws { put(.string(value), key) }
    mutating func encode(_ value: Double, forKey key: Key) throws { put(.double(value), key) }
    mutating func encode(_ value: Float, forKey key: Key) throws { put(.float(value), key) }
    mutating func encode(_ value: Int, forKey key: Key) throws { put(.int(Int64(value)), key) }
    mutating func encode(_ value: Int8, forKey key: Key) throws { put(.int(Int64(value)), key) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { put(.int(Int64(value)), key) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { put(.int(Int64(value)), key) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { put(.int(value), key) }
    mutating func encode(_ value: UInt, forKey key: Key) throws { put(.uint(UInt64(value)), key) }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { put(.uint(UInt64(value)), key) }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { put(.uint(UInt64(value)), key) }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { put(.uint(UInt64(value)), key) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { put(.uint(value), key) }

    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        put(try encoder.context.box(value, parent: encoder, key: key), key)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
        let nested = ValueEncoder(context: encoder.context, parent: encoder, key: key)
        let container = nested.container(keyedBy: keyType)
        put(nested.value ?? .null, key)
        return container
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> UnkeyedEncodingContainer {
        let nested = ValueEncoder(context: encoder.context, parent: encoder, key: key)
        let container = nested.unkeyedContainer()
        put(nested.value ?? .null, key)
        return container
    }

    mutating func superEncoder() -> Encoder {
        let (nested, value) = encoder.deferredEncoder(key: SuperKey())
        box.fields.append((encoder.context.fields.intern(SuperKey().stringValue), value))
        return nested
    }

    mutating func superEncoder(forKey key: Key) -> Encoder {
        let (nested, value) = encoder.deferredEncoder(key: key)
        put(value, key)
        return nested
    }
}

struct MapEncodingContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let encoder: ValueEncoder
    let box: MapBox
    var codingPath: [CodingKey] { encoder.codingPath }

    mutating func encodeNil(forKey key: Key) throws { box.entries.append((key.stringValue, .null)) }

    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        box.entries.append((key.stringValue, try encoder.context.box(value, parent: encoder, key: key)))
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
        let nested = ValueEncoder(context: encoder.context, parent: encoder, key: key)
        let container = nested.container(keyedBy: keyType)
        box.entries.append((key.stringValue, nested.value ?? .null))
        return container
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> UnkeyedEncodingContainer {
        let nested = ValueEncoder(context: encoder.context, parent: encoder, key: key)
        let container = nested.unkeyedContainer()
        box.entries.append((key.stringValue, nested.value ?? .null))
        return container
    }

    mutating func superEncoder() -> Encoder {
        let (nested, value) = encoder.deferredEncoder(key: SuperKey())
        box.entries.append((SuperKey().stringValue, value))
        return nested
    }

    mutating func superEncoder(forKey key: Key) -> Encoder {
        let (nested, value) = encoder.deferredEncoder(key: key)
        box.entries.append((key.stringValue, value))
        return nested
    }
}

struct UnkeyedRecordEncodingContainer: UnkeyedEncodingContainer {
    let encoder: ValueEncoder
    let box: UnkeyedBox
    var codingPath: [CodingKey] { encoder.codingPath }
    var count: Int { box.values.count }

    mutating func encodeNil() throws { box.values.append(.null) }
    mutating func encode(_ value: Bool) throws { box.values.append(.bool(value)) }
    mutating func encode(_ value: String) throws { box.values.append(.string(value)) }
    mutating func encode(_ value: Double) throws { box.values.append(.double(value)) }
    mutating func encode(_ value: Float) throws { box.values.append(.float(value)) }
    mutating func encode(_ value: Int) throws { box.values.append(.int(Int64(value))) }
    mutating func encode(_ value: Int64) throws { box.values.append(.int(value)) }
    mutating func encode(_ value: UInt64) throws { box.values.append(.uint(value)) }

    mutating func encode<T: Encodable>(_ value: T) throws {
        switch value {
        case let v as Int8: box.values.append(.int(Int64(v)))
        case let v as Int16: box.values.append(.int(Int64(v)))
        case let v as Int32: box.values.append(.int(Int64(v)))
        case let v as UInt: box.values.append(.uint(UInt64(v)))
        case let v as UInt8: box.values.append(.uint(UInt64(v)))
        case let v as UInt16: box.values.append(.uint(UInt64(v)))
        case let v as UInt32: box.values.append(.uint(UInt64(v)))
        default: box.values.append(try encoder.context.box(value, parent: encoder, key: IndexKey(box.values.count)))
        }
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        let nested = ValueEncoder(context: encoder.context, parent: encoder, key: IndexKey(box.values.count))
        let container = nested.container(keyedBy: keyType)
        box.values.append(nested.value ?? .null)
        return container
    }

    mutating func nestedUnkeyedContainer() -> UnkeyedEncodingContainer {
        let nested = ValueEncoder(context: encoder.context, parent: encoder, key: IndexKey(box.values.count))
        let container = nested.unkeyedContainer()
        box.values.append(nested.value ?? .null)
        return container
    }

    mutating func superEncoder() -> Encoder {
        let (nested, value) = encoder.deferredEncoder(key: IndexKey(box.values.count))
        box.values.append(value)
        return nested
    }
}

struct SingleValueRecordEncodingContainer: SingleValueEncodingContainer {
    let encoder: ValueEncoder
    var codingPath: [CodingKey] { encoder.codingPath }

    mutating func encodeNil() throws { encoder.value = .null }
    mutating func encode(_ value: Bool) throws { encoder.value = .bool(value) }
    mutating func encode(_ value: String) throws { encoder.value = .string(value) }
    mutating func encode(_ value: Double) throws { encoder.value = .double(value) }
    mutating func encode(_ value: Float) throws { encoder.value = .float(value) }
    mutating func encode(_ value: Int) throws { encoder.value = .int(Int64(value)) }
    mutating func encode(_ value: Int8) throws { encoder.value = .int(Int64(value)) }
    mutating func encode(_ value: Int16) throws { encoder.value = .int(Int64(value)) }
    mutating func encode(_ value: Int32) throws { encoder.value = .int(Int64(value)) }
    mutating func encode(_ value: Int64) throws { encoder.value = .int(value) }
    mutating func encode(_ value: UInt) throws { encoder.value = .uint(UInt64(value)) }
    mutating func encode(_ value: UInt8) throws { encoder.value = .uint(UInt64(value)) }
    mutating func encode(_ value: UInt16) throws { encoder.value = .uint(UInt64(value)) }
    mutating func encode(_ value: UInt32) throws { encoder.value = .uint(UInt64(value)) }
    mutating func encode(_ value: UInt64) throws { encoder.value = .uint(value) }

    mutating func encode<T: Encodable>(_ value: T) throws {
        encoder.value = try encoder.context.box(value, parent: encoder.parent, key: encoder.key)
    }
}
