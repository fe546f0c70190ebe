/// A property that is never stored (the iActiveRecord article's `ignore_fields`): it is left
/// out when the record is written and reads back as its type's empty value.
///
/// ```swift
/// struct User: ActiveRecord {
///     ...
///     @Ignored var avatarCache: Data = Data()
/// }
/// ```
@propertyWrapper
public struct Ignored<Value: EmptyInitializable>: Codable {
    /// The value, held in memory only.
    public var wrappedValue: Value
    /// Wraps `wrappedValue`.
    ///
    /// - Parameter wrappedValue: The initial value.
    public init(wrappedValue: Value) { self.wrappedValue = wrappedValue }
    // Reached only when an `Ignored` value is coded outside a keyed container (a top-level
    // value or an array element); keyed containers use the overloads below and skip it.
    /// The initial value `Value()`: an ignored field is never stored.
    /// - Parameter decoder: Not read.
    public init(from decoder: any Decoder) throws { wrappedValue = Value() }
    /// Writes nothing: an ignored field is never stored.
    /// - Parameter encoder: Not written to.
    public func encode(to encoder: any Encoder) throws {}
}

extension Ignored: Sendable where Value: Sendable {}
extension Ignored: Equatable where Value: Equatable {}

/// Types an ignored property can hold: they have an empty value to read back as.
public protocol EmptyInitializable { init() }

extension String: EmptyInitializable {}
extension Int: EmptyInitializable {}
extension Int64: EmptyInitializable {}
extension Double: EmptyInitializable {}
extension Bool: EmptyInitializable {}
extension Array: EmptyInitializable {}
extension Dictionary: EmptyInitializable {}
extension Set: EmptyInitializable {}
extension Optional: EmptyInitializable { public init() { self = .none } }

// Synthesized Codable calls `encode(_:forKey:)` / `decode(_:forKey:)` with the property's
// type; these overloads are more specific than the generic ones, so the field is skipped.
extension KeyedEncodingContainer {
    /// Writes nothing: ignored fields are never stored.
    ///
    /// - Parameters:
    ///   - value: The ignored value.
    ///   - key: The property's key.
    /// - Throws: Nothing.
    public mutating func encode<V>(_ value: Ignored<V>, forKey key: Key) throws {}
}

extension KeyedDecodingContainer {
    /// The declared initial value: ignored fields are never stored.
    ///
    /// - Parameters:
    ///   - type: The wrapper's type.
    ///   - key: The property's key.
    /// - Returns: The wrapper holding `V()`.
    /// - Throws: Nothing.
    public func decode<V>(_ type: Ignored<V>.Type, forKey key: Key) throws -> Ignored<V> {
        Ignored(wrappedValue: V())
    }
}
