import Foundation

/// The JSON spelling of every inspection report (`storedump … --json`, Studio's `/api/…`):
/// keys sorted, dates in ISO 8601 with their time zone, slashes unescaped.
public enum InspectionJSON {
    /// - Parameter pretty: indented, for people; compact otherwise.
    /// - Throws: `EncodingError` when a value cannot be written as JSON (a NaN double).
    public static func encode<T: Encodable>(_ value: T, pretty: Bool = false) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = pretty ? [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes] : [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }
}
