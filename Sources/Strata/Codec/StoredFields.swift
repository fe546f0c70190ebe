import Foundation

/// A model's top-level fields as stored bytes, by field name: what the record layers compare
/// to find changed fields and merge concurrent edits (ActiveRecord's dirty tracking).
///
/// Field values can hold nested structs whose field ids point into `table`; keep one table
/// per model type (`FieldTable` only grows, so ids stay valid) and split every snapshot of
/// that type with it.
public struct StoredFields: Sendable, Equatable {
    /// Field name → the field's encoded value (type tag and payload), in stored order.
    public private(set) var names: [String] = []
    private var values: [String: [UInt8]] = [:]

    /// Encodes `model` with `table` (adding new names to it) and splits the record.
    ///
    /// - Parameters:
    ///   - model: The value to split.
    ///   - table: The collection's field table; new names are added.
    /// - Throws: `RecordError.unencodable` for a value the format cannot hold.
    public init<T: Encodable>(encoding model: T, table: inout FieldTable) throws {
        let record = try RecordEncoder.encode(model, fields: &table, collection: String(describing: T.self))
        try record.withUnsafeBytes { buffer in
            let context = DecodingContext(buffer: buffer, fields: table, collection: String(describing: T.self))
            guard try context.tag(at: 0) == .keyed else { return }
            var p = 1
            for _ in 0 ..< (try context.varint(at: &p)) {
                let id = UInt32(truncatingIfNeeded: try context.varint(at: &p))
                let end = try context.skip(at: p)
                if let name = table.name(of: id) {
                    names.append(name)
                    values[name] = Array(buffer[p ..< end])
                }
                p = end
            }
        }
    }

    /// The stored bytes of the field `name`, if the record has it.
    ///
    /// - Parameter name: A top-level field name.
    /// - Returns: The field's encoded value (tag and payload), or nil.
    public subscript(name: String) -> [UInt8]? { values[name] }

    /// Names whose stored value differs from `other`'s (present in one only counts).
    ///
    /// - Parameter other: The fields to compare with.
    /// - Returns: The names of the fields that differ, in this record's order, then `other`'s.
    public func changed(from other: StoredFields) -> [String] {
        var names = self.names.filter { values[$0] != other.values[$0] }
        names += other.names.filter { values[$0] == nil }
        return names
    }

    /// Sets `names` to `source`'s values (removing those `source` lacks).
    ///
    /// - Parameters:
    ///   - names: The fields to copy.
    ///   - source: Where their values come from.
    public mutating func take(_ names: [String], from source: StoredFields) {
        for name in names {
            if let value = source.values[name] {
                if values[name] == nil { self.names.append(name) }
                values[name] = value
            } else {
                values[name] = nil
                self.names.removeAll { $0 == name }
            }
        }
    }

    /// Rebuilds the record and decodes it as `T`, using `table` (the one the fields came from).
    ///
    /// - Parameters:
    ///   - type: The type to decode.
    ///   - table: The field table the fields were encoded with.
    /// - Returns: The decoded value.
    /// - Throws: `RecordError` as `RecordDecoder.decode` does.
    public func decode<T: Decodable>(_ type: T.Type, table: FieldTable) throws -> T {
        var record: [UInt8] = []
        record.appendTag(.keyed)
        record.appendVarint(UInt64(names.count))
        for name in names {
            guard let id = table.id(of: name), let value = values[name] else { continue }
            record.appendVarint(UInt64(id))
            record.append(contentsOf: value)
        }
        return try RecordDecoder.decode(type, from: record, fields: table, collection: String(describing: T.self))
    }
}
