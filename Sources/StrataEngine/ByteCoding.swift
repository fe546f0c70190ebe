/// Appends little-endian integers, LEB128 varints and byte strings to a growing buffer.
@usableFromInline
struct ByteWriter {
    @usableFromInline var bytes: [UInt8]

    @inlinable init(capacity: Int = 0) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    @inlinable var count: Int { bytes.count }

    @inlinable mutating func u8(_ v: UInt8) { bytes.append(v) }

    @inlinable mutating func u16(_ v: UInt16) { littleEndian(v) }
    @inlinable mutating func u32(_ v: UInt32) { littleEndian(v) }
    @inlinable mutating func u64(_ v: UInt64) { littleEndian(v) }

    @inlinable mutating func littleEndian<T: FixedWidthInteger>(_ v: T) {
        withUnsafeBytes(of: v.littleEndian) { bytes.append(contentsOf: $0) }
    }

    @inlinable mutating func varint(_ v: UInt64) { forEachVarintByte(of: v) { bytes.append($0) } }

    @inlinable mutating func varint(_ v: Int) { varint(UInt64(v)) }

    @inlinable mutating func raw<C: Collection>(_ data: C) where C.Element == UInt8 { bytes.append(contentsOf: data) }

    @inlinable mutating func raw(_ data: UnsafeRawBufferPointer) { bytes.append(contentsOf: data) }

    /// A varint length followed by the bytes.
    @inlinable mutating func lengthPrefixed<C: Collection>(_ data: C) where C.Element == UInt8 {
        varint(data.count)
        bytes.append(contentsOf: data)
    }
}

/// Writes into a buffer already sized for what it gets (a node entry being laid out in
/// place), as `ByteWriter` appends to a growing one.
@usableFromInline
struct InPlaceWriter {
    @usableFromInline let out: UnsafeMutableRawBufferPointer
    @usableFromInline var position = 0

    @inlinable init(_ out: UnsafeMutableRawBufferPointer) { self.out = out }

    @inlinable mutating func u8(_ v: UInt8) {
        out[position] = v
        position += 1
    }

    @inlinable mutating func varint(_ v: Int) { forEachVarintByte(of: UInt64(v)) { u8($0) } }

    @inlinable mutating func raw(_ bytes: UnsafeRawBufferPointer) {
        if bytes.count > 0 { (out.baseAddress! + position).copyMemory(from: bytes.baseAddress!, byteCount: bytes.count) }
        position += bytes.count
    }

    @inlinable mutating func littleEndian<T: FixedWidthInteger>(_ v: T) {
        withUnsafeBytes(of: v.littleEndian) { raw($0) }
    }
}

/// The LEB128 bytes of `v`, low seven bits first: the one varint encoding both writers use.
@inlinable @inline(__always)
func forEachVarintByte(of v: UInt64, _ emit: (UInt8) -> Void) {
    var v = v
    while v >= 0x80 {
        emit(UInt8(truncatingIfNeeded: v) | 0x80)
        v >>= 7
    }
    emit(UInt8(v))
}

/// The number of bytes `varint(v)` writes.
@inlinable func varintSize(_ v: Int) -> Int {
    var v = UInt64(v), n = 1
    while v >= 0x80 { v >>= 7; n += 1 }
    return n
}

/// Reads what `ByteWriter` wrote, bounds-checking every access. A read past the end or a
/// malformed varint throws `StrataError.corruption` naming `baseOffset + position`.
@usableFromInline
struct ByteReader {
    @usableFromInline let buffer: UnsafeRawBufferPointer
    @usableFromInline var position: Int
    @usableFromInline let context: CorruptionContext

    @inlinable init(_ buffer: UnsafeRawBufferPointer, context: CorruptionContext, position: Int = 0) {
        self.buffer = buffer
        self.position = position
        self.context = context
    }

    @inlinable var remaining: Int { buffer.count - position }
    @inlinable var isAtEnd: Bool { position >= buffer.count }

    @inlinable func fail(_ reason: String) -> StrataError {
        context.error(reason)
    }

    @inlinable mutating func need(_ n: Int, _ what: String) throws {
        if n < 0 || n > remaining { throw fail("\(what) runs past the end of its frame (needs \(n) bytes, \(remaining) left)") }
    }

    @inlinable mutating func u8(_ what: String = "byte") throws -> UInt8 {
        try need(1, what)
        defer { position += 1 }
        return buffer[position]
    }

    @inlinable mutating func fixed<T: FixedWidthInteger>(_ type: T.Type, _ what: String) throws -> T {
        try need(MemoryLayout<T>.size, what)
        defer { position += MemoryLayout<T>.size }
        return T(littleEndian: buffer.loadUnaligned(fromByteOffset: position, as: T.self))
    }

    @inlinable mutating func u16(_ what: String) throws -> UInt16 { try fixed(UInt16.self, what) }
    @inlinable mutating func u32(_ what: String) throws -> UInt32 { try fixed(UInt32.self, what) }
    @inlinable mutating func u64(_ what: String) throws -> UInt64 { try fixed(UInt64.self, what) }

    @inlinable mutating func varint(_ what: String) throws -> UInt64 {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            let byte = try u8(what)
            if shift == 63 && byte > 1 { throw fail("\(what): varint overflows 64 bits") }
            result |= UInt64(byte & 0x7F) << shift
            if byte < 0x80 { return result }
            shift += 7
            if shift > 63 { throw fail("\(what): varint longer than 10 bytes") }
        }
    }

    /// A varint that must fit in `limit`.
    @inlinable mutating func length(_ what: String, limit: Int = Int(Int32.max)) throws -> Int {
        let v = try varint(what)
        guard v <= UInt64(limit) else { throw fail("\(what) \(v) exceeds the limit \(limit)") }
        return Int(v)
    }

    @inlinable mutating func bytes(_ count: Int, _ what: String) throws -> UnsafeRawBufferPointer {
        try need(count, what)
        defer { position += count }
        return UnsafeRawBufferPointer(rebasing: buffer[position ..< position + count])
    }

    @inlinable mutating func array(_ count: Int, _ what: String) throws -> [UInt8] {
        Array(try bytes(count, what))
    }

    @inlinable mutating func lengthPrefixed(_ what: String, limit: Int = Int(Int32.max)) throws -> [UInt8] {
        let n = try length("\(what) length", limit: limit)
        return try array(n, what)
    }
}

/// Where decoded bytes came from, so a decoding failure can name the file and offset.
@usableFromInline
struct CorruptionContext: Sendable {
    @usableFromInline let path: String
    @usableFromInline let offset: UInt64
    @usableFromInline let structure: String

    @inlinable init(path: String, offset: UInt64, structure: String) {
        self.path = path
        self.offset = offset
        self.structure = structure
    }

    @inlinable func error(_ reason: String) -> StrataError {
        .corruption(path: path, offset: offset, reason: "\(structure): \(reason)")
    }
}
