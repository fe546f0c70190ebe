import Foundation
import StrataEngine

/// A record decoded without its Swift type, through the collection's field table: what
/// `storedump` prints. Struct fields keep their stored order.
public indirect enum RecordValue: Sendable, Equatable {
    /// A named field of an object or map, in stored order.
    public struct Field: Sendable, Equatable {
        /// The field's name.
        public var name: String
        /// Its value.
        public var value: RecordValue

        /// A field `name` holding `value`.
        ///
        /// - Parameters:
        ///   - name: The field's name.
        ///   - value: Its value.
        public init(name: String, value: RecordValue) {
            self.name = name
            self.value = value
        }
    }

    case null
    case bool(Bool)
    case int(Int64)
    case uint(UInt64)
    case double(Double)
    case string(String)
    case bytes(Data)
    case date(Date)
    case uuid(UUID)
    case url(String)
    case decimal(String)
    case object([Field])
    case array([RecordValue])
    case map([Field])

    /// Decodes a record; throws `RecordError.corruptRecord` on malformed bytes.
    ///
    /// - Parameters:
    ///   - bytes: A stored record.
    ///   - fields: The collection's field table.
    ///   - collection: The collection's name, for errors.
    /// - Returns: The record as a tree of values, every field kept (none needs a model type).
    /// - Throws: `RecordError.corruptRecord` naming what is malformed.
    public static func decode(_ bytes: [UInt8], fields: FieldTable, collection: String) throws -> RecordValue {
        try bytes.withUnsafeBytes { buffer in
            let context = DecodingContext(buffer: buffer, fields: fields, collection: collection)
            var position = 0
            let value = try read(context, &position, depth: 0)
            guard position == buffer.count else { throw context.corrupt("\(buffer.count - position) bytes after the record") }
            return value
        }
    }

    private static func read(_ c: DecodingContext, _ p: inout Int, depth: Int) throws -> RecordValue {
        let tag = try c.tag(at: p)
        let start = p
        p += 1
        switch tag {
        case .null: return .null
        case .bool:
            p = try c.skip(at: start)
            return .bool(c.buffer[start + 1] != 0)
        case .int: return .int(ZigZag.decode(try c.varint(at: &p)))
        case .uint: return .uint(try c.varint(at: &p))
        case .double, .date, .referenceDate:
            let seconds = Double(bitPattern: try c.fixed(UInt64.self, at: p))
            p += 8
            switch tag {
            case .double: return .double(seconds)
            case .date: return .date(Date(timeIntervalSince1970: seconds))
            default: return .date(Date(timeIntervalSinceReferenceDate: seconds))
            }
        case .float:
            let bits = try c.fixed(UInt32.self, at: p)
            p += 4
            return .double(Double(Float(bitPattern: bits)))
        case .uuid:
            p = try c.skip(at: start)
            var uuid = UUID().uuid
            withUnsafeMutableBytes(of: &uuid) { $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: c.buffer[start + 1 ..< start + 17])) }
            return .uuid(UUID(uuid: uuid))
        case .string, .url, .decimal:
            let (text, end) = try c.string(at: p)
            p = end
            return tag == .string ? .string(text) : tag == .url ? .url(text) : .decimal(text)
        case .bytes:
            let (bytes, end) = try c.lengthPrefixed(at: p)
            p = end
            return .bytes(Data(bytes))
        case .keyed:
            try c.checkDepth(depth + 1)
            let count = try c.varint(at: &p)
            var fields: [Field] = []
            for _ in 0 ..< count {
                let id = try c.varint(at: &p)
                guard let name = c.fields.name(of: UInt32(truncatingIfNeeded: id)) else {
                    throw c.corrupt("field id \(id) is not in the collection's field table")
                }
                fields.append(Field(name: name, value: try read(c, &p, depth: depth + 1)))
            }
            return .object(fields)
        case .unkeyed:
            try c.checkDepth(depth + 1)
            let count = try c.varint(at: &p)
            var elements: [RecordValue] = []
            for _ in 0 ..< count { elements.append(try read(c, &p, depth: depth + 1)) }
            return .array(elements)
        case .map:
            try c.checkDepth(depth + 1)
            let count = try c.varint(at: &p)
            var entries: [Field] = []
            for _ in 0 ..< count {
                let (key, end) = try c.string(at: p)
                p = end
                entries.append(Field(name: key, value: try read(c, &p, depth: depth + 1)))
            }
            return .map(entries)
        }
    }

    /// The stored type's name, as `storedump collections` shows it.
    public var typeName: String {
        switch self {
        case .null: "nil"
        case .bool: "Bool"
        case .int: "Int"
        case .uint: "UInt"
        case .double: "Double"
        case .string: "String"
        case .bytes: "Data"
        case .date: "Date"
        case .uuid: "UUID"
        case .url: "URL"
        case .decimal: "Decimal"
        case .object: "struct"
        case .array: "array"
        case .map: "dictionary"
        }
    }

    /// The value of a dotted property path (`address.city`), or nil when absent.
    ///
    /// - Parameter path: Field names joined by dots.
    /// - Returns: The value there, or nil when a step is absent or not a struct.
    public func value(at path: String) -> RecordValue? {
        value(atPath: path.split(separator: ".").map(String.init))
    }

    /// The value at a property path already split into names.
    ///
    /// - Parameter path: Field names, outermost first.
    /// - Returns: The value there, or nil when a step is absent or not a struct.
    public func value(atPath path: [String]) -> RecordValue? {
        var current = self
        for part in path {
            guard case .object(let fields) = current, let field = fields.first(where: { $0.name == part }) else { return nil }
            current = field.value
        }
        return current
    }

    /// Appends this value to a key as Swift would encode the same field (for index checks);
    /// false for values keys cannot hold (structs, arrays).
    func appendKey(to key: inout Key) -> Bool {
        switch self {
        case .null: key.append(Optional<Int>.none)
        case .bool(let v): key.append(v)
        case .int(let v): key.append(v)
        case .uint(let v): key.append(v)
        case .double(let v): key.append(v)
        case .string(let v), .url(let v), .decimal(let v): key.append(v)
        case .bytes(let v): key.append(v)
        case .date(let v): key.append(v)
        case .uuid(let v): key.append(v)
        case .object, .array, .map: return false
        }
        return true
    }

    /// JSON text, fields in stored order; Data as base64, dates as ISO 8601. For reading by
    /// people and JSON tools; `typedJSON` reads back exactly.
    public var json: String {
        var out = ""
        writeJSON(to: &out, typed: false)
        return out
    }

    /// The value as typed JSON (see `TypedJSONParser`): JSON's own types where they carry
    /// the value exactly, one-key `$` objects for the rest.
    public var typedJSON: String {
        var out = ""
        writeJSON(to: &out, typed: true)
        return out
    }

    /// Appends what `json` returns to `out`, for writers that embed values in a larger
    /// JSON document without a string per value.
    ///
    /// - Parameter out: The text to append to.
    public func writeJSON(to out: inout String) {
        writeJSON(to: &out, typed: false)
    }

    /// One writer for both spellings: they differ only in the values JSON cannot carry.
    private func writeJSON(to out: inout String, typed: Bool) {
        switch self {
        case .null: out += "null"
        case .bool(let v): out += v ? "true" : "false"
        case .int(let v): out += String(v)
        case .uint(let v): out += typed ? "{\"$uint\":\"\(v)\"}" : String(v)
        case .double(let v):
            if v.isFinite {
                let text = "\(v)"
                out += !typed || text.contains(where: { $0 == "." || $0 == "e" || $0 == "E" }) ? text : text + ".0"
            } else if typed {
                out += "{\"$double\":\"\(v.isNaN ? "nan" : v < 0 ? "-inf" : "inf")\"}"
            } else {
                out += "\"\(v)\""
            }
        case .string(let v): Self.quote(v, into: &out)
        case .url(let v): Self.wrap(typed ? "$url" : nil, v, into: &out)
        case .decimal(let v): if typed { Self.wrap("$decimal", v, into: &out) } else { out += v }
        case .bytes(let v): Self.wrap(typed ? "$bytes" : nil, v.base64EncodedString(), into: &out)
        case .date(let v):
            if typed {
                out += "{\"$date\":"
                RecordValue.double(v.timeIntervalSinceReferenceDate).writeJSON(to: &out, typed: true)
                out += "}"
            } else {
                Self.quote(InstantText.format(v), into: &out)
            }
        case .uuid(let v): Self.wrap(typed ? "$uuid" : nil, v.uuidString, into: &out)
        case .object(let fields): Self.writeFields(fields, into: &out, typed: typed)
        case .map(let fields):
            if typed { out += "{\"$map\":" }
            Self.writeFields(fields, into: &out, typed: typed)
            if typed { out += "}" }
        case .array(let elements):
            out += "["
            for (i, element) in elements.enumerated() {
                if i > 0 { out += "," }
                element.writeJSON(to: &out, typed: typed)
            }
            out += "]"
        }
    }

    /// A quoted string, inside `{"key": …}` when a typed key is given.
    private static func wrap(_ key: String?, _ text: String, into out: inout String) {
        if let key { out += "{\"\(key)\":" }
        quote(text, into: &out)
        if key != nil { out += "}" }
    }

    private static func writeFields(_ fields: [Field], into out: inout String, typed: Bool) {
        out += "{"
        for (i, field) in fields.enumerated() {
            if i > 0 { out += "," }
            quote(field.name, into: &out)
            out += ":"
            field.value.writeJSON(to: &out, typed: typed)
        }
        out += "}"
    }

    static func quote(_ s: String, into out: inout String) {
        out += "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20: out += String(format: "\\u%04x", scalar.value)
            default: out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
    }
}
