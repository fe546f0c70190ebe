import Foundation

/// An order-preserving binary encoding of typed values and tuples of them: comparing two
/// encoded keys byte by byte gives the same order as comparing the values, so B-tree order
/// is value order and range scans work for every type (FORMAT.md, "Key encoding").
///
/// ```swift
/// let key = Key("alice", 42)            // a (String, Int) tuple
/// try tx.put(value, forKey: key.bytes, in: "scores")
/// let range = KeyRange.prefix(Key("alice").bytes)   // every key whose first element is "alice"
/// ```
///
/// Each element starts with a type tag. Integers of every width share one encoding
/// (`Int8(5)` and `Int64(5)` encode alike), as do unsigned ones; signed and unsigned
/// integers, and other different types, order by their tags, so keep one type per tuple
/// position. `-0.0` encodes as `0.0`; every NaN encodes as one NaN, above `+infinity`.
/// Strings are compared after Unicode NFC normalization, as Swift compares them.
public struct Key: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The encoded bytes: what trees store and compare.
    public internal(set) var bytes: [UInt8]

    /// An empty key, to append elements to.
    public init() { bytes = [] }

    /// An empty key with room for `capacity` bytes: a one-element key built into it
    /// allocates once (a number's key is 9 bytes).
    ///
    /// - Parameter capacity: The bytes to reserve.
    public init(reservingCapacity capacity: Int) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    /// A key from raw bytes, e.g. read back from a cursor.
    ///
    /// - Parameter bytes: An encoded key; not checked (decode it with `elements()` to check).
    public init(bytes: [UInt8]) { self.bytes = bytes }

    /// A key of one or more elements.
    ///
    /// - Parameters:
    ///   - first: The first element.
    ///   - rest: The other elements, in order.
    public init(_ first: any KeyComponent, _ rest: any KeyComponent...) {
        bytes = []
        first.appendKey(to: &self)
        for element in rest { element.appendKey(to: &self) }
    }

    /// Appends another tuple element.
    /// Empties the key, keeping its storage: one key can be rebuilt per record without allocating.
    public mutating func removeAll() { bytes.removeAll(keepingCapacity: true) }

    /// Appends one element; the key's order is its elements' order, element by element.
    ///
    /// - Parameter element: The element to append.
    public mutating func append(_ element: some KeyComponent) {
        element.appendKey(to: &self)
    }

    /// Byte order, which is the elements' order.
    ///
    /// - Parameters:
    ///   - a: A key.
    ///   - b: Another key.
    /// - Returns: True when `a`'s bytes sort before `b`'s.
    public static func < (a: Key, b: Key) -> Bool { compareBytes(a.bytes, b.bytes) < 0 }

    /// The bytes of this key followed by `prefix` without its terminator: the lower bound
    /// of every key whose next element is a string starting with `prefix`.
    ///
    /// ```swift
    /// let range = KeyRange.prefix(Key("users").appendingStringPrefix("al"))
    /// ```
    ///
    /// - Parameter prefix: The start of the next element's string.
    /// - Returns: The encoded bound.
    public func appendingStringPrefix(_ prefix: String) -> [UInt8] {
        var key = self
        key.bytes.append(KeyTag.string)
        key.appendEscaped(Key.normalizedUTF8(prefix))
        return key.bytes
    }

    /// The elements of this key.
    ///
    /// - Returns: The decoded elements, in order.
    /// - Throws: `StrataError.corruption` when the bytes are not a valid key encoding.
    public func elements() throws -> [KeyElement] {
        try KeyElement.decode(bytes)
    }

    public var description: String {
        guard let elements = try? elements() else { return "0x" + bytes.map(hex).joined() }
        return "(" + elements.map(\.description).joined(separator: ", ") + ")"
    }

    // MARK: Encoding primitives

    mutating func appendTag(_ tag: UInt8) { bytes.append(tag) }

    mutating func appendBigEndian(_ value: UInt64) {
        withUnsafeBytes(of: value.bigEndian) { bytes.append(contentsOf: $0) }
    }

    /// The one-element key `tag` + `bits` big-endian, as `appendTag` and `appendBigEndian`
    /// write it, lent from the stack: what `withKeyBytes` is for fixed-width values.
    static func withFixedWidth<R>(tag: UInt8, bits: UInt64, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        var encoded: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) = (tag, 0, 0, 0, 0, 0, 0, 0, 0)
        return try withUnsafeMutableBytes(of: &encoded) { buffer in
            buffer.storeBytes(of: bits.bigEndian, toByteOffset: 1, as: UInt64.self)
            return try body(UnsafeRawBufferPointer(buffer))
        }
    }

    /// 0x00 becomes 0x00 0xFF and the string ends with 0x00, so a shorter string orders
    /// before any longer one it prefixes, and embedded zero bytes keep their order.
    mutating func appendEscaped<C: Collection>(_ data: C) where C.Element == UInt8 {
        for byte in data {
            bytes.append(byte)
            if byte == 0 { bytes.append(0xFF) }
        }
    }

    mutating func appendTerminated<C: Collection>(_ data: C) where C.Element == UInt8 {
        appendEscaped(data)
        bytes.append(0)
    }

    /// A Double's 8 key bytes (before big-endian): ordered as the values, -0.0 as 0.0, every
    /// NaN as one NaN above +infinity.
    package static func orderedBits(_ value: Double) -> UInt64 {
        var v = value
        if v == 0 { v = 0 }  // -0.0 == 0.0
        if v.isNaN { return 0x7FF8_0000_0000_0000 | (1 << 63) }  // one quiet NaN, above +infinity
        let bits = v.bitPattern
        return bits & (1 << 63) != 0 ? ~bits : bits | (1 << 63)
    }

    static func double(fromOrderedBits bits: UInt64) -> Double {
        Double(bitPattern: bits & (1 << 63) != 0 ? bits & ~(1 << 63) : ~bits)
    }

    static func normalizedUTF8(_ string: String) -> [UInt8] {
        let utf8 = Array(string.utf8)
        if utf8.allSatisfy({ $0 < 0x80 }) { return utf8 }
        return Array(string.precomposedStringWithCanonicalMapping.utf8)
    }
}

/// Element type tags of the key encoding (FORMAT.md, "Key encoding"): each element of a key
/// starts with one. Their order is the order of mixed types.
public enum KeyTag {
    /// nil: orders before every value.
    public static let null: UInt8 = 0x05
    /// `false`.
    public static let falseValue: UInt8 = 0x10
    /// `true`.
    public static let trueValue: UInt8 = 0x11
    /// A signed integer, 8 bytes big-endian with the sign bit flipped.
    public static let int: UInt8 = 0x20
    /// An unsigned integer, 8 bytes big-endian.
    public static let uint: UInt8 = 0x21
    /// A Double (Float widened), 8 bytes in an order-preserving form.
    public static let double: UInt8 = 0x30
    /// A string: NFC UTF-8, each 0x00 written 0x00 0xFF, then a terminating 0x00.
    public static let string: UInt8 = 0x40
    /// Bytes, each 0x00 written 0x00 0xFF, then a terminating 0x00.
    public static let bytes: UInt8 = 0x50
    /// A Date, as the Double encoding of its seconds since 1970.
    public static let date: UInt8 = 0x60
    /// A UUID, its 16 bytes.
    public static let uuid: UInt8 = 0x70
}

/// A value that can be an element of a `Key`.
///
/// An enum with a raw value becomes one by declaring it; its key is its raw value's, which
/// is also what `Codable` stores, so an index on it orders as the stored values do:
///
/// ```swift
/// enum Level: String, Codable, KeyComponent { case low, high }
/// ```
public protocol KeyComponent {
    /// Appends this value's key encoding, which orders as the values do.
    /// - Parameter key: The key to append to.
    func appendKey(to key: inout Key)

    /// Lends the encoding of the one-element key made of this value to `body`.
    ///
    /// The default builds a `Key`. Numbers and dates override it to encode into a buffer on
    /// the stack, so a point lookup by a numeric primary key allocates nothing.
    ///
    /// ```swift
    /// let found = Int64(42).withKeyBytes { $0.count }   // 9: the tag and 8 bytes
    /// ```
    ///
    /// - Parameter body: Reads the encoded key; the buffer is valid only during the call.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws.
    func withKeyBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R
}

extension KeyComponent {
    public func withKeyBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        var key = Key()
        appendKey(to: &key)
        return try key.bytes.withUnsafeBytes(body)
    }
}

extension KeyComponent where Self: RawRepresentable, RawValue: KeyComponent {
    /// Appends the value's key encoding (FORMAT.md, "Key encoding").
    /// - Parameter key: The key to append the encoding to.
    public func appendKey(to key: inout Key) { rawValue.appendKey(to: &key) }
}

extension Int64: KeyComponent {
    /// Appends the value's key encoding (FORMAT.md, "Key encoding").
    /// - Parameter key: The key to append the encoding to.
    public func appendKey(to key: inout Key) {
        key.appendTag(KeyTag.int)
        key.appendBigEndian(Key.orderedBits(self))
    }

    public func withKeyBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try Key.withFixedWidth(tag: KeyTag.int, bits: Key.orderedBits(self), body)
    }
}

extension Key {
    /// An Int64's 8 key bytes (before big-endian): the sign bit flipped, so negatives order first.
    @inlinable
    package static func orderedBits(_ value: Int64) -> UInt64 { UInt64(bitPattern: value) ^ (1 << 63) }
}

extension Int: KeyComponent {
    public func appendKey(to key: inout Key) { Int64(self).appendKey(to: &key) }
    public func withKeyBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R { try Int64(self).withKeyBytes(body) }
}
extension Int32: KeyComponent {
    public func appendKey(to key: inout Key) { Int64(self).appendKey(to: &key) }
    public func withKeyBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R { try Int64(self).withKeyBytes(body) }
}
extension Int16: KeyComponent {
    public func appendKey(to key: inout Key) { Int64(self).appendKey(to: &key) }
    public func withKeyBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R { try Int64(self).withKeyBytes(body) }
}
extension Int8: KeyComponent {
    public func appendKey(to key: inout Key) { Int64(self).appendKey(to: &key) }
    public func withKeyBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R { try Int64(self).withKeyBytes(body) }
}

extension UInt64: KeyComponent {
    /// Appends the value's key encoding (FORMAT.md, "Key encoding").
    /// - Parameter key: The key to append the encoding to.
    public func appendKey(to key: inout Key) {
        key.appendTag(KeyTag.uint)
        key.appendBigEndian(self)
    }

    public func withKeyBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try Key.withFixedWidth(tag: KeyTag.uint, bits: self, body)
    }
}

extension UInt: KeyComponent {
    public func appendKey(to key: inout Key) { UInt64(self).appendKey(to: &key) }
    public func withKeyBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R { try UInt64(self).withKeyBytes(body) }
}
extension UInt32: KeyComponent {
    public func appendKey(to key: inout Key) { UInt64(self).appendKey(to: &key) }
    public func withKeyBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R { try UInt64(self).withKeyBytes(body) }
}
extension UInt16: KeyComponent {
    public func appendKey(to key: inout Key) { UInt64(self).appendKey(to: &key) }
    public func withKeyBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R { try UInt64(self).withKeyBytes(body) }
}
extension UInt8: KeyComponent {
    public func appendKey(to key: inout Key) { UInt64(self).appendKey(to: &key) }
    public func withKeyBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R { try UInt64(self).withKeyBytes(body) }
}

extension Double: KeyComponent {
    /// Appends the value's key encoding (FORMAT.md, "Key encoding").
    /// - Parameter key: The key to append the encoding to.
    public func appendKey(to key: inout Key) {
        key.appendTag(KeyTag.double)
        key.appendBigEndian(Key.orderedBits(self))
    }

    public func withKeyBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try Key.withFixedWidth(tag: KeyTag.double, bits: Key.orderedBits(self), body)
    }
}

extension Float: KeyComponent {
    public func appendKey(to key: inout Key) { Double(self).appendKey(to: &key) }
    public func withKeyBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R { try Double(self).withKeyBytes(body) }
}

extension Bool: KeyComponent {
    /// Appends the value's key encoding (FORMAT.md, "Key encoding").
    /// - Parameter key: The key to append the encoding to.
    public func appendKey(to key: inout Key) { key.appendTag(self ? KeyTag.trueValue : KeyTag.falseValue) }
}

extension String: KeyComponent {
    /// Appends the value's key encoding (FORMAT.md, "Key encoding").
    /// - Parameter key: The key to append the encoding to.
    public func appendKey(to key: inout Key) {
        key.appendTag(KeyTag.string)
        key.appendTerminated(Key.normalizedUTF8(self))
    }
}

extension Substring: KeyComponent { public func appendKey(to key: inout Key) { String(self).appendKey(to: &key) } }

extension Data: KeyComponent {
    /// Appends the value's key encoding (FORMAT.md, "Key encoding").
    /// - Parameter key: The key to append the encoding to.
    public func appendKey(to key: inout Key) {
        key.appendTag(KeyTag.bytes)
        key.appendTerminated(self)
    }
}

extension Array: KeyComponent where Element == UInt8 {
    /// Appends the value's key encoding (FORMAT.md, "Key encoding").
    /// - Parameter key: The key to append the encoding to.
    public func appendKey(to key: inout Key) {
        key.appendTag(KeyTag.bytes)
        key.appendTerminated(self)
    }
}

extension Date: KeyComponent {
    /// Appends the value's key encoding (FORMAT.md, "Key encoding").
    /// - Parameter key: The key to append the encoding to.
    public func appendKey(to key: inout Key) {
        key.appendTag(KeyTag.date)
        key.appendBigEndian(Key.orderedBits(timeIntervalSince1970))
    }

    public func withKeyBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try Key.withFixedWidth(tag: KeyTag.date, bits: Key.orderedBits(timeIntervalSince1970), body)
    }
}

extension UUID: KeyComponent {
    /// UUIDs order by their 16 bytes, most significant first.
    /// - Parameter key: The key to append the encoding to.
    public func appendKey(to key: inout Key) {
        key.appendTag(KeyTag.uuid)
        withUnsafeBytes(of: uuid) { key.bytes.append(contentsOf: $0) }
    }
}

extension Optional: KeyComponent where Wrapped: KeyComponent {
    /// nil orders before every value.
    /// - Parameter key: The key to append the encoding to.
    public func appendKey(to key: inout Key) {
        switch self {
        case .none: key.appendTag(KeyTag.null)
        case .some(let value): value.appendKey(to: &key)
        }
    }
}

extension Key: KeyComponent {
    /// Appends all elements of another key (tuples nest by concatenation).
    /// - Parameter key: The key to append the encoding to.
    public func appendKey(to key: inout Key) { key.bytes.append(contentsOf: bytes) }

    /// This key's own bytes, not a copy.
    public func withKeyBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R { try bytes.withUnsafeBytes(body) }
}

/// One decoded key element.
public enum KeyElement: Sendable, Equatable, CustomStringConvertible {
    case null
    case bool(Bool)
    case int(Int64)
    case uint(UInt64)
    case double(Double)
    case string(String)
    case bytes([UInt8])
    case date(Date)
    case uuid(UUID)

    public var description: String {
        switch self {
        case .null: "nil"
        case .bool(let v): "\(v)"
        case .int(let v): "\(v)"
        case .uint(let v): "\(v)"
        case .double(let v): "\(v)"
        case .string(let v): "\"\(v)\""
        case .bytes(let v): "0x" + v.map(hex).joined()
        case .date(let v): InstantText.format(v)
        case .uuid(let v): v.uuidString
        }
    }

    /// Decodes every element of an encoded key; throws `StrataError.corruption` (offset 0)
    /// when the bytes are not a valid encoding.
    ///
    /// - Parameter bytes: An encoded key.
    /// - Returns: Its elements, in order.
    /// - Throws: `StrataError.corruption` for bytes that are not a valid encoding.
    public static func decode(_ bytes: [UInt8]) throws -> [KeyElement] {
        let context = CorruptionContext(path: "key", offset: 0, structure: "key encoding")
        return try bytes.withUnsafeBytes { raw in
            var r = ByteReader(raw, context: context)
            var elements: [KeyElement] = []
            func big() throws -> UInt64 {
                UInt64(bigEndian: try r.fixed(UInt64.self, "key element").littleEndian)
            }
            func terminated() throws -> [UInt8] {
                var out: [UInt8] = []
                while true {
                    let byte = try r.u8("string byte")
                    if byte != 0 { out.append(byte); continue }
                    if !r.isAtEnd, raw[r.position] == 0xFF {
                        out.append(0)
                        r.position += 1
                        continue
                    }
                    return out
                }
            }
            while !r.isAtEnd {
                let tag = try r.u8("tag")
                switch tag {
                case KeyTag.null: elements.append(.null)
                case KeyTag.falseValue: elements.append(.bool(false))
                case KeyTag.trueValue: elements.append(.bool(true))
                case KeyTag.int: elements.append(.int(Int64(bitPattern: try big() ^ (1 << 63))))
                case KeyTag.uint: elements.append(.uint(try big()))
                case KeyTag.double: elements.append(.double(Key.double(fromOrderedBits: try big())))
                case KeyTag.date: elements.append(.date(Date(timeIntervalSince1970: Key.double(fromOrderedBits: try big()))))
                case KeyTag.string:
                    guard let s = String(validating: try terminated(), as: UTF8.self) else { throw context.error("string is not UTF-8") }
                    elements.append(.string(s))
                case KeyTag.bytes: elements.append(.bytes(try terminated()))
                case KeyTag.uuid:
                    let b = try r.bytes(16, "uuid")
                    elements.append(.uuid(UUID(uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]))))
                default:
                    throw context.error("unknown key tag \(hex(tag)) at byte \(r.position - 1)")
                }
            }
            return elements
        }
    }
}
