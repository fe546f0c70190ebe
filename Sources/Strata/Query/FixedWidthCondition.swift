import StrataEngine

/// The key of a number, Boolean or date (`Key`'s encoding: a tag, then for numbers and
/// dates 8 big-endian bytes) held as two integers that order as the key's bytes do: the tag decides the
/// length, so comparing (tag, bits) is comparing the bytes.
struct FixedKey: Equatable {
    var tag: UInt8
    /// The 8 bytes after the tag as one number; 0 for the one-byte keys (nil, Booleans).
    var bits: UInt64

    /// Whether keys with `tag` are the tag alone.
    static func isOneByte(_ tag: UInt8) -> Bool {
        tag == KeyTag.null || tag == KeyTag.falseValue || tag == KeyTag.trueValue
    }

    /// Whether keys with `tag` are the tag and 8 bytes: numbers, and dates (their seconds
    /// since 1970 as a Double's ordered bits).
    static func isEightByte(_ tag: UInt8) -> Bool {
        tag == KeyTag.int || tag == KeyTag.uint || tag == KeyTag.double || tag == KeyTag.date
    }

    /// Its bytes, as `Key` writes them, into `buffer` (at least 9 bytes); their count.
    func write(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        buffer[0] = tag
        if Self.isOneByte(tag) { return 1 }
        buffer.storeBytes(of: bits.bigEndian, toByteOffset: 1, as: UInt64.self)
        return 9
    }
}

/// A range bound or point as a `FixedKey`: either the key itself or the position just after
/// it (`KeyRange.afterElements`: the key then 0xFF, above the key and below every greater
/// one, which is how `<=` and `>` bounds are written).
struct FixedBound {
    let key: FixedKey
    let isAfterKey: Bool

    /// Nil when `bytes` is not a number's, Boolean's or date's key, or that key then 0xFF.
    init?(_ bytes: [UInt8]) {
        guard let tag = bytes.first else { return nil }
        let length = FixedKey.isOneByte(tag) ? 1 : FixedKey.isEightByte(tag) ? 9 : 0
        guard length > 0, bytes.count == length || (bytes.count == length + 1 && bytes[length] == 0xFF) else { return nil }
        var bits: UInt64 = 0
        if length == 9 { for byte in bytes[1 ..< 9] { bits = bits << 8 | UInt64(byte) } }
        key = FixedKey(tag: tag, bits: bits)
        isAfterKey = bytes.count > length
    }

    /// How a stored value's key compares with this bound: -1, 0 or 1.
    @inline(__always)
    func compare(_ value: FixedKey) -> Int {
        if value.tag != key.tag { return value.tag < key.tag ? -1 : 1 }
        if value.bits != key.bits { return value.bits < key.bits ? -1 : 1 }
        return isAfterKey ? -1 : 0
    }
}

/// A condition on a number, Boolean or date field compiled once per query into comparisons of
/// integers: a trivial value, so checking it on a record costs no reference counting, no
/// `memcmp`, no key built. What `RecordPrefilter` checks a scanned record's bytes with.
struct FixedWidthCondition {
    let field: UInt32
    /// The key tag the stored value is converted to before comparing.
    let kind: UInt8
    private let lower: FixedBound?, lowerIncluded: Bool
    private let upper: FixedBound?, upperIncluded: Bool
    /// The condition's values in the shared point list, when it is `==` or `IN`.
    private let points: Range<Int>?
    /// How a value's key is tested: by `lower`/`upper` or `points`, or, for a range on
    /// numbers or dates (keys of one tag and 8 bytes), by its bits alone.
    private let test: Test
    /// With `.bitsRange`: the stored value's key bits must be in `low ... low + span`, one
    /// unsigned comparison.
    private let low: UInt64, span: UInt64

    private enum Test: UInt8 {
        case bitsRange
        /// A range no value is in.
        case emptyRange
        /// By `points`, or by `lower` and `upper`.
        case keys
    }

    /// Nil when a bound is not a plain number, Boolean or date key; points are appended to
    /// `pointList`.
    init?(field: UInt32, bounds: FieldBounds, kind: UInt8, pointList: inout [FixedKey]) {
        guard kind != KeyTag.string else { return nil }
        (self.field, self.kind) = (field, kind)
        // nil: not a plain key; a nil bound: unbounded.
        func bound(_ bound: KeyRange.Bound) -> (bound: FixedBound?, included: Bool)? {
            switch bound {
            case .unbounded: return (nil, true)
            case .included(let bytes): return FixedBound(bytes).map { ($0, true) }
            case .excluded(let bytes): return FixedBound(bytes).map { ($0, false) }
            }
        }
        switch bounds {
        case .range(let lowerBound, let upperBound):
            guard let low = bound(lowerBound), let high = bound(upperBound) else { return nil }
            (lower, lowerIncluded, upper, upperIncluded) = (low.bound, low.included, high.bound, high.included)
            points = nil
            switch FixedKey.isEightByte(kind) ? Self.bitsRange(lower: low, upper: high, kind: kind) : nil {
            case (let low, let span?)?: (test, self.low, self.span) = (.bitsRange, low, span)
            case (_, nil)?: (test, self.low, self.span) = (.emptyRange, 0, 0)
            case nil: (test, self.low, self.span) = (.keys, 0, 0)
            }
        case .points(let keys):
            let parsed = keys.compactMap(FixedBound.init)
            guard parsed.count == keys.count, parsed.allSatisfy({ !$0.isAfterKey }) else { return nil }
            (lower, lowerIncluded, upper, upperIncluded) = (nil, true, nil, true)
            points = pointList.count ..< pointList.count + parsed.count
            pointList.append(contentsOf: parsed.map(\.key))
            (test, self.low, self.span) = (.keys, 0, 0)
        }
    }

    /// The key bits a stored value converted to `kind` must have to lie within the bounds,
    /// as `low` and the span above it; a nil span when none does. (A stored value's key has
    /// the tag `kind`, as the bounds' keys do, so the bounds compare by bits alone; a bound
    /// just after a key, `isAfterKey`, admits that key's bits from below and not from above.)
    private static func bitsRange(lower: (bound: FixedBound?, included: Bool), upper: (bound: FixedBound?, included: Bool),
                                  kind: UInt8) -> (low: UInt64, span: UInt64?)? {
        var low: UInt64 = 0, high = UInt64.max
        if let bound = lower.bound {
            guard bound.key.tag == kind else { return nil }
            if lower.included && !bound.isAfterKey {
                low = bound.key.bits
            } else {
                guard bound.key.bits < .max else { return (0, nil) }
                low = bound.key.bits + 1
            }
        }
        if let bound = upper.bound {
            guard bound.key.tag == kind else { return nil }
            if upper.included || bound.isAfterKey {
                high = bound.key.bits
            } else {
                guard bound.key.bits > 0 else { return (0, nil) }
                high = bound.key.bits - 1
            }
        }
        return low <= high ? (low, high - low) : (0, nil)
    }

    /// For a range on signed integers, the key bits a stored integer's must lie in (`low
    /// ... low + span`, one unsigned comparison); nil for every other condition.
    var integerBits: (low: UInt64, span: UInt64)? {
        test == .bitsRange && kind == KeyTag.int ? (low, span) : nil
    }

    /// Whether the value at `position` of `record` meets `condition`; nil when its stored
    /// type cannot be converted to `kind` exactly, or the bytes are malformed (decoding
    /// decides then).
    ///
    /// A range on an integer stored as a signed integer, the common case, is checked in line;
    /// the rest in a call. The condition is read where it lies, through a pointer: called as a
    /// method on the array's element, it was copied to the stack (96 bytes) for every record,
    /// to be passed to the out-of-line case.
    @inline(__always)
    static func isMet(_ condition: UnsafePointer<FixedWidthCondition>, in record: UnsafeRawBufferPointer, at position: Int,
                      points pointList: UnsafeBufferPointer<FixedKey>) -> Bool? {
        if condition.pointee.test == .bitsRange, condition.pointee.kind == KeyTag.int, record[position] == RecordTag.int.rawValue {
            var p = position + 1
            guard let stored = RecordBytes.varint(record, at: &p) else { return nil }
            return Key.orderedBits(ZigZag.decode(stored)) &- condition.pointee.low <= condition.pointee.span
        }
        return isMetByKey(condition, in: record, at: position, points: pointList)
    }

    /// `isMet` through the value's key, for every type and condition.
    @inline(never)
    private static func isMetByKey(_ condition: UnsafePointer<FixedWidthCondition>, in record: UnsafeRawBufferPointer, at position: Int,
                                   points pointList: UnsafeBufferPointer<FixedKey>) -> Bool? {
        condition.pointee.isMetByKey(record, at: position, points: pointList)
    }

    private func isMetByKey(_ record: UnsafeRawBufferPointer, at position: Int, points pointList: UnsafeBufferPointer<FixedKey>) -> Bool? {
        guard let value = RecordBytes.fixedKey(record, at: position, as: kind) else { return nil }
        // A date's key holds its seconds since 1970, rounded: dates a few hundred nanoseconds
        // apart can share one. Keys that differ order as the dates do (the rounding is
        // monotonic), but a key equal to a bound's cannot tell: decoding decides.
        if kind == KeyTag.date, isAtABound(value, pointList) { return nil }
        switch test {
        case .bitsRange: return value.bits &- low <= span
        case .emptyRange: return false
        case .keys: break
        }
        if let points {
            for i in points where pointList[i] == value { return true }
            return false
        }
        if let lower, lower.compare(value) < (lowerIncluded ? 0 : 1) { return false }
        if let upper, upper.compare(value) > (upperIncluded ? 0 : -1) { return false }
        return true
    }

    /// Whether `value` is the key of a bound or point.
    private func isAtABound(_ value: FixedKey, _ pointList: UnsafeBufferPointer<FixedKey>) -> Bool {
        if let points { return points.contains { pointList[$0] == value } }
        return lower?.key == value || upper?.key == value
    }
}
