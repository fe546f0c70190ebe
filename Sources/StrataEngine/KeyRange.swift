/// A range of keys in byte order, for cursors and scans.
///
/// ```swift
/// try tx.scan("users", in: .prefix(Key("user").bytes)) { key, value in ...; return true }
/// try tx.scan("events", in: KeyRange(from: Key(100).bytes, to: Key(200).bytes)) { ... }
/// ```
public struct KeyRange: Sendable, Equatable {
    /// One end of a range.
    public enum Bound: Sendable, Equatable {
        /// No limit on this side.
        case unbounded
        /// Up to and including this key.
        case included([UInt8])
        /// Up to but not including this key.
        case excluded([UInt8])
    }

    /// The smallest keys the range admits.
    public var lower: Bound
    /// The largest keys the range admits.
    public var upper: Bound

    /// The keys between `lower` and `upper`; every key by default.
    ///
    /// - Parameters:
    ///   - lower: The lower bound.
    ///   - upper: The upper bound.
    public init(lower: Bound = .unbounded, upper: Bound = .unbounded) {
        self.lower = lower
        self.upper = upper
    }

    /// Every key.
    public static let all = KeyRange()

    /// `lower <= key < upper`.
    ///
    /// - Parameters:
    ///   - lower: The smallest key, included.
    ///   - upper: The bound above, excluded.
    public init(from lower: [UInt8], to upper: [UInt8]) {
        self.init(lower: .included(lower), upper: .excluded(upper))
    }

    /// `lower <= key <= upper`.
    ///
    /// - Parameters:
    ///   - lower: The smallest key, included.
    ///   - upper: The largest key, included.
    public init(from lower: [UInt8], through upper: [UInt8]) {
        self.init(lower: .included(lower), upper: .included(upper))
    }

    /// Every key whose leading elements are exactly the complete elements encoded in
    /// `elements`: `[elements, elements ++ FF)`. After a complete element comes the end or
    /// another element's tag, and every tag is below 0xFF; a string that merely continues
    /// (`"a"` vs `"a\0b"`, an escaped NUL `00 FF`) sorts at or above `elements ++ FF`. A
    /// byte-prefix range (`prefix(_:)`) would wrongly include those.
    ///
    /// ```swift
    /// KeyRange.startingWith(elements: Key("a").bytes)   // ("a", 1), ("a", 2); not ("a\0b", 1)
    /// ```
    ///
    /// - Parameter elements: Encoded complete elements.
    /// - Returns: The range.
    public static func startingWith(elements: [UInt8]) -> KeyRange {
        KeyRange(lower: .included(elements), upper: .excluded(afterElements(elements)))
    }

    /// The smallest key above every key that starts with the complete elements `elements`.
    ///
    /// - Parameter elements: Encoded complete elements.
    /// - Returns: `elements` followed by 0xFF.
    public static func afterElements(_ elements: [UInt8]) -> [UInt8] { elements + [0xFF] }

    /// Every key that starts with the bytes `prefix` (for a typed prefix, whole elements,
    /// see `startingWith(elements:)`).
    ///
    /// - Parameter prefix: The bytes every key in the range starts with.
    /// - Returns: The range.
    public static func prefix(_ prefix: [UInt8]) -> KeyRange {
        guard let successor = prefixSuccessor(prefix) else { return KeyRange(lower: .included(prefix)) }
        return KeyRange(lower: .included(prefix), upper: .excluded(successor))
    }

    /// The smallest byte string greater than every string starting with `prefix`, or nil
    /// when there is none (the prefix is empty or all 0xFF).
    static func prefixSuccessor(_ prefix: [UInt8]) -> [UInt8]? {
        var bytes = prefix
        while let last = bytes.last {
            if last < 0xFF {
                bytes[bytes.count - 1] = last + 1
                return bytes
            }
            bytes.removeLast()
        }
        return nil
    }

    /// Whether `key` is not above the upper bound.
    @inline(__always)
    func isWithinUpper(_ key: UnsafeRawBufferPointer) -> Bool {
        switch upper {
        case .unbounded: return true
        case .included(let bound): return compareBytes(bound, key) >= 0
        case .excluded(let bound): return compareBytes(bound, key) > 0
        }
    }

    /// Whether `key` is not below the lower bound.
    @inline(__always)
    func isWithinLower(_ key: UnsafeRawBufferPointer) -> Bool {
        switch lower {
        case .unbounded: return true
        case .included(let bound): return compareBytes(bound, key) <= 0
        case .excluded(let bound): return compareBytes(bound, key) < 0
        }
    }

    /// Whether `key` lies in the range.
    ///
    /// - Parameter key: An encoded key.
    /// - Returns: True when it is within both bounds.
    public func contains(_ key: [UInt8]) -> Bool {
        key.withUnsafeBytes { isWithinLower($0) && isWithinUpper($0) }
    }
}
