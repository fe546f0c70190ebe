import Foundation
import StrataEngine

/// The JSON spelling of every inspection report (`storedump … --json`, Studio's `/api/…`):
/// keys sorted, dates as `InstantText` writes them (ISO 8601 in UTC with `Z`, proleptic
/// Gregorian, milliseconds), slashes unescaped.
public enum InspectionJSON {
    /// - Parameters:
    ///   - value: the report.
    ///   - pretty: indented, for people; compact otherwise.
    /// - Returns: the JSON text.
    /// - Throws: `EncodingError` when a value cannot be written as JSON (a NaN double).
    public static func encode<T: Encodable>(_ value: T, pretty: Bool = false) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = pretty ? [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes] : [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(InstantText.format(date))
        }
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }
}
