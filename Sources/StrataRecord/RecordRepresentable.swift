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
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(storedValue)
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        try self.init(storedValue: try container.decode(StoredValue.self))
    }
}
