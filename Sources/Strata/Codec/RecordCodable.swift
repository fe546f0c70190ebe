import Foundation

/// A model that writes and reads its own record, field by field, instead of going through
/// `Codable`'s containers: the fast path for hot models (W1's `User` encodes about 3× and
/// decodes about 5× faster this way — see Benchmarks/README.md). Optional: a model without
/// it is encoded by its `Codable` conformance, and both store the same fields and values, so
/// a type can adopt or drop it at any time with no effect on what readers see.
///
/// Write each field once, under the name `Codable` uses (the property name, unless the type
/// declares other `CodingKeys`); `RecordCodableConformance.check` in tests compares what
/// the two paths store. The order is yours: readers find fields by name. Reading them in the
/// order they were written is fastest (each is found where the last ended), and writing
/// number-like fields first, as `@StoredModel` does, lets a scan's byte check reach them
/// without stepping over text.
///
/// ```swift
/// extension User: RecordCodable {
///     func encode(to record: inout RecordWriter) throws {
///         try record.encode(id, forKey: "id")
///         try record.encode(name, forKey: "name")
///         try record.encodeIfPresent(nickname, forKey: "nickname")
///     }
///     init(from record: inout RecordReader) throws {
///         id = try record.decode(Int64.self, forKey: "id")
///         name = try record.decode(String.self, forKey: "name")
///         nickname = try record.decodeIfPresent(String.self, forKey: "nickname")
///     }
/// }
/// ```
///
/// Reading follows the same schema-evolution rules as `Codable` decoding: a field the record
/// lacks reads as its zero value (or nil with `decodeIfPresent`), fields the record has but
/// the model does not ask for are ignored, and a stored type that does not fit is
/// `RecordError.typeMismatch` naming the field.
public protocol RecordCodable: Codable {
    /// Writes the model's fields, in declaration order, under their `Codable` names.
    /// - Parameter record: The writer of the record being built.
    /// - Throws: What a field's encoding throws (`RecordError.unencodable`).
    func encode(to record: inout RecordWriter) throws
    /// Reads the model's fields by name.
    /// - Parameter record: The reader of the stored record.
    /// - Throws: `RecordError.typeMismatch` or `.missingField` naming the field; `.corruptRecord`.
    init(from record: inout RecordReader) throws
}

/// Writes one struct record's fields (see `RecordCodable`).
public struct RecordWriter {
    /// The caller's table, borrowed for the duration of one `RecordEncoder.encode` call.
    private let fields: UnsafeMutablePointer<FieldTable>
    let collection: String
    private var bytes: [UInt8] = []
    private var count = 0
    /// How many field names this record has interned (the table's order hint).
    private var fieldPosition = 0

    init(fields: UnsafeMutablePointer<FieldTable>, collection: String) {
        (self.fields, self.collection) = (fields, collection)
        bytes.reserveCapacity(128)
        bytes.appendTag(.keyed)
        bytes.append(0)  // the field count, patched by finish()
    }

    @inline(__always) private mutating func field(_ key: String) {
        count += 1
        bytes.appendVarint(UInt64(fields.pointee.intern(key, at: fieldPosition)))
        fieldPosition += 1
    }

    /// Writes a String field.
    ///
    /// - Parameters:
    ///   - value: The field's value.
    ///   - key: The field's name, as `Codable` names it.
    /// - Throws: Nothing for this type; declared for the generic overload's sake.
    public mutating func encode(_ value: String, forKey key: String) throws { field(key); bytes.appendText(value) }
    /// Writes an Int field.
    ///
    /// - Parameters:
    ///   - value: The field's value.
    ///   - key: The field's name, as `Codable` names it.
    /// - Throws: Nothing for this type; declared for the generic overload's sake.
    public mutating func encode(_ value: Int, forKey key: String) throws { field(key); bytes.appendInt(Int64(value)) }
    /// Writes an Int64 field.
    ///
    /// - Parameters:
    ///   - value: The field's value.
    ///   - key: The field's name, as `Codable` names it.
    /// - Throws: Nothing for this type; declared for the generic overload's sake.
    public mutating func encode(_ value: Int64, forKey key: String) throws { field(key); bytes.appendInt(value) }
    /// Writes a UInt64 field.
    ///
    /// - Parameters:
    ///   - value: The field's value.
    ///   - key: The field's name, as `Codable` names it.
    /// - Throws: Nothing for this type; declared for the generic overload's sake.
    public mutating func encode(_ value: UInt64, forKey key: String) throws { field(key); bytes.appendUInt(value) }
    /// Writes a Double field.
    ///
    /// - Parameters:
    ///   - value: The field's value.
    ///   - key: The field's name, as `Codable` names it.
    /// - Throws: Nothing for this type; declared for the generic overload's sake.
    public mutating func encode(_ value: Double, forKey key: String) throws { field(key); bytes.appendDouble(value) }
    /// Writes a Bool field.
    ///
    /// - Parameters:
    ///   - value: The field's value.
    ///   - key: The field's name, as `Codable` names it.
    /// - Throws: Nothing for this type; declared for the generic overload's sake.
    public mutating func encode(_ value: Bool, forKey key: String) throws { field(key); bytes.appendBool(value) }

    /// Writes a `[String]` field: the bytes the `Codable` path writes, without a container
    /// or a call per element.
    ///
    /// - Parameters:
    ///   - value: The field's value.
    ///   - key: The field's name, as `Codable` names it.
    /// - Throws: Nothing for this type; declared for the generic overload's sake.
    public mutating func encode(_ value: [String], forKey key: String) throws {
        field(key)
        bytes.appendTag(.unkeyed)
        bytes.appendVarint(UInt64(value.count))
        for element in value { bytes.appendText(element) }
    }

    /// Writes an `[Int]` field, as the `Codable` path does.
    ///
    /// - Parameters:
    ///   - value: The field's value.
    ///   - key: The field's name, as `Codable` names it.
    /// - Throws: Nothing for this type; declared for the generic overload's sake.
    public mutating func encode(_ value: [Int], forKey key: String) throws {
        field(key)
        bytes.appendTag(.unkeyed)
        bytes.appendVarint(UInt64(value.count))
        for element in value { bytes.appendInt(Int64(element)) }
    }

    /// Any other `Encodable` value (dates, UUIDs, arrays, nested structs, …), through the
    /// Codable path.
    ///
    /// - Parameters:
    ///   - value: The field's value.
    ///   - key: The field's name, as `Codable` names it.
    /// - Throws: `RecordError.unencodable` for a value the format cannot hold (nesting deeper
    ///   than `RecordLimits.maxNestingDepth`); what `value`'s `encode(to:)` throws.
    public mutating func encode<T: Encodable>(_ value: T, forKey key: String) throws {
        field(key)
        let context = EncodingContext(fields: fields.pointee, collection: collection)
        context.fieldPosition = fieldPosition
        let segment = Segment(capacity: 0)
        swap(&bytes, &segment.bytes)
        defer {
            swap(&bytes, &segment.bytes)
            fields.pointee = context.fields
            fieldPosition = context.fieldPosition
        }
        try context.encode(value, into: segment, parent: nil, key: StoredFieldKey(key))
    }

    /// Writes nothing for nil, as synthesized `Codable` does.
    ///
    /// - Parameters:
    ///   - value: The field's value, or nil to leave the field out.
    ///   - key: The field's name, as `Codable` names it.
    /// - Throws: As `encode(_:forKey:)`.
    public mutating func encodeIfPresent<T: Encodable>(_ value: T?, forKey key: String) throws {
        if let value { try encode(value, forKey: key) }
    }

    /// The record, with its field count in place.
    mutating func finish() -> [UInt8] {
        if count < 0x80 {
            bytes[1] = UInt8(count)
        } else {
            var width: [UInt8] = []
            width.appendVarint(UInt64(count))
            bytes.replaceSubrange(1 ... 1, with: width)
        }
        return bytes
    }
}

/// Reads one struct record's fields by name (see `RecordCodable`). Fields are usually asked
/// for in the order they were written, so each is found where the last one ended.
///
/// A reader is lent to `init(from:)` for the one record being decoded and reads that
/// record's bytes where they lie: use it only inside that call, never keep a copy.
public struct RecordReader {
    let context: DecodingContext
    /// The record's address and size (the context's buffer), kept in the reader: a field's
    /// read reaches them with no load through the context and no check of the address for
    /// nil at every byte (measured: those were a third of an integer field's read).
    private let bytes: UnsafeRawPointer
    private let size: Int
    private let count: Int
    private let firstField: Int
    /// Where the next field (in stored order) starts, and its index.
    private var cursor: Int
    private var cursorIndex = 0

    /// In line where a record is decoded (measured: the call was ~90 instructions of each
    /// W1 user a typed scan decodes); a record that is not a struct with a one-byte field
    /// count is read, or reported, by `reading(_:)`.
    @inline(__always)
    init(context: DecodingContext) throws {
        let buffer = context.buffer
        if buffer.count >= 2, let base = buffer.baseAddress, base.load(as: UInt8.self) == RecordTag.keyed.rawValue,
           case let fieldCount = base.load(fromByteOffset: 1, as: UInt8.self), fieldCount < 0x80 {
            self.init(context: context, bytes: base, size: buffer.count, count: Int(fieldCount), firstField: 2)
        } else {
            self = try Self.reading(context)
        }
    }

    private init(context: DecodingContext, bytes: UnsafeRawPointer, size: Int, count: Int, firstField: Int) {
        (self.context, self.bytes, self.size, self.count, self.firstField, cursor) = (context, bytes, size, count, firstField, firstField)
    }

    /// The reader of a record with a longer field count, or the error a record that is not a
    /// struct is.
    @inline(never)
    private static func reading(_ context: DecodingContext) throws -> RecordReader {
        guard try context.tag(at: 0) == .keyed else {
            throw RecordError.typeMismatch(collection: context.collection, field: "(record)", stored: try context.tag(at: 0).description, expected: "struct")
        }
        var p = 1
        let count = Int(try context.varint(at: &p))
        // The tag was read: the buffer has an address.
        return RecordReader(context: context, bytes: context.buffer.baseAddress!, size: context.buffer.count, count: count, firstField: p)
    }

    /// The position of `key`'s value, or nil when the record lacks it.
    ///
    /// A codec asks for fields in the order it wrote them, so the field at the cursor is
    /// usually the one: it is checked in line, with no call unless its value is one that
    /// `RecordBytes.endOfScalar` leaves to `skip` (measured: the call and its frame were
    /// half of each field's lookup). Anything else goes round the record in `search`.
    @inline(__always)
    private mutating func find(_ key: String) throws -> Int? {
        if let value = valueAtCursor(key), let end = RecordBytes.endOfScalar(context.buffer, at: value) {
            advance(to: end)
            return value
        }
        return try search(key)
    }

    /// `find` for a field anywhere in the record, starting at the cursor and wrapping round.
    @inline(never)
    private mutating func search(_ key: String) throws -> Int? {
        var p = cursor, index = cursorIndex
        for _ in 0 ..< count {
            if index == count { (p, index) = (firstField, 0) }
            let id = try context.varint(at: &p)
            let value = p
            p = try context.skip(at: value)
            index += 1
            if let name = context.fields.name(of: UInt32(truncatingIfNeeded: id)), name == key {
                (cursor, cursorIndex) = (p, index)
                return value
            }
        }
        return nil
    }

    /// Where the value of the field at the cursor starts, when that field is `key`: a codec
    /// reads fields in the order it wrote them, so this is the usual case. The cursor does
    /// not move (`advance(to:)` moves it once the value is read). A field id of two or more
    /// bytes (a collection of over 127 fields) is left to `search`.
    @inline(__always)
    private func valueAtCursor(_ key: String) -> Int? {
        guard cursorIndex < count, cursor >= 0, cursor < size else { return nil }
        let id = bytes.load(fromByteOffset: cursor, as: UInt8.self)
        guard id < 0x80, let name = context.fields.name(of: UInt32(id)), name == key else { return nil }
        return cursor + 1
    }

    /// The tag byte at `position`, when there is one.
    @inline(__always)
    private func tag(at position: Int) -> UInt8? {
        position < size ? bytes.load(fromByteOffset: position, as: UInt8.self) : nil
    }

    /// Moves the cursor past the field at it, whose value ends at `end`.
    @inline(__always)
    private mutating func advance(to end: Int) {
        (cursor, cursorIndex) = (end, cursorIndex + 1)
    }

    /// The signed integer at `position` and where it ends, when it is stored as one; nil
    /// otherwise (the general path then reads, converts or reports it).
    @inline(__always)
    private func storedInt(at position: Int) -> (Int64, end: Int)? {
        guard tag(at: position) == RecordTag.int.rawValue else { return nil }
        var end = position + 1
        return RecordBytes.varint(bytes, size: size, at: &end).map { (ZigZag.decode($0), end) }
    }

    // Concrete overloads for the common types: no generic dispatch, no dynamic casts. An
    // absent field reads as the type's zero value, as in `Codable` decoding. Each first
    // tries the field at the cursor stored as its own type, and reads it in place, its end
    // found by reading it (measured: finding the field, stepping over its value, then
    // reading it through a closure was ~200 instructions per integer field, a third of a
    // W1 record's decoding; callgrind). Anything else takes `field`, which finds, converts
    // and reports.
    /// Reads a String field ("" when absent).
    /// - Throws: `RecordError.typeMismatch` for another stored type.
    /// - Parameters:
    ///   - type: `String.self`.
    ///   - key: The field's name.
    /// - Returns: The stored text.
    public mutating func decode(_ type: String.Type, forKey key: String) throws -> String {
        if let value = valueAtCursor(key), tag(at: value) == RecordTag.string.rawValue {
            if let (string, end) = context.text(bytes, size: size, lengthAt: value + 1) {
                advance(to: end)
                return string
            }
            // Short text that is not ASCII is validated once, not checked for ASCII again;
            // malformed text is reported.
            let (string, end) = try context.validatedString(at: value + 1)
            advance(to: end)
            return string
        }
        return try field(key, absent: "") { try $0.stringValue(at: $1) }
    }

    /// Reads an Int field (0 when absent).
    /// - Throws: `RecordError.typeMismatch` for another stored type.
    /// - Parameters:
    ///   - type: `Int.self`.
    ///   - key: The field's name.
    /// - Returns: The stored integer, converted when it was stored with another width.
    public mutating func decode(_ type: Int.Type, forKey key: String) throws -> Int {
        if let value = valueAtCursor(key), let (stored, end) = storedInt(at: value), let int = Int(exactly: stored) {
            advance(to: end)
            return int
        }
        return try field(key, absent: 0) { try $0.integer(Int.self, at: $1) }
    }

    /// Reads an Int64 field (0 when absent).
    /// - Throws: `RecordError.typeMismatch` for another stored type.
    /// - Parameters:
    ///   - type: `Int64.self`.
    ///   - key: The field's name.
    /// - Returns: The stored integer, converted when it was stored with another width.
    public mutating func decode(_ type: Int64.Type, forKey key: String) throws -> Int64 {
        if let value = valueAtCursor(key), let (stored, end) = storedInt(at: value) {
            advance(to: end)
            return stored
        }
        return try field(key, absent: 0) { try $0.integer(Int64.self, at: $1) }
    }

    /// Reads a UInt64 field (0 when absent).
    /// - Throws: `RecordError.typeMismatch` for another stored type.
    /// - Parameters:
    ///   - type: `UInt64.self`.
    ///   - key: The field's name.
    /// - Returns: The stored integer, converted when it was stored signed and is not negative.
    public mutating func decode(_ type: UInt64.Type, forKey key: String) throws -> UInt64 {
        try field(key, absent: 0) { try $0.integer(UInt64.self, at: $1) }
    }

    /// Reads a Double field (0 when absent).
    /// - Throws: `RecordError.typeMismatch` for another stored type.
    /// - Parameters:
    ///   - type: `Double.self`.
    ///   - key: The field's name.
    /// - Returns: The stored number (a stored `Float` widened).
    public mutating func decode(_ type: Double.Type, forKey key: String) throws -> Double {
        if let value = valueAtCursor(key), value + 9 <= size, tag(at: value) == RecordTag.double.rawValue {
            advance(to: value + 9)
            return Double(bitPattern: UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: value + 1, as: UInt64.self)))
        }
        return try field(key, absent: 0) { try $0.double(at: $1) }
    }

    /// Reads a Bool field (false when absent).
    /// - Throws: `RecordError.typeMismatch` for another stored type.
    /// - Parameters:
    ///   - type: `Bool.self`.
    ///   - key: The field's name.
    /// - Returns: The stored Boolean.
    public mutating func decode(_ type: Bool.Type, forKey key: String) throws -> Bool {
        try field(key, absent: false) { try $0.bool(at: $1) }
    }

    /// Reads a `[String]` field ([] when absent) without a container or a call per element.
    ///
    /// - Parameters:
    ///   - type: `[String].self`.
    ///   - key: The field's name.
    /// - Returns: The stored strings.
    /// - Throws: `RecordError.typeMismatch` for another stored type (of the field or an
    ///   element); `.corruptRecord` for malformed bytes.
    public mutating func decode(_ type: [String].Type, forKey key: String) throws -> [String] {
        try field(key, absent: []) { context, position in
            try context.elements(at: position, as: [String].self) { try $0.stringValue(at: $1) }
        }
    }

    /// Reads an `[Int]` field ([] when absent), as `decode(_:forKey:)` for `[String]` does.
    ///
    /// - Parameters:
    ///   - type: `[Int].self`.
    ///   - key: The field's name.
    /// - Returns: The stored integers.
    /// - Throws: `RecordError.typeMismatch` for another stored type or an integer out of
    ///   range; `.corruptRecord` for malformed bytes.
    public mutating func decode(_ type: [Int].Type, forKey key: String) throws -> [Int] {
        try field(key, absent: []) { context, position in
            try context.elements(at: position, as: [Int].self) { try $0.integer(Int.self, at: $1) }
        }
    }

    /// Reads `key`'s value with `read`, or `absent` when the record lacks it. `read` reports
    /// errors at "(record)"; they are renamed to `key` here, so the key is only built when
    /// something fails.
    @inline(__always)
    private mutating func field<R>(_ key: String, absent: R, _ read: (DecodingContext, Int) throws -> R) throws -> R {
        guard let position = try find(key) else { return absent }
        do { return try read(context, position) } catch let error as RecordError {
            guard case .typeMismatch(let collection, _, let stored, let expected) = error else { throw error }
            throw RecordError.typeMismatch(collection: collection, field: key, stored: stored, expected: expected)
        }
    }

    /// `name`, or the first of `originalNames` the record holds when it lacks `name`: reads a
    /// renamed field from a record written before the rename (opening a collection for
    /// writing moves such values; a read-only open may still see them).
    ///
    /// - Parameters:
    ///   - name: The field's current name.
    ///   - originalNames: Names it had before, newest first.
    /// - Returns: The name to read the field under.
    /// - Throws: `RecordError.corruptRecord` when the record's bytes are malformed.
    public mutating func storedKey(_ name: String, originalNames: [String]) throws -> String {
        if try find(name) != nil { return name }
        for original in originalNames where try find(original) != nil { return original }
        return name
    }

    /// Any other `Decodable` value (dates, UUIDs, arrays, nested structs, …).
    ///
    /// - Parameters:
    ///   - type: The field's type.
    ///   - key: The field's name.
    /// - Returns: The decoded value, or the type's zero value when the record lacks the field.
    /// - Throws: `RecordError.missingField` for an absent field of a type with no zero value
    ///   (Date, UUID, URL, an enum); `.typeMismatch` naming the field; `.corruptRecord`.
    public mutating func decode<T: Decodable>(_ type: T.Type, forKey key: String) throws -> T {
        try context.decode(type, at: try find(key), parent: nil, key: StoredFieldKey(key))
    }

    /// Nil when the record lacks the field or stores nil.
    ///
    /// - Parameters:
    ///   - type: The field's type.
    ///   - key: The field's name.
    /// - Returns: The decoded value, or nil when the record lacks the field or stores nil.
    /// - Throws: `RecordError.typeMismatch` naming the field; `.corruptRecord`.
    public mutating func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: String) throws -> T? {
        guard let position = try find(key), try context.tag(at: position) != .null else { return nil }
        return try context.decode(type, at: position, parent: nil, key: StoredFieldKey(key))
    }
}

/// A stored field's name as a coding key: what `@StoredModel`'s `Codable` conformance and
/// the record coders' error paths use.
public struct StoredFieldKey: CodingKey, ExpressibleByStringLiteral, Sendable {
    /// The field's name.
    public let stringValue: String
    /// Fields are named, never numbered.
    public var intValue: Int? { nil }
    /// The key for the field `name`.
    ///
    /// - Parameter name: The field's name.
    public init(_ name: String) { stringValue = name }
    /// The key for a field named by a literal.
    public init(stringLiteral name: String) { stringValue = name }
    /// The key for the field `stringValue`.
    public init?(stringValue: String) { self.stringValue = stringValue }
    /// Nil: fields are named.
    public init?(intValue: Int) { nil }
}

extension KeyedDecodingContainer where K == StoredFieldKey {
    /// `name`, or the first of `originalNames` the container holds when it lacks `name`:
    /// reads a renamed field from data written before the rename.
    ///
    /// - Parameters:
    ///   - name: The field's current name.
    ///   - originalNames: Names it had before, newest first.
    /// - Returns: The key to decode the field under.
    public func storedKey(_ name: String, originalNames: [String]) -> StoredFieldKey {
        let current = StoredFieldKey(name)
        guard !contains(current) else { return current }
        return originalNames.map { StoredFieldKey($0) }.first { contains($0) } ?? current
    }
}

/// Checks a `RecordCodable` conformance against the type's `Codable` one.
public enum RecordCodableConformance {
    /// Whether `value` stores the same fields with the same values through both paths (in
    /// any order: readers find fields by name), and decodes back through the fast path to a
    /// value that encodes the same again.
    ///
    /// - Parameter value: A sample value; use several, with optionals both set and nil.
    /// - Returns: True when both paths agree.
    /// - Throws: What either path's encoding or decoding throws.
    public static func check<T: RecordCodable>(_ value: T) throws -> Bool {
        var fastFields = FieldTable()
        let fast = try RecordEncoder.encode(value as T, fields: &fastFields, collection: "check")
        let context = EncodingContext(fields: FieldTable(), collection: "check")
        let root = Segment()
        try context.encode(value, into: root, parent: nil, key: nil)
        var names = FieldTable()
        guard try fieldsByName(fast, fastFields, names: &names) == fieldsByName(root.bytes, context.fields, names: &names) else { return false }
        let back = try RecordDecoder.decode(T.self, from: fast, fields: fastFields, collection: "check")
        var again = FieldTable()
        return try RecordEncoder.encode(back, fields: &again, collection: "check") == fast
    }

    /// The record's bytes with its top-level fields sorted by name and every field name
    /// interned in `names`, one table for both records compared: equal for records that
    /// hold the same names and values in any order, whatever ids their own tables gave the
    /// names (values compare by their stored bits, so a NaN equals itself).
    private static func fieldsByName(_ bytes: [UInt8], _ fields: FieldTable, names: inout FieldTable) throws -> [UInt8] {
        var value = try RecordValue.decode(bytes, fields: fields, collection: "check")
        if case .object(let entries) = value { value = .object(entries.sorted { $0.name < $1.name }) }
        return value.encoded(fields: &names)
    }
}
