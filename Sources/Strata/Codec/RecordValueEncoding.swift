import Foundation

extension RecordValue {
    /// The record bytes of this value (FORMAT.md, section 15), interning struct field names
    /// in `fields`: how an imported record is stored. Dates are written as the Codable path
    /// writes them (tag 15, exact), floating values as `Double`.
    func encoded(fields: inout FieldTable) -> [UInt8] {
        var bytes: [UInt8] = []
        append(to: &bytes, fields: &fields)
        return bytes
    }

    private func append(to bytes: inout [UInt8], fields: inout FieldTable) {
        switch self {
        case .null: bytes.appendTag(.null)
        case .bool(let v): bytes.appendBool(v)
        case .int(let v): bytes.appendInt(v)
        case .uint(let v): bytes.appendUInt(v)
        case .double(let v): bytes.appendDouble(v)
        case .string(let v): bytes.appendText(v)
        case .bytes(let v):
            bytes.appendTag(.bytes)
            bytes.appendVarint(UInt64(v.count))
            bytes.append(contentsOf: v)
        case .date(let v):
            bytes.appendTag(.referenceDate)
            bytes.appendFixed(v.timeIntervalSinceReferenceDate.bitPattern)
        case .uuid(let v):
            bytes.appendTag(.uuid)
            withUnsafeBytes(of: v.uuid) { bytes.append(contentsOf: $0) }
        case .url(let v):
            bytes.appendTag(.url)
            bytes.appendString(v)
        case .decimal(let v):
            bytes.appendTag(.decimal)
            bytes.appendString(v)
        case .object(let entries):
            bytes.appendTag(.keyed)
            bytes.appendVarint(UInt64(entries.count))
            for entry in entries {
                bytes.appendVarint(UInt64(fields.intern(entry.name)))
                entry.value.append(to: &bytes, fields: &fields)
            }
        case .array(let elements):
            bytes.appendTag(.unkeyed)
            bytes.appendVarint(UInt64(elements.count))
            for element in elements { element.append(to: &bytes, fields: &fields) }
        case .map(let entries):
            bytes.appendTag(.map)
            bytes.appendVarint(UInt64(entries.count))
            for entry in entries {
                bytes.appendString(entry.name)
                entry.value.append(to: &bytes, fields: &fields)
            }
        }
    }
}
