/// A custom column type (the article's `ARRepresentationProtocol`): how a value is stored —
/// as any `Codable` value, usually a string or number — and restored. Declaring the
/// conformance is all a record needs to use the type as a field.
///
/// ```swift
/// struct RGBColor: RecordRepresentable, Equatable {
///     var red, green, blue: UInt8
///     var storedValue: String { String(format: "#%02X%02X%02X", red, green, blue) }   // "#FF8800"
///     init(storedValue: String) throws { ... parse, or throw }
/// }
/// ```
public protocol RecordRepresentable: Codable {
    associatedtype StoredValue: Codable
    /// What is written to the file.
    var storedValue: StoredValue { get }
    /// Restores the value; throw when `storedValue` cannot be one (the read then fails
    /// with that error, naming the field).
    ///
    /// - Parameter storedValue: The value read from the file.
    /// - Throws: An error saying why the value is not valid.
    init(storedValue: StoredValue) throws
}

extension RecordRepresentable {
    /// Encodes `storedValue` in the value's place.
    /// - Parameter encoder: The encoder.
    /// - Throws: What encoding `storedValue` throws.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(storedValue)
    }

    /// Decodes a `StoredValue` and restores the value from it.
    /// - Parameter decoder: The decoder.
    /// - Throws: What decoding the stored value throws, or `init(storedValue:)`'s error.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        try self.init(storedValue: try container.decode(StoredValue.self))
    }
}
