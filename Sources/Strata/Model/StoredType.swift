import Foundation

/// The type of a collection's top-level field as the catalog records it (FORMAT.md,
/// "Schema catalog"). Several record tags map to one stored type where the decoder converts
/// between them: signed and unsigned integers of every width are `integer`, `Float` and
/// `Double` are `floating`, both date encodings are `date`.
///
/// A write whose field has another stored type than the catalog's fails with
/// `StorageError.schemaMismatch` and changes nothing; `nil` (an optional left empty) is
/// compatible with every type.
public enum StoredType: String, Codable, Sendable, CaseIterable {
    case integer, floating, bool, string, bytes, date, uuid, url, decimal
    case `struct`, array, dictionary

    /// The stored type of a value with this tag; nil for `nil`.
    init?(_ tag: RecordTag) {
        switch tag {
        case .null: return nil
        case .bool: self = .bool
        case .int, .uint: self = .integer
        case .double, .float: self = .floating
        case .string: self = .string
        case .bytes: self = .bytes
        case .date, .referenceDate: self = .date
        case .uuid: self = .uuid
        case .url: self = .url
        case .decimal: self = .decimal
        case .keyed: self = .struct
        case .unkeyed: self = .array
        case .map: self = .dictionary
        }
    }
}

extension DecodingContext {
    /// Visits the field id and stored type (nil for `nil`) of each top-level field of the
    /// record in the buffer, without decoding values.
    func forEachTopLevelField(_ body: (UInt32, StoredType?) throws -> Void) throws {
        guard try tag(at: 0) == .keyed else { return }
        var p = 1
        let count = try varint(at: &p)
        for _ in 0 ..< count {
            let id = try varint(at: &p)
            guard id <= UInt64(UInt32.max) else { throw corrupt("field id \(id) is out of range") }
            try body(UInt32(id), StoredType(try tag(at: p)))
            p = try skip(at: p)
        }
    }
}
