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
///
/// Values are written straight into the output as they are encoded; a container's element
/// count is patched in when the value that opened it is done. Containers handed out for
/// later filling (`nestedContainer`, `superEncoder`) write into their own segment, spliced
/// in place when their parent is done.
public enum RecordEncoder {
    /// Encodes a record, adding new field names to `fields`.
    /// - Throws: `RecordError.unencodable` for a value the format cannot hold.
    /// - Parameters:
    ///   - value: The value to encode.
    ///   - fields: The collection's field table; names it lacks are added.
    ///   - collection: The collection's name, for errors.
    /// - Returns: The record's bytes (FORMAT.md §15).
    public static func encode<T: Encodable>(_ value: T, fields: inout FieldTable, collection: String) throws -> [UInt8] {
        if let fast = fastEncoder(of: T.self) { return try fast.encode(value, &fields, collection) }
        let context = EncodingContext(fields: fields, collection: collection)
        let root = Segment()
        try context.encode(value, into: root, parent: nil, key: nil)
        fields = context.fields
        return root.bytes
    }

    /// `T`'s own encoding when it is `RecordCodable`, found once per type: casting each
    /// value to `any RecordCodable` boxed it (a model is larger than an existential's
    /// inline buffer) and asked the runtime for the conformance, ~360 instructions per insert.
    private static func fastEncoder<T: Encodable>(of type: T.Type) -> FastEncoder<T>? {
        guard let found = fastEncoders.object(for: type, make: { FastEncoder<T>.make() }) else { return nil }
        return unsafeDowncast(found, to: FastEncoder<T>.self)
    }

    private static let fastEncoders = TypeKeyedTable()

    /// A `RecordCodable` type's `encode`, reached through a function of `T`.
    private final class FastEncoder<T>: Sendable {
        let encode: @Sendable (T, inout FieldTable, String) throws -> [UInt8]

        private init(_ encode: @escaping @Sendable (T, inout FieldTable, String) throws -> [UInt8]) { self.encode = encode }

        /// Nil when `T` is not `RecordCodable` (it encodes through `Encodable`).
        static func make() -> FastEncoder<T>? {
            guard let fast = T.self as? any RecordCodable.Type else { return nil }
            func encoder<R: RecordCodable>(_: R.Type) -> FastEncoder<T> {
                // R is T (the cast above found it): reinterpreting the value is a plain copy.
                FastEncoder { value, fields, collection in
                    try RecordEncoder.encode(unsafeBitCast(value, to: R.self), fields: &fields, collection: collection)
                }
            }
            return encoder(fast)
        }
    }

    /// `encode` for a `RecordCodable` value: its own field writes, no Codable containers.
    ///
    /// - Parameters:
    ///   - value: The value to encode.
    ///   - fields: The collection's field table; names it lacks are added.
    ///   - collection: The collection's name, for errors.
    /// - Returns: The record's bytes, the same as the `Codable` path writes.
    /// - Throws: `RecordError.unencodable` for a value the format cannot hold.
    public static func encode<T: RecordCodable>(_ value: T, fields: inout FieldTable, collection: String) throws -> [UInt8] {
        // The writer interns into the caller's table in place: no copies, no reference counting.
        try withUnsafeMutablePointer(to: &fields) { table in
            var writer = RecordWriter(fields: table, collection: collection)
            try value.encode(to: &writer)
            return writer.finish()
        }
    }
}

/// A byte buffer one or more encoders write into.
///
/// Encoding state lives in classes (Codable hands out containers by value) and is used by
/// one thread at a time, inside one `encode` call: the hot properties opt out of dynamic
/// exclusivity checks, which otherwise cost more than the writes themselves.
final class Segment {
    @exclusivity(unchecked) var bytes: [UInt8]

    init(capacity: Int = 128) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    @inline(__always) func tag(_ t: RecordTag) { bytes.appendTag(t) }
    @inline(__always) func varint(_ v: UInt64) { bytes.appendVarint(v) }
    @inline(__always) func fixed<T: FixedWidthInteger>(_ v: T) { bytes.appendFixed(v) }
    func string(_ s: String) { bytes.appendString(s) }
    func int(_ v: Int64) { bytes.appendInt(v) }
    func uint(_ v: UInt64) { bytes.appendUInt(v) }
    func double(_ v: Double) { bytes.appendDouble(v) }
    func float(_ v: Float) { tag(.float); fixed(v.bitPattern) }
    func bool(_ v: Bool) { bytes.appendBool(v) }
    func text(_ v: String) { bytes.appendText(v) }
}

final class EncodingContext {
    @exclusivity(unchecked) var fields: FieldTable
    let collection: String
    /// How many field names this record has interned so far (for the order hint).
    @exclusivity(unchecked) var fieldPosition = 0

    init(fields: FieldTable, collection: String) {
        self.fields = fields
        self.collection = collection
    }

    func fieldID(_ key: CodingKey) -> UInt32 { fieldID(key.stringValue) }

    func fieldID(_ name: String) -> UInt32 {
        defer { fieldPosition += 1 }
        return fields.intern(name, at: fieldPosition)
    }

    /// Writes one value at the end of `segment`, short-cutting the Foundation types the
    /// format stores natively. Metatype identity is compared rather than casting the value:
    /// a pointer comparison instead of a runtime dynamic cast per check.
    func encode<T: Encodable>(_ value: T, into segment: Segment, parent: ValueEncoder?, key: CodingKey?) throws {
        let type = T.self
        if type == String.self { return segment.text(value as! String) }
        // Seconds since Foundation's reference date, as `Date` holds them: every Date round-trips
        // exactly (converting to seconds since 1970 rounds about half of them).
        if type == Date.self { segment.tag(.referenceDate); return segment.fixed((value as! Date).timeIntervalSinceReferenceDate.bitPattern) }
        if type == UUID.self { segment.tag(.uuid); return withUnsafeBytes(of: (value as! UUID).uuid) { segment.bytes.append(contentsOf: $0) } }
        if type == Data.self {
            let data = value as! Data
            segment.tag(.bytes)
            segment.varint(UInt64(data.count))
            return segment.bytes.append(contentsOf: data)
        }
        if type == URL.self { segment.tag(.url); return segment.string((value as! URL).absoluteString) }
        if type == Decimal.self { segment.tag(.decimal); return segment.string((value as! Decimal).description) }
        let encoder = ValueEncoder(context: self, segment: segment, parent: parent, key: key)
        guard encoder.depth <= RecordLimits.maxNestingDepth else {
            throw RecordError.unencodable(collection: collection, reason: "the value at \(encoder.codingPath.map(\.stringValue).joined(separator: ".")) nests deeper than \(RecordLimits.maxNestingDepth) levels, more than a record may hold")
        }
        try value.encode(to: encoder)
        encoder.finish()
    }
}

/// The record format's primitive encodings, appended to a byte array: shared by `Segment`
/// (the Codable path) and `RecordWriter` (the fast path), so both write each value alike.
extension [UInt8] {
    @inline(__always) mutating func appendTag(_ t: RecordTag) { append(t.rawValue) }

    @inline(__always) mutating func appendVarint(_ v: UInt64) {
        var v = v
        while v >= 0x80 {
            append(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        append(UInt8(v))
    }

    @inline(__always) mutating func appendFixed<T: FixedWidthInteger>(_ v: T) {
        Swift.withUnsafeBytes(of: v.littleEndian) { append(contentsOf: $0) }
    }

    /// Varint length, then UTF-8.
    mutating func appendString(_ s: String) {
        // Native strings lend their UTF-8 without a copy; others are made contiguous first.
        if let done: Void = s.utf8.withContiguousStorageIfAvailable({ utf8 in
            appendVarint(UInt64(utf8.count))
            append(contentsOf: utf8)
        }) { return done }
        var s = s
        s.withUTF8 { utf8 in
            appendVarint(UInt64(utf8.count))
            append(contentsOf: utf8)
        }
    }

    @inline(__always) mutating func appendInt(_ v: Int64) { appendTag(.int); appendVarint(ZigZag.encode(v)) }
    @inline(__always) mutating func appendUInt(_ v: UInt64) { appendTag(.uint); appendVarint(v) }
    @inline(__always) mutating func appendDouble(_ v: Double) { appendTag(.double); appendFixed(v.bitPattern) }
    @inline(__always) mutating func appendBool(_ v: Bool) { appendTag(.bool); append(v ? 1 : 0) }
    @inline(__always) mutating func appendText(_ v: String) { appendTag(.string); appendString(v) }
}

/// Whether a keyed container is Swift's `Dictionary` (its keys are data, stored inline as
/// a map) rather than a type's coding keys (interned as field names).
enum DictionaryKeys {
    private static let cache = Mutex<[ObjectIdentifier: Bool]>([:])
    /// The last key type asked about, with its answer in the low bit (metadata pointers are
    /// aligned): records of one type ask about the same key type every time.
    private static let last = Atomic<UInt>(0)

    static func isDictionary<Key: CodingKey>(_ type: Key.Type) -> Bool {
        let id = ObjectIdentifier(type)
        let pointer = UInt(bitPattern: id)
        let memo = last.load(ordering: .relaxed)
        if memo & ~1 == pointer { return memo & 1 == 1 }
        let result: Bool
        if let known = cache.withLock({ $0[id] }) {
            result = known
        } else {
            result = String(reflecting: type).contains("DictionaryCodingKey")
            cache.withLock { $0[id] = result }
        }
        last.store(pointer | (result ? 1 : 0), ordering: .relaxed)
        return result
    }
}

/// The encoder of one value. It writes at the end of its segment; when it opens a
/// container, the container's tag and a one-byte count placeholder go first, and `finish()`
/// patches the count (widening the varint if needed) and splices in detached segments.
final class ValueEncoder: Encoder, CodingPathNode {
    enum Container { case none, keyed, unkeyed, map, single }

    let context: EncodingContext
    let segment: Segment
    let parent: ValueEncoder?
    let key: CodingKey?
    /// Encoders from the record's root to this one.
    let depth: Int
    @exclusivity(unchecked) private(set) var container = Container.none
    @exclusivity(unchecked) private var countPosition = 0
    @exclusivity(unchecked) var count = 0
    /// Segments of detached containers, by the position they belong at.
    private var splices: [(position: Int, encoder: ValueEncoder)] = []

    init(context: EncodingContext, segment: Segment, parent: ValueEncoder?, key: CodingKey?) {
        self.context = context
        self.segment = segment
        self.parent = parent
        self.key = key
        self.depth = (parent?.depth ?? 0) + 1
    }

    var userInfo: [CodingUserInfoKey: Any] { [:] }

    private func open(_ kind: Container, tag: RecordTag) {
        guard container == .none else { return }
        container = kind
        segment.tag(tag)
        countPosition = segment.bytes.count
        segment.bytes.append(0)
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        if DictionaryKeys.isDictionary(type) {
            open(.map, tag: .map)
            return KeyedEncodingContainer(MapEncodingContainer(encoder: self))
        }
        open(.keyed, tag: .keyed)
        return KeyedEncodingContainer(KeyedRecordEncodingContainer(encoder: self))
    }

    func unkeyedContainer() -> UnkeyedEncodingContainer {
        open(.unkeyed, tag: .unkeyed)
        return UnkeyedRecordEncodingContainer(encoder: self)
    }

    func singleValueContainer() -> SingleValueEncodingContainer {
        container = .single
        return SingleValueRecordEncodingContainer(encoder: self)
    }

    /// Encodes a child value in place (it is finished before this returns).
    func encodeChild<T: Encodable>(_ value: T, key: CodingKey) throws {
        try context.encode(value, into: segment, parent: self, key: key)
    }

    /// An encoder for a child filled in later, in its own segment.
    func detachedChild(key: CodingKey) -> ValueEncoder {
        let child = ValueEncoder(context: context, segment: Segment(capacity: 32), parent: self, key: key)
        splices.append((segment.bytes.count, child))
        return child
    }

    /// Completes this value: detached children spliced in (last first, so earlier
    /// positions stay valid), then the element count written.
    func finish() {
        for (position, child) in splices.reversed() {
            child.finish()
            segment.bytes.insert(contentsOf: child.segment.bytes, at: position)
        }
        splices.removeAll()
        switch container {
        case .keyed, .unkeyed, .map:
            if count < 0x80 {
                segment.bytes[countPosition] = UInt8(count)
            } else {
                let width = Segment(capacity: 10)
                width.varint(UInt64(count))
                segment.bytes.replaceSubrange(countPosition ... countPosition, with: width.bytes)
            }
        case .none:
            // A value that encoded nothing is an empty struct.
            segment.tag(.keyed)
            segment.bytes.append(0)
        case .single:
            break
        }
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
    var codingPath: [CodingKey] { encoder.codingPath }

    @inline(__always) private func field(_ key: CodingKey) -> Segment {
        encoder.count += 1
        encoder.segment.varint(UInt64(encoder.context.fieldID(key)))
        return encoder.segment
    }

    mutating func encodeNil(forKey key: Key) throws { field(key).tag(.null) }
    mutating func encode(_ value: Bool, forKey key: Key) throws { field(key).bool(value) }
    mutating func encode(_ value: String, forKey key: Key) throws { field(key).text(value) }
    mutating func encode(_ value: Double, forKey key: Key) throws { field(key).double(value) }
    mutating func encode(_ value: Float, forKey key: Key) throws { field(key).float(value) }
    mutating func encode(_ value: Int, forKey key: Key) throws { field(key).int(Int64(value)) }
    mutating func encode(_ value: Int8, forKey key: Key) throws { field(key).int(Int64(value)) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { field(key).int(Int64(value)) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { field(key).int(Int64(value)) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { field(key).int(value) }
    mutating func encode(_ value: UInt, forKey key: Key) throws { field(key).uint(UInt64(value)) }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { field(key).uint(UInt64(value)) }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { field(key).uint(UInt64(value)) }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { field(key).uint(UInt64(value)) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { field(key).uint(value) }

    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        _ = field(key)
        try encoder.encodeChild(value, key: key)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
        _ = field(key)
        return encoder.detachedChild(key: key).container(keyedBy: keyType)
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> UnkeyedEncodingContainer {
        _ = field(key)
        return encoder.detachedChild(key: key).unkeyedContainer()
    }

    mutating func superEncoder() -> Encoder {
        _ = field(SuperKey())
        return encoder.detachedChild(key: SuperKey())
    }

    mutating func superEncoder(forKey key: Key) -> Encoder {
        _ = field(key)
        return encoder.detachedChild(key: key)
    }
}

struct MapEncodingContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let encoder: ValueEncoder
    var codingPath: [CodingKey] { encoder.codingPath }

    @inline(__always) private func entry(_ key: CodingKey) {
        encoder.count += 1
        encoder.segment.string(key.stringValue)
    }

    mutating func encodeNil(forKey key: Key) throws {
        entry(key)
        encoder.segment.tag(.null)
    }

    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        entry(key)
        try encoder.encodeChild(value, key: key)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
        entry(key)
        return encoder.detachedChild(key: key).container(keyedBy: keyType)
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> UnkeyedEncodingContainer {
        entry(key)
        return encoder.detachedChild(key: key).unkeyedContainer()
    }

    mutating func superEncoder() -> Encoder {
        entry(SuperKey())
        return encoder.detachedChild(key: SuperKey())
    }

    mutating func superEncoder(forKey key: Key) -> Encoder {
        entry(key)
        return encoder.detachedChild(key: key)
    }
}

struct UnkeyedRecordEncodingContainer: UnkeyedEncodingContainer {
    let encoder: ValueEncoder
    var codingPath: [CodingKey] { encoder.codingPath }
    var count: Int { encoder.count }

    @inline(__always) private func element() -> Segment {
        encoder.count += 1
        return encoder.segment
    }

    mutating func encodeNil() throws { element().tag(.null) }
    mutating func encode(_ value: Bool) throws { element().bool(value) }
    mutating func encode(_ value: String) throws { element().text(value) }
    mutating func encode(_ value: Double) throws { element().double(value) }
    mutating func encode(_ value: Float) throws { element().float(value) }
    mutating func encode(_ value: Int) throws { element().int(Int64(value)) }
    mutating func encode(_ value: Int8) throws { element().int(Int64(value)) }
    mutating func encode(_ value: Int16) throws { element().int(Int64(value)) }
    mutating func encode(_ value: Int32) throws { element().int(Int64(value)) }
    mutating func encode(_ value: Int64) throws { element().int(value) }
    mutating func encode(_ value: UInt) throws { element().uint(UInt64(value)) }
    mutating func encode(_ value: UInt8) throws { element().uint(UInt64(value)) }
    mutating func encode(_ value: UInt16) throws { element().uint(UInt64(value)) }
    mutating func encode(_ value: UInt32) throws { element().uint(UInt64(value)) }
    mutating func encode(_ value: UInt64) throws { element().uint(value) }

    mutating func encode<T: Encodable>(_ value: T) throws {
        let key = IndexKey(encoder.count)
        _ = element()
        try encoder.encodeChild(value, key: key)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        let key = IndexKey(encoder.count)
        _ = element()
        return encoder.detachedChild(key: key).container(keyedBy: keyType)
    }

    mutating func nestedUnkeyedContainer() -> UnkeyedEncodingContainer {
        let key = IndexKey(encoder.count)
        _ = element()
        return encoder.detachedChild(key: key).unkeyedContainer()
    }

    mutating func superEncoder() -> Encoder {
        let key = IndexKey(encoder.count)
        _ = element()
        return encoder.detachedChild(key: key)
    }
}

struct SingleValueRecordEncodingContainer: SingleValueEncodingContainer {
    let encoder: ValueEncoder
    var codingPath: [CodingKey] { encoder.codingPath }
    private var segment: Segment { encoder.segment }

    mutating func encodeNil() throws { segment.tag(.null) }
    mutating func encode(_ value: Bool) throws { segment.bool(value) }
    mutating func encode(_ value: String) throws { segment.text(value) }
    mutating func encode(_ value: Double) throws { segment.double(value) }
    mutating func encode(_ value: Float) throws { segment.float(value) }
    mutating func encode(_ value: Int) throws { segment.int(Int64(value)) }
    mutating func encode(_ value: Int8) throws { segment.int(Int64(value)) }
    mutating func encode(_ value: Int16) throws { segment.int(Int64(value)) }
    mutating func encode(_ value: Int32) throws { segment.int(Int64(value)) }
    mutating func encode(_ value: Int64) throws { segment.int(value) }
    mutating func encode(_ value: UInt) throws { segment.uint(UInt64(value)) }
    mutating func encode(_ value: UInt8) throws { segment.uint(UInt64(value)) }
    mutating func encode(_ value: UInt16) throws { segment.uint(UInt64(value)) }
    mutating func encode(_ value: UInt32) throws { segment.uint(UInt64(value)) }
    mutating func encode(_ value: UInt64) throws { segment.uint(value) }

    mutating func encode<T: Encodable>(_ value: T) throws {
        try encoder.context.encode(value, into: segment, parent: encoder.parent, key: encoder.key)
    }
}
