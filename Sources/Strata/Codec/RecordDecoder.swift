import Foundation

/// Decodes Strata's binary records into `Decodable` values, reading in place.
///
/// Schema evolution: a field the record lacks decodes as nil when optional, and as its
/// type's zero value (0, "", false, empty collection, a struct of zero values) otherwise;
/// fields the model no longer has are ignored; a field stored with a different type fails
/// with `RecordError.typeMismatch` naming the collection, field and both types.
public enum RecordDecoder {
    /// Decodes a record.
    /// - Throws: `RecordError.typeMismatch` naming the field; `.corruptRecord` for malformed bytes.
    /// - Parameters:
    ///   - type: The type to decode.
    ///   - bytes: The stored record.
    ///   - fields: The collection's field table.
    ///   - collection: The collection's name, for errors.
    /// - Returns: The decoded value.
    public static func decode<T: Decodable>(_ type: T.Type, from bytes: [UInt8], fields: FieldTable, collection: String) throws -> T {
        try bytes.withUnsafeBytes { try decode(type, from: $0, fields: fields, collection: collection) }
    }

    /// `decode` for a type known to be `RecordCodable`: no runtime conformance check.
    ///
    /// - Parameters:
    ///   - type: The type to decode.
    ///   - bytes: The stored record.
    ///   - fields: The collection's field table.
    ///   - collection: The collection's name, for errors.
    /// - Returns: The decoded value.
    /// - Throws: As the `Decodable` form.
    public static func decode<T: RecordCodable>(_ type: T.Type, from bytes: [UInt8], fields: FieldTable, collection: String) throws -> T {
        try bytes.withUnsafeBytes { buffer in
            let context = DecodingContext(buffer: buffer, fields: fields, collection: collection)
            var reader = try RecordReader(context: context)
            return try T(from: &reader)
        }
    }

    /// Decodes a record in place, without copying its bytes.
    /// - Throws: as the `[UInt8]` form.
    /// - Parameters:
    ///   - type: The type to decode.
    ///   - buffer: The stored record, valid during the call.
    ///   - fields: The collection's field table.
    ///   - collection: The collection's name, for errors.
    /// - Returns: The decoded value.
    public static func decode<T: Decodable>(_ type: T.Type, from buffer: UnsafeRawBufferPointer, fields: FieldTable, collection: String) throws -> T {
        try decode(type, from: buffer, fields: fields, collection: collection, codec: codec(of: type))
    }

    /// `T`'s `RecordCodable` initializer, reached through a function that returns `T`.
    typealias Codec<T> = (inout RecordReader) throws -> T

    /// `T`'s own codec when it is `RecordCodable`, else nil (it decodes through `Codable`).
    /// One dynamic cast: callers that decode many records of one type keep the result.
    static func codec<T: Decodable>(of type: T.Type) -> Codec<T>? {
        guard let fast = type as? any RecordCodable.Type else { return nil }
        func codec<R: RecordCodable>(_: R.Type) -> Codec<T> {
            // R is T (the cast above found it), so a function returning an R is a function
            // returning a T: the same type, and both generic results are returned the same
            // way (indirectly). Reinterpreting the function, not each value, lets the model's
            // initializer build the value where the caller wants it; `unsafeBitCast` of the
            // value copied it (its Strings retained) and destroyed the original (released
            // again), ~190 instructions of each W1 user decoded (callgrind).
            let initializer: (inout RecordReader) throws -> R = { try R(from: &$0) }
            return unsafeBitCast(initializer, to: Codec<T>.self)
        }
        return codec(fast)
    }

    static func decode<T: Decodable>(_ type: T.Type, from buffer: UnsafeRawBufferPointer, fields: FieldTable, collection: String,
                                     codec: Codec<T>?) throws -> T {
        try decode(type, from: buffer, in: DecodingContext(buffer: buffer, fields: fields, collection: collection), codec: codec)
    }

    /// Decodes `buffer` through `context`, pointed at it: a caller decoding many records
    /// one after another on one thread reuses one context (a context per record was an
    /// allocation and its release, about a sixth of decoding a W1 user).
    @inline(__always)
    static func decode<T: Decodable>(_ type: T.Type, from buffer: UnsafeRawBufferPointer, in context: DecodingContext,
                                     codec: Codec<T>?) throws -> T {
        if let codec { return try decode(from: buffer, in: context, codec: codec) }
        context.buffer = buffer
        guard !buffer.isEmpty else { throw context.corrupt("empty record") }
        return try context.decode(type, at: 0, parent: nil, key: nil)
    }

    /// `decode` through a `RecordCodable` type's own codec.
    @inline(__always)
    static func decode<T: Decodable>(from buffer: UnsafeRawBufferPointer, in context: DecodingContext, codec: Codec<T>) throws -> T {
        context.buffer = buffer
        guard !buffer.isEmpty else { throw context.corrupt("empty record") }
        var reader = try RecordReader(context: context)
        return try codec(&reader)
    }
}

final class DecodingContext {
    /// The record being read. A scan that only inspects records (`RecordPrefilter`) points
    /// one context at each record in turn instead of allocating a context per record.
    @exclusivity(unchecked) var buffer: UnsafeRawBufferPointer
    let fields: FieldTable
    let collection: String
    /// The short strings this context decoded lately; nil for a context that decodes one
    /// record (only a context reused record after record keeps them).
    @exclusivity(unchecked) private var recentText: RecentText?

    init(buffer: UnsafeRawBufferPointer, fields: FieldTable, collection: String, keepsRecentText: Bool = false) {
        self.buffer = buffer
        self.fields = fields
        self.collection = collection
        recentText = keepsRecentText ? RecentText.allocate() : nil
    }

    deinit { recentText?.deallocate() }

    func corrupt(_ reason: String) -> RecordError { .corruptRecord(collection: collection, reason: reason) }

    // MARK: Reading primitives

    @inline(__always)
    func tag(at position: Int) throws -> RecordTag {
        guard position < buffer.count else { throw corrupt("value runs past the end") }
        let byte = buffer[position]
        guard byte <= RecordTag.referenceDate.rawValue else { throw corrupt("unknown type tag \(byte) at byte \(position)") }
        // The cases are declared in raw-value order 0...15, so a case's in-memory value is
        // its raw value: no switch per value read (every field of every scanned record).
        return unsafeBitCast(byte, to: RecordTag.self)
    }

    @inline(__always)
    func varint(at position: inout Int) throws -> UInt64 {
        guard let value = RecordBytes.varint(buffer, at: &position) else { throw malformedVarint(at: position) }
        return value
    }

    /// Why the varint at `position` could not be read.
    @inline(never)
    private func malformedVarint(at position: Int) -> RecordError {
        let continued = buffer[position...].prefix { $0 >= 0x80 }.count
        return corrupt(position + continued >= buffer.count ? "varint runs past the end" : "varint longer than 10 bytes")
    }

    func fixed<T: FixedWidthInteger>(_ type: T.Type, at position: Int) throws -> T {
        guard position + MemoryLayout<T>.size <= buffer.count else { throw corrupt("value runs past the end") }
        return T(littleEndian: buffer.loadUnaligned(fromByteOffset: position, as: T.self))
    }

    /// The bytes of a length-prefixed payload starting at `position`.
    func lengthPrefixed(at position: Int) throws -> (UnsafeRawBufferPointer, end: Int) {
        var p = position
        let length = try varint(at: &p)
        guard length <= UInt64(buffer.count - p) else { throw corrupt("length \(length) runs past the end") }
        let end = p + Int(length)
        return (UnsafeRawBufferPointer(rebasing: buffer[p ..< end]), end)
    }

    /// The text whose length prefix starts at `position`, and where it ends.
    ///
    /// ASCII is valid UTF-8 and most stored text is ASCII: checking for it is a fraction of
    /// the cost of full validation. That common case is read in line, with no call (a call
    /// for the length, then the check, were ~130 instructions of each string a W2 document
    /// decodes, 21 per document; callgrind); other text, and malformed lengths, out of line.
    @inline(__always)
    func string(at position: Int) throws -> (String, end: Int) {
        if let base = buffer.baseAddress, let read = text(base, size: buffer.count, lengthAt: position) { return read }
        return try validatedString(at: position)
    }

    /// The text whose length prefix starts at `position` in `base` (this context's record,
    /// or a reader's view of it), and where it ends: short ASCII text, and longer text that
    /// is valid UTF-8. Nil for malformed lengths and short text that is not ASCII (`string`
    /// validates or reports those).
    ///
    /// Text of at most 15 bytes is looked up among the strings decoded lately
    /// (`RecentText`), when this context keeps them. Other short text is checked for ASCII
    /// here and made a `String` without a second validation (`asciiString`). Longer text is
    /// left to the standard library's validation alone, which checks for ASCII in its own
    /// first pass: checking here as well read a 4 KiB text twice (W2 typed scan.filter:
    /// ~2,400 instructions per document decoded; callgrind).
    @inline(__always)
    func text(_ base: UnsafeRawPointer, size: Int, lengthAt position: Int) -> (String, end: Int)? {
        guard let payload = RecordBytes.payload(base, size: size, lengthAt: position) else { return nil }
        let bytes = UnsafeRawBufferPointer(start: base + payload.lowerBound, count: payload.count)
        let end = payload.upperBound
        guard bytes.count <= 64 else { return Self.longText(bytes).map { ($0, end) } }
        if bytes.count <= RecentText.maxLength, recentText != nil, recentText!.isLooking() {
            return recentText!.string(bytes, making: Self.shortText).map { ($0, end) }
        }
        return Self.shortText(bytes).map { ($0, end) }
    }

    /// Short `bytes` as a `String` when they are ASCII; nil otherwise (`string` validates
    /// them then).
    @inline(__always)
    private static func shortText(_ bytes: UnsafeRawBufferPointer) -> String? {
        isASCII(bytes) ? asciiString(bytes) : nil
    }

    /// `bytes`, known to be ASCII, as a `String`, not validated again. (`String(decoding:)`
    /// validated them: ~80 instructions of each short string decoded.)
    @inline(__always)
    static func asciiString(_ bytes: UnsafeRawBufferPointer) -> String {
        if #available(macOS 26, iOS 26, tvOS 26, watchOS 26, visionOS 26, *) {
            return String(copying: unsafe UTF8Span(unchecked: Span(_unsafeBytes: bytes), isKnownASCII: true))
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// `bytes` as a `String` when they are UTF-8.
    @inline(never)
    private static func longText(_ bytes: UnsafeRawBufferPointer) -> String? {
        String(validating: bytes, as: UTF8.self)
    }

    /// `string` for text that is not ASCII (validated as UTF-8), and for malformed lengths.
    @inline(never)
    func validatedString(at position: Int) throws -> (String, end: Int) {
        let (bytes, end) = try lengthPrefixed(at: position)
        guard let s = String(validating: bytes, as: UTF8.self) else { throw corrupt("string is not UTF-8") }
        return (s, end)
    }

    /// Whether every byte is below 0x80: the bytes OR-ed together a word at a time, four
    /// words per step where there are more than 32 bytes (one word per step was ~8
    /// instructions for each 8 bytes of a W2 document's tags, checked on every document a
    /// typed scan rejects).
    @inline(__always)
    static func isASCII(_ bytes: UnsafeRawBufferPointer) -> Bool {
        let n = bytes.count
        var high: UInt64 = 0
        guard n >= 8 else {
            for byte in bytes { high |= UInt64(byte) }
            return high & 0x80 == 0
        }
        // `i` stays below `n`, so the sums cannot overflow.
        var i = 0
        while n &- i > 32 {
            high |= bytes.loadUnaligned(fromByteOffset: i, as: UInt64.self) | bytes.loadUnaligned(fromByteOffset: i &+ 8, as: UInt64.self)
                | bytes.loadUnaligned(fromByteOffset: i &+ 16, as: UInt64.self) | bytes.loadUnaligned(fromByteOffset: i &+ 24, as: UInt64.self)
            i &+= 32
        }
        while n &- i > 8 {
            high |= bytes.loadUnaligned(fromByteOffset: i, as: UInt64.self)
            i &+= 8
        }
        // The last 8 bytes, overlapping some already read, instead of a byte at a time.
        high |= bytes.loadUnaligned(fromByteOffset: n - 8, as: UInt64.self)
        return high & 0x8080_8080_8080_8080 == 0
    }

    /// The position just past the value starting at `position`; every returned position
    /// lies within the buffer, so callers may read the skipped bytes.
    ///
    /// Strings and integers — most of what a scan steps over — are stepped over inline;
    /// every other value, and malformed bytes, go to `skipOther`.
    @inline(__always)
    func skip(at position: Int, depth: Int = 0) throws -> Int {
        if let end = RecordBytes.endOfScalar(buffer, at: position) { return end }
        return try skipOther(at: position, depth: depth)
    }

    /// `skip` for every other value.
    @inline(never)
    private func skipOther(at position: Int, depth: Int) throws -> Int {
        var p = position + 1
        func fixedEnd(_ size: Int) throws -> Int {
            guard p + size <= buffer.count else { throw corrupt("value runs past the end") }
            return p + size
        }
        switch try tag(at: position) {
        case .null: return p
        case .bool: return try fixedEnd(1)
        case .int, .uint: _ = try varint(at: &p); return p
        case .double, .date, .referenceDate: return try fixedEnd(8)
        case .float: return try fixedEnd(4)
        case .uuid: return try fixedEnd(16)
        case .string, .bytes, .url, .decimal:
            let length = try varint(at: &p)
            guard length <= UInt64(buffer.count - p) else { throw corrupt("length \(length) runs past the end") }
            return p + Int(length)
        case .keyed, .unkeyed, .map: return try skipContainer(at: position, depth: depth)
        }
    }

    /// `skip` for a struct, array or map: its elements, recursively.
    @inline(never)
    private func skipContainer(at position: Int, depth: Int) throws -> Int {
        var p = position + 1
        switch try tag(at: position) {
        case .keyed, .unkeyed, .map:
            try checkDepth(depth + 1)
            let tag = try tag(at: position)
            let count = try varint(at: &p)
            for _ in 0 ..< count {
                if tag == .keyed { _ = try varint(at: &p) }
                if tag == .map { p = try lengthPrefixed(at: p).end }
                p = try skip(at: p, depth: depth + 1)
            }
            return p
        default: return try skip(at: position, depth: depth)
        }
    }

    /// Throws when containers nest deeper than `RecordLimits.maxNestingDepth`.
    @inline(__always)
    func checkDepth(_ depth: Int) throws {
        guard depth <= RecordLimits.maxNestingDepth else {
            throw corrupt("containers nest deeper than \(RecordLimits.maxNestingDepth) levels")
        }
    }

    // MARK: Typed reads

    static func path(_ parent: ValueDecoder?, _ key: CodingKey?) -> String {
        var keys = parent?.codingPath ?? []
        if let key { keys.append(key) }
        let path = keys.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }.joined(separator: ".")
        return path.isEmpty ? "(record)" : path
    }

    func mismatch(_ stored: RecordTag, expected: Any.Type, parent: ValueDecoder?, key: CodingKey?) -> RecordError {
        .typeMismatch(collection: collection, field: Self.path(parent, key), stored: stored.description, expected: "\(expected)")
    }

    // The typed reads name no field: a type mismatch says "(record)" and the caller that knows
    // the field renames it (`naming`, `RecordReader`), so the coding path — an optional
    // `CodingKey` existential, whose destruction went through `Optional`'s generic value
    // witness on every field read (callgrind: ~60 instructions per field of a W1 user) — is
    // only touched when something fails.
    @inline(__always)
    func integer<T: FixedWidthInteger>(_ type: T.Type, at position: Int) throws -> T {
        var p = position + 1
        let stored = try tag(at: position)
        // Narrowing by truncate-and-compare: `T(exactly:)` would need `Optional<T>` metadata
        // at run time on every call.
        let value: T, fits: Bool
        switch stored {
        case .int:
            let wide = ZigZag.decode(try varint(at: &p))
            value = T(truncatingIfNeeded: wide)
            fits = Int64(truncatingIfNeeded: value) == wide && (wide >= 0 || T.isSigned)
        case .uint:
            let wide = try varint(at: &p)
            value = T(truncatingIfNeeded: wide)
            fits = UInt64(truncatingIfNeeded: value) == wide && (value >= 0)
        default: throw mismatch(stored, expected: type, parent: nil, key: nil)
        }
        guard fits else {
            throw RecordError.typeMismatch(collection: collection, field: Self.path(nil, nil), stored: "an integer out of range", expected: "\(type)")
        }
        return value
    }

    @inline(__always)
    func double(at position: Int) throws -> Double {
        let stored = try tag(at: position)
        switch stored {
        case .double: return Double(bitPattern: try fixed(UInt64.self, at: position + 1))
        case .float: return Double(Float(bitPattern: try fixed(UInt32.self, at: position + 1)))
        default: throw mismatch(stored, expected: Double.self, parent: nil, key: nil)
        }
    }

    @inline(__always)
    func bool(at position: Int) throws -> Bool {
        let stored = try tag(at: position)
        guard stored == .bool else { throw mismatch(stored, expected: Bool.self, parent: nil, key: nil) }
        guard position + 1 < buffer.count else { throw corrupt("value runs past the end") }
        return buffer[position + 1] != 0
    }

    /// The string value (tag included) at `position`.
    @inline(__always)
    func stringValue(at position: Int) throws -> String {
        let stored = try tag(at: position)
        guard stored == .string else { throw mismatch(stored, expected: String.self, parent: nil, key: nil) }
        return try string(at: position + 1).0
    }

    /// `read`, with a type mismatch it reports renamed to the field at `parent`/`key`: the
    /// `Codable` containers' typed reads.
    @inline(__always)
    func naming<R>(_ parent: ValueDecoder?, _ key: CodingKey?, _ read: () throws -> R) throws -> R {
        do {
            return try read()
        } catch RecordError.typeMismatch(let collection, _, let stored, let expected) {
            throw RecordError.typeMismatch(collection: collection, field: Self.path(parent, key), stored: stored, expected: expected)
        }
    }

    /// The elements of the array at `position`, each read by `element` (given the context
    /// and the element's position): the unkeyed container's bytes read in place, for the
    /// `RecordReader` fast paths.
    @inline(__always)
    func elements<Element>(at position: Int, as type: [Element].Type, _ element: (DecodingContext, Int) throws -> Element) throws -> [Element] {
        let stored = try tag(at: position)
        guard stored == .unkeyed else { throw mismatch(stored, expected: type, parent: nil, key: nil) }
        var p = position + 1
        let count = try varint(at: &p)
        // Every element takes at least a byte: a count beyond the bytes left is malformed.
        guard count <= UInt64(buffer.count - p) else { throw corrupt("array of \(count) elements runs past the end") }
        var result: [Element] = []
        result.reserveCapacity(Int(count))
        for _ in 0 ..< count {
            result.append(try element(self, p))
            p = try skip(at: p)
        }
        return result
    }

    /// Decodes any value at `position`, or the zero value of `type` when `position` is nil
    /// (the field is absent from the record).
    func decode<T: Decodable>(_ type: T.Type, at position: Int?, parent: ValueDecoder?, key: CodingKey?) throws -> T {
        guard let position else { return try zeroValue(type, parent: parent, key: key) }
        // Metatype identity: pointer comparisons, not runtime casts.
        let known: KnownType? =
            type == String.self ? .string : type == Double.self ? .double : type == Int.self ? .int : type == Int64.self ? .int64
            : type == Bool.self ? .bool : type == Date.self ? .date : type == UUID.self ? .uuid : type == Data.self ? .data
            : type == URL.self ? .url : type == Decimal.self ? .decimal : nil
        switch known {
        case .string: return try naming(parent, key) { try stringValue(at: position) } as! T
        case .double: return try naming(parent, key) { try double(at: position) } as! T
        case .int: return try naming(parent, key) { try integer(Int.self, at: position) } as! T
        case .int64: return try naming(parent, key) { try integer(Int64.self, at: position) } as! T
        case .bool: return try naming(parent, key) { try bool(at: position) } as! T
        case .date:
            let stored = try tag(at: position)
            let seconds = Double(bitPattern: try fixed(UInt64.self, at: position + 1))
            switch stored {
            case .referenceDate: return Date(timeIntervalSinceReferenceDate: seconds) as! T
            case .date, .double: return Date(timeIntervalSince1970: seconds) as! T
            default: throw mismatch(stored, expected: type, parent: parent, key: key)
            }
        case .uuid:
            let stored = try tag(at: position)
            guard stored == .uuid else { throw mismatch(stored, expected: type, parent: parent, key: key) }
            guard position + 17 <= buffer.count else { throw corrupt("UUID runs past the end") }
            var uuid = UUID().uuid
            withUnsafeMutableBytes(of: &uuid) { $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: buffer[position + 1 ..< position + 17])) }
            return UUID(uuid: uuid) as! T
        case .data:
            let stored = try tag(at: position)
            guard stored == .bytes else { throw mismatch(stored, expected: type, parent: parent, key: key) }
            return Data(try lengthPrefixed(at: position + 1).0) as! T
        case .url:
            let stored = try tag(at: position)
            guard stored == .url || stored == .string else { throw mismatch(stored, expected: type, parent: parent, key: key) }
            let text = try string(at: position + 1).0
            guard let url = URL(string: text) else { throw corrupt("'\(text)' is not a URL") }
            return url as! T
        case .decimal:
            let stored = try tag(at: position)
            guard stored == .decimal else { throw mismatch(stored, expected: type, parent: parent, key: key) }
            let text = try string(at: position + 1).0
            guard let decimal = Decimal(string: text, locale: Locale(identifier: "en_US_POSIX")) else { throw corrupt("'\(text)' is not a Decimal") }
            return decimal as! T
        case nil:
            let decoder = ValueDecoder(context: self, position: position, parent: parent, key: key)
            try checkDepth(decoder.depth)
            return try T(from: decoder)
        }
    }

    private enum KnownType { case string, double, int, int64, bool, date, uuid, data, url, decimal }

    func zeroValue<T: Decodable>(_ type: T.Type, parent: ValueDecoder?, key: CodingKey?) throws -> T {
        switch type {
        case is String.Type: return "" as! T
        case is Bool.Type: return false as! T
        case is Double.Type: return 0.0 as! T
        case is Float.Type: return Float(0) as! T
        case is Int.Type: return 0 as! T
        case is Int64.Type: return Int64(0) as! T
        case is Date.Type, is UUID.Type, is URL.Type:
            throw RecordError.missingField(collection: collection, field: Self.path(parent, key), expected: "\(type)")
        case is Data.Type: return Data() as! T
        case is Decimal.Type: return Decimal(0) as! T
        default:
            do {
                return try T(from: ValueDecoder(context: self, position: nil, parent: parent, key: key))
            } catch let error as RecordError {
                throw error
            } catch {
                throw RecordError.missingField(collection: collection, field: Self.path(parent, key), expected: "\(type)")
            }
        }
    }
}

/// A decoder positioned at one value (or at an absent one, `position == nil`).
final class ValueDecoder: Decoder, CodingPathNode {
    let context: DecodingContext
    let position: Int?
    let parent: ValueDecoder?
    let key: CodingKey?
    /// Decoders from the record's root to this one.
    let depth: Int
    /// The index of the field a keyed container expects to be asked for next.
    @exclusivity(unchecked) var nextField = 0

    init(context: DecodingContext, position: Int?, parent: ValueDecoder?, key: CodingKey?) {
        self.context = context
        self.position = position
        self.parent = parent
        self.key = key
        self.depth = (parent?.depth ?? 0) + 1
    }

    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        KeyedDecodingContainer(try KeyedRecordDecodingContainer<Key>(decoder: self))
    }

    func unkeyedContainer() throws -> UnkeyedDecodingContainer { try UnkeyedRecordDecodingContainer(decoder: self) }

    func singleValueContainer() throws -> SingleValueDecodingContainer { SingleValueRecordDecodingContainer(decoder: self) }
}

struct KeyedRecordDecodingContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let decoder: ValueDecoder
    /// Field id and value position, for struct records.
    private var fields: [(id: UInt32, position: Int)] = []
    /// Key and value position, for dictionaries.
    private var entries: [(key: String, position: Int)] = []
    private let isMap: Bool

    init(decoder: ValueDecoder) throws {
        self.decoder = decoder
        let context = decoder.context
        guard let start = decoder.position else {
            isMap = false
            return
        }
        let tag = try context.tag(at: start)
        var p = start + 1
        switch tag {
        case .keyed:
            isMap = false
            let count = try context.varint(at: &p)
            fields.reserveCapacity(Int(min(count, 64)))
            for _ in 0 ..< count {
                let id = try context.varint(at: &p)
                fields.append((UInt32(truncatingIfNeeded: id), p))
                p = try context.skip(at: p)
            }
        case .map:
            isMap = true
            let count = try context.varint(at: &p)
            for _ in 0 ..< count {
                let (key, end) = try context.string(at: p)
                entries.append((key, end))
                p = try context.skip(at: end)
            }
        default:
            throw RecordError.typeMismatch(collection: context.collection, field: DecodingContext.path(decoder.parent, decoder.key), stored: tag.description, expected: "a struct or dictionary")
        }
    }

    var codingPath: [CodingKey] { decoder.codingPath }

    var allKeys: [Key] {
        if isMap { return entries.compactMap { Key(stringValue: $0.key) } }
        return fields.compactMap { decoder.context.fields.name(of: $0.id).flatMap(Key.init(stringValue:)) }
    }

    /// The value position of `key`, found by comparing names (short strings compare
    /// faster than they hash), starting where the previous lookup ended.
    private func position(of key: Key) -> Int? {
        let name = key.stringValue
        if isMap { return entries.first { $0.key == name }?.position }
        let names = decoder.context.fields.names
        let count = fields.count
        // Fields are usually read in the order written: start where the last lookup ended.
        var i = decoder.nextField
        for _ in 0 ..< count {
            if i >= count { i = 0 }
            let field = fields[i]
            if Int(field.id) < names.count, names[Int(field.id)] == name {
                decoder.nextField = i + 1
                return field.position
            }
            i += 1
        }
        return nil
    }

    func contains(_ key: Key) -> Bool { position(of: key) != nil }

    func decodeNil(forKey key: Key) throws -> Bool {
        guard let p = position(of: key) else { return true }
        return try decoder.context.tag(at: p) == .null
    }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        try decoder.context.decode(type, at: position(of: key), parent: decoder, key: key)
    }

    // Primitives skip the generic path.
    func decode(_ type: String.Type, forKey key: Key) throws -> String {
        guard let p = position(of: key) else { return "" }
        return try decoder.context.naming(decoder, key) { try decoder.context.stringValue(at: p) }
    }

    func decode(_ type: Double.Type, forKey key: Key) throws -> Double {
        guard let p = position(of: key) else { return 0 }
        return try decoder.context.naming(decoder, key) { try decoder.context.double(at: p) }
    }

    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool {
        guard let p = position(of: key) else { return false }
        return try decoder.context.naming(decoder, key) { try decoder.context.bool(at: p) }
    }

    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try integer(type, key) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try integer(type, key) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try integer(type, key) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try integer(type, key) }

    private func integer<T: FixedWidthInteger>(_ type: T.Type, _ key: Key) throws -> T {
        guard let p = position(of: key) else { return 0 }
        return try decoder.context.naming(decoder, key) { try decoder.context.integer(type, at: p) }
    }

    func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? {
        guard let p = position(of: key), try decoder.context.tag(at: p) != .null else { return nil }
        return try decoder.context.naming(decoder, key) { try decoder.context.stringValue(at: p) }
    }

    func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? {
        guard let p = position(of: key), try decoder.context.tag(at: p) != .null else { return nil }
        return try decoder.context.naming(decoder, key) { try decoder.context.integer(type, at: p) }
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        KeyedDecodingContainer(try KeyedRecordDecodingContainer<NestedKey>(decoder: ValueDecoder(context: decoder.context, position: position(of: key), parent: decoder, key: key)))
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> UnkeyedDecodingContainer {
        try UnkeyedRecordDecodingContainer(decoder: ValueDecoder(context: decoder.context, position: position(of: key), parent: decoder, key: key))
    }

    func superDecoder() throws -> Decoder {
        let position = decoder.context.fields.id(of: "super").flatMap { id in fields.first { $0.id == id }?.position }
        return ValueDecoder(context: decoder.context, position: position, parent: decoder, key: SuperKey())
    }

    func superDecoder(forKey key: Key) throws -> Decoder {
        ValueDecoder(context: decoder.context, position: position(of: key), parent: decoder, key: key)
    }
}

struct UnkeyedRecordDecodingContainer: UnkeyedDecodingContainer {
    let decoder: ValueDecoder
    private var next: Int
    let count: Int?
    private(set) var currentIndex = 0

    init(decoder: ValueDecoder) throws {
        self.decoder = decoder
        guard let start = decoder.position else {
            next = 0
            count = 0
            return
        }
        let tag = try decoder.context.tag(at: start)
        guard tag == .unkeyed else { throw decoder.context.mismatch(tag, expected: [Any].self, parent: decoder.parent, key: decoder.key) }
        var p = start + 1
        count = Int(try decoder.context.varint(at: &p))
        next = p
    }

    var codingPath: [CodingKey] { decoder.codingPath }
    var isAtEnd: Bool { currentIndex >= (count ?? 0) }

    private mutating func advance() throws -> Int {
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(Any.self, .init(codingPath: codingPath, debugDescription: "array has only \(count ?? 0) elements"))
        }
        let position = next
        next = try decoder.context.skip(at: position)
        currentIndex += 1
        return position
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd, try decoder.context.tag(at: next) == .null else { return false }
        _ = try advance()
        return true
    }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        let key = IndexKey(currentIndex)
        return try decoder.context.decode(type, at: try advance(), parent: decoder, key: key)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        let key = IndexKey(currentIndex)
        return KeyedDecodingContainer(try KeyedRecordDecodingContainer<NestedKey>(decoder: ValueDecoder(context: decoder.context, position: try advance(), parent: decoder, key: key)))
    }

    mutating func nestedUnkeyedContainer() throws -> UnkeyedDecodingContainer {
        let key = IndexKey(currentIndex)
        return try UnkeyedRecordDecodingContainer(decoder: ValueDecoder(context: decoder.context, position: try advance(), parent: decoder, key: key))
    }

    mutating func superDecoder() throws -> Decoder {
        let key = IndexKey(currentIndex)
        return ValueDecoder(context: decoder.context, position: try advance(), parent: decoder, key: key)
    }
}

struct SingleValueRecordDecodingContainer: SingleValueDecodingContainer {
    let decoder: ValueDecoder
    var codingPath: [CodingKey] { decoder.codingPath }

    func decodeNil() -> Bool {
        guard let p = decoder.position else { return true }
        return (try? decoder.context.tag(at: p)) == .null
    }

    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try decoder.context.decode(type, at: decoder.position, parent: decoder.parent, key: decoder.key)
    }

    func decode(_ type: Int8.Type) throws -> Int8 { try integer(type) }
    func decode(_ type: Int16.Type) throws -> Int16 { try integer(type) }
    func decode(_ type: Int32.Type) throws -> Int32 { try integer(type) }
    func decode(_ type: UInt.Type) throws -> UInt { try integer(type) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try integer(type) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try integer(type) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try integer(type) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try integer(type) }
    func decode(_ type: Float.Type) throws -> Float {
        guard let p = decoder.position else { return 0 }
        return Float(try decoder.context.naming(decoder.parent, decoder.key) { try decoder.context.double(at: p) })
    }

    private func integer<T: FixedWidthInteger>(_ type: T.Type) throws -> T {
        guard let p = decoder.position else { return 0 }
        return try decoder.context.naming(decoder.parent, decoder.key) { try decoder.context.integer(type, at: p) }
    }
}
