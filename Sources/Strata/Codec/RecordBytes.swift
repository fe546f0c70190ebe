import Foundation
import StrataEngine

/// The reads of record bytes every reader shares — the one varint decoder, and the step
/// over a string or integer — as functions that answer nil where the bytes run out or are
/// malformed. `DecodingContext` turns nil into `RecordError.corruptRecord`; the scan's byte
/// checks (`RecordPrefilter`) treat it as "unsure" and leave the record to decoding. No
/// call, no error value and no text is built on their paths: a scan runs them for every
/// field of every record.
enum RecordBytes {
    /// The varint at `position`, moving `position` past it; nil when it runs past the end or
    /// is longer than 10 bytes.
    @inline(__always)
    static func varint(_ buffer: UnsafeRawBufferPointer, at position: inout Int) -> UInt64? {
        guard let base = buffer.baseAddress else { return nil }
        return varint(base, size: buffer.count, at: &position)
    }

    /// `varint` over the `size` bytes at `base`: for readers that hold a record's address
    /// (checked once for nil, not at every byte read).
    @inline(__always)
    static func varint(_ base: UnsafeRawPointer, size: Int, at position: inout Int) -> UInt64? {
        guard position >= 0, position < size else { return nil }
        // One byte, the common case (field ids, lengths, small numbers): no loop.
        let first = base.load(fromByteOffset: position, as: UInt8.self)
        if first < 0x80 {
            position += 1
            return UInt64(first)
        }
        var result = UInt64(first & 0x7F), shift: UInt64 = 7, p = position + 1
        while p < size {
            let byte = base.load(fromByteOffset: p, as: UInt8.self)
            p += 1
            result |= UInt64(byte & 0x7F) << shift
            if byte < 0x80 {
                position = p
                return result
            }
            shift += 7
            if shift > 63 { return nil }
        }
        return nil
    }

    /// Where the scalar value (any but a struct, array or dictionary) at `position` ends;
    /// nil for a container, an unknown tag, and malformed bytes. A record walk steps over
    /// fields with it, leaving containers to `DecodingContext.skip`. Integers and strings
    /// shorter than 128 bytes, most fields, are stepped over in line, with no call (a call
    /// here made the scan's walk spill its registers at every field: measured, a third of
    /// the walk's instructions); the rest in a call.
    @inline(__always)
    static func endOfScalar(_ buffer: UnsafeRawBufferPointer, at position: Int) -> Int? {
        guard position >= 0, position < buffer.count else { return nil }
        let tag = buffer[position]
        if tag == RecordTag.int.rawValue || tag == RecordTag.uint.rawValue {
            return endOfVarint(buffer, at: position + 1)
        }
        if tag == RecordTag.string.rawValue, position + 1 < buffer.count, buffer[position + 1] < 0x80 {
            return endOfLengthPrefixed(buffer, lengthAt: position + 1)
        }
        return endOfOtherScalar(buffer, at: position)
    }

    /// Where the varint starting at `position` ends; nil when it runs past the end or is
    /// longer than 10 bytes.
    ///
    /// A varint ends at its first byte below 0x80: within the next 8 bytes, the lowest such
    /// byte of them is found by reading them as one word (a byte loop cost ~6 instructions a
    /// byte; most stored integers take 1–8 bytes).
    @inline(__always)
    static func endOfVarint(_ buffer: UnsafeRawBufferPointer, at position: Int) -> Int? {
        var p = position
        if p >= 0, p + 8 <= buffer.count {
            let ends = ~UInt64(littleEndian: buffer.loadUnaligned(fromByteOffset: p, as: UInt64.self)) & 0x8080_8080_8080_8080
            if ends != 0 { return p + ends.trailingZeroBitCount / 8 + 1 }
        }
        let end = min(buffer.count, p + 10)
        while p >= 0, p < end {
            if buffer[p] < 0x80 { return p + 1 }
            p += 1
        }
        return nil
    }

    /// Where the length-prefixed value (text, data, URL, decimal) whose length starts at
    /// `position` ends; nil when the length is malformed or runs past the end. A one-byte
    /// length, values under 128 bytes, is read in line.
    @inline(__always)
    static func endOfLengthPrefixed(_ buffer: UnsafeRawBufferPointer, lengthAt position: Int) -> Int? {
        if position >= 0, position < buffer.count, buffer[position] < 0x80 {
            let start = position + 1, length = Int(buffer[position])
            return length <= buffer.count - start ? start + length : nil
        }
        return endOfLongLengthPrefixed(buffer, lengthAt: position)
    }

    @inline(never)
    private static func endOfLongLengthPrefixed(_ buffer: UnsafeRawBufferPointer, lengthAt position: Int) -> Int? {
        guard let base = buffer.baseAddress else { return nil }
        return payload(base, size: buffer.count, lengthAt: position)?.upperBound
    }

    /// Where the payload of the length-prefixed value whose length starts at `position`
    /// lies among the `size` bytes at `base`; nil when the length is malformed or runs past
    /// the end.
    @inline(__always)
    static func payload(_ base: UnsafeRawPointer, size: Int, lengthAt position: Int) -> Range<Int>? {
        var start = position
        guard let length = varint(base, size: size, at: &start), length <= UInt64(size &- start) else { return nil }
        return start ..< start &+ Int(truncatingIfNeeded: length)
    }

    /// The number of bytes after its tag of a value of fixed size (numbers other than
    /// integers, Booleans, dates, UUIDs, nil); nil for every other tag.
    static func fixedSize(of tag: RecordTag) -> Int? {
        switch tag {
        case .double, .date, .referenceDate: 8
        case .float: 4
        case .bool: 1
        case .uuid: 16
        case .null: 0
        default: nil
        }
    }

    /// `endOfScalar` for the values other than integers and short strings.
    @inline(never)
    private static func endOfOtherScalar(_ buffer: UnsafeRawBufferPointer, at position: Int) -> Int? {
        let p = position + 1
        guard let tag = RecordTag(rawValue: buffer[position]) else { return nil }
        switch tag {
        case .string, .bytes, .url, .decimal:
            return endOfLengthPrefixed(buffer, lengthAt: p)
        default:
            guard let size = fixedSize(of: tag) else { return nil }
            return size <= buffer.count - p ? p + size : nil
        }
    }

    /// The key (`Key`'s encoding) of the number, Boolean or date at `position`, converted to
    /// the key tag `kind`; nil when the stored type cannot be converted exactly, or the bytes
    /// are malformed. A date's key is computed as decoding then `Key` compute it (the
    /// stored seconds as a `Date`, then its seconds since 1970), so the two always agree.
    @inline(__always)
    static func fixedKey(_ buffer: UnsafeRawBufferPointer, at position: Int, as kind: UInt8) -> FixedKey? {
        guard position >= 0, position < buffer.count else { return nil }
        var p = position + 1
        func littleEndian<T: FixedWidthInteger>(_: T.Type) -> T? {
            guard p + MemoryLayout<T>.size <= buffer.count else { return nil }
            return T(littleEndian: buffer.loadUnaligned(fromByteOffset: p, as: T.self))
        }
        switch (buffer[position], kind) {
        case (RecordTag.int.rawValue, KeyTag.int):
            return varint(buffer, at: &p).map { FixedKey(tag: KeyTag.int, bits: Key.orderedBits(ZigZag.decode($0))) }
        case (RecordTag.uint.rawValue, KeyTag.uint):
            return varint(buffer, at: &p).map { FixedKey(tag: KeyTag.uint, bits: $0) }
        case (RecordTag.int.rawValue, KeyTag.uint):
            guard let value = varint(buffer, at: &p).map(ZigZag.decode), value >= 0 else { return nil }
            return FixedKey(tag: KeyTag.uint, bits: UInt64(value))
        case (RecordTag.uint.rawValue, KeyTag.int):
            guard let value = varint(buffer, at: &p), value <= UInt64(Int64.max) else { return nil }
            return FixedKey(tag: KeyTag.int, bits: Key.orderedBits(Int64(value)))
        case (RecordTag.double.rawValue, KeyTag.double):
            return littleEndian(UInt64.self).map { FixedKey(tag: KeyTag.double, bits: Key.orderedBits(Double(bitPattern: $0))) }
        case (RecordTag.float.rawValue, KeyTag.double):
            return littleEndian(UInt32.self).map { FixedKey(tag: KeyTag.double, bits: Key.orderedBits(Double(Float(bitPattern: $0)))) }
        case (RecordTag.referenceDate.rawValue, KeyTag.date):
            return littleEndian(UInt64.self).map {
                FixedKey(tag: KeyTag.date, bits: Key.orderedBits(Date(timeIntervalSinceReferenceDate: Double(bitPattern: $0)).timeIntervalSince1970))
            }
        case (RecordTag.date.rawValue, KeyTag.date), (RecordTag.double.rawValue, KeyTag.date):
            return littleEndian(UInt64.self).map {
                FixedKey(tag: KeyTag.date, bits: Key.orderedBits(Date(timeIntervalSince1970: Double(bitPattern: $0)).timeIntervalSince1970))
            }
        case (RecordTag.bool.rawValue, KeyTag.falseValue), (RecordTag.bool.rawValue, KeyTag.trueValue):
            guard p < buffer.count else { return nil }
            return FixedKey(tag: buffer[p] != 0 ? KeyTag.trueValue : KeyTag.falseValue, bits: 0)
        default:
            return nil
        }
    }
}
