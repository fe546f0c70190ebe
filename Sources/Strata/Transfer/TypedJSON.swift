import StrataEngine
import Foundation

/// `RecordValue` as JSON that reads back to the same value: what `storedump export` writes
/// and `storedump import` reads. JSON's own types carry what they can — null, true/false,
/// strings, arrays, objects (structs, fields in stored order) and numbers (an integer has no
/// `.` or exponent; a floating value always has one, `5.0`) — and one-key objects carry the
/// rest:
///
/// | value | JSON |
/// | --- | --- |
/// | unsigned integer | `{"$uint":"18446744073709551615"}` |
/// | non-finite floating | `{"$double":"nan"}`, `"inf"`, `"-inf"` |
/// | bytes | `{"$bytes":"<base64>"}` |
/// | date | `{"$date":721865600.5}` (seconds since 2001-01-01, Foundation's reference date, exact) |
/// | UUID, URL, Decimal | `{"$uuid":"…"}`, `{"$url":"…"}`, `{"$decimal":"…"}` |
/// | dictionary | `{"$map":{"key":value,…}}` |
///
/// A struct whose only field is named like one of these (`$date`…) cannot be told apart;
/// stored names never start with `$` in models Strata writes from Swift properties.
extension RecordValue {
    /// Parses typed JSON.
    /// - Throws: `TypedJSONError` naming the offset of the first problem.
    /// - Parameter text: JSON as `json(typed: true)` writes it.
    public init(typedJSON text: String) throws {
        var parser = TypedJSONParser(Array(text.utf8))
        self = try parser.value(depth: 0)
        parser.skipSpace()
        guard parser.position == parser.bytes.count else { throw parser.error("text after the value") }
    }
}

/// Why typed JSON did not parse: what, and at which byte.
public struct TypedJSONError: Error, Sendable, Equatable, DescribedError {
    /// Where, in bytes.
    public var offset: Int
    /// What is wrong.
    public var reason: String
    public var description: String { "\(reason) at byte \(offset)" }
}

/// A small recursive-descent JSON parser that keeps integers and floating numbers apart and
/// reads the `$` wrappers. Nesting is bounded like records' (`RecordLimits.maxNestingDepth`).
struct TypedJSONParser {
    let bytes: [UInt8]
    var position = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    func error(_ reason: String) -> TypedJSONError { TypedJSONError(offset: position, reason: reason) }

    mutating func skipSpace() {
        while position < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[position]) { position += 1 }
    }

    mutating func expect(_ byte: UInt8) throws {
        skipSpace()
        guard position < bytes.count, bytes[position] == byte else { throw error("expected '\(Character(UnicodeScalar(byte)))'") }
        position += 1
    }

    mutating func value(depth: Int) throws -> RecordValue {
        guard depth <= RecordLimits.maxNestingDepth else { throw error("nesting deeper than \(RecordLimits.maxNestingDepth)") }
        skipSpace()
        guard position < bytes.count else { throw error("unexpected end") }
        switch bytes[position] {
        case UInt8(ascii: "n"): try literal("null"); return .null
        case UInt8(ascii: "t"): try literal("true"); return .bool(true)
        case UInt8(ascii: "f"): try literal("false"); return .bool(false)
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "["):
            position += 1
            var elements: [RecordValue] = []
            skipSpace()
            if position < bytes.count, bytes[position] == UInt8(ascii: "]") { position += 1; return .array(elements) }
            while true {
                elements.append(try value(depth: depth + 1))
                skipSpace()
                guard position < bytes.count else { throw error("unterminated array") }
                if bytes[position] == UInt8(ascii: "]") { position += 1; return .array(elements) }
                try expect(UInt8(ascii: ","))
            }
        case UInt8(ascii: "{"): return try object(depth: depth)
        default: return try number()
        }
    }

    private mutating func literal(_ word: String) throws {
        let utf8 = Array(word.utf8)
        guard bytes.count - position >= utf8.count, Array(bytes[position ..< position + utf8.count]) == utf8 else { throw error("expected \(word)") }
        position += utf8.count
    }

    private mutating func fields(depth: Int) throws -> [RecordValue.Field] {
        var fields: [RecordValue.Field] = []
        skipSpace()
        if position < bytes.count, bytes[position] == UInt8(ascii: "}") { position += 1; return fields }
        while true {
            skipSpace()
            let name = try string()
            try expect(UInt8(ascii: ":"))
            fields.append(RecordValue.Field(name: name, value: try value(depth: depth + 1)))
            skipSpace()
            guard position < bytes.count else { throw error("unterminated object") }
            if bytes[position] == UInt8(ascii: "}") { position += 1; return fields }
            try expect(UInt8(ascii: ","))
        }
    }

    private mutating func object(depth: Int) throws -> RecordValue {
        let start = position
        position += 1
        let fields = try fields(depth: depth)
        guard fields.count == 1, fields[0].name.hasPrefix("$") else { return .object(fields) }
        let (name, inner) = (fields[0].name, fields[0].value)
        func text() throws -> String {
            guard case .string(let s) = inner else { throw TypedJSONError(offset: start, reason: "\(name) takes a string") }
            return s
        }
        switch name {
        case "$uint":
            guard let v = UInt64(try text()) else { throw TypedJSONError(offset: start, reason: "$uint is not an unsigned integer") }
            return .uint(v)
        case "$double":
            switch try text() {
            case "nan": return .double(.nan)
            case "inf": return .double(.infinity)
            case "-inf": return .double(-.infinity)
            default: throw TypedJSONError(offset: start, reason: "$double takes nan, inf or -inf")
            }
        case "$bytes":
            guard let data = Data(base64Encoded: try text()) else { throw TypedJSONError(offset: start, reason: "$bytes is not base64") }
            return .bytes(data)
        case "$date":
            switch inner {
            case .double(let s): return .date(Date(timeIntervalSinceReferenceDate: s))
            case .int(let s): return .date(Date(timeIntervalSinceReferenceDate: Double(s)))
            default: throw TypedJSONError(offset: start, reason: "$date takes seconds since 2001-01-01")
            }
        case "$uuid":
            guard let uuid = UUID(uuidString: try text()) else { throw TypedJSONError(offset: start, reason: "$uuid is not a UUID") }
            return .uuid(uuid)
        case "$url": return .url(try text())
        case "$decimal":
            let s = try text()
            guard Decimal(string: s) != nil else { throw TypedJSONError(offset: start, reason: "$decimal is not a number") }
            return .decimal(s)
        case "$map":
            guard case .object(let entries) = inner else { throw TypedJSONError(offset: start, reason: "$map takes an object") }
            return .map(entries)
        default: return .object(fields)
        }
    }

    private mutating func string() throws -> String {
        guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") else { throw error("expected a string") }
        position += 1
        var scalars = String.UnicodeScalarView()
        var chunk: [UInt8] = []
        func flush() { scalars.append(contentsOf: String(decoding: chunk, as: UTF8.self).unicodeScalars); chunk.removeAll() }
        while position < bytes.count {
            let byte = bytes[position]
            position += 1
            switch byte {
            case UInt8(ascii: "\""):
                flush()
                return String(scalars)
            case UInt8(ascii: "\\"):
                flush()
                guard position < bytes.count else { throw error("unterminated escape") }
                let escaped = bytes[position]
                position += 1
                switch escaped {
                case UInt8(ascii: "n"): scalars.append("\n")
                case UInt8(ascii: "r"): scalars.append("\r")
                case UInt8(ascii: "t"): scalars.append("\t")
                case UInt8(ascii: "b"): scalars.append("\u{08}")
                case UInt8(ascii: "f"): scalars.append("\u{0C}")
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): scalars.append(UnicodeScalar(escaped))
                case UInt8(ascii: "u"):
                    var code = try hex4()
                    if (0xD800 ..< 0xDC00).contains(code) {
                        try literal("\\u")
                        let low = try hex4()
                        guard (0xDC00 ..< 0xE000).contains(low) else { throw error("unpaired surrogate") }
                        code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                    }
                    guard let scalar = UnicodeScalar(code) else { throw error("invalid \\u escape") }
                    scalars.append(scalar)
                default: throw error("invalid escape")
                }
            default:
                guard byte >= 0x20 else { throw error("control character in a string") }
                chunk.append(byte)
            }
        }
        throw error("unterminated string")
    }

    private mutating func hex4() throws -> UInt32 {
        guard bytes.count - position >= 4, let code = UInt32(String(decoding: bytes[position ..< position + 4], as: UTF8.self), radix: 16) else {
            throw error("invalid \\u escape")
        }
        position += 4
        return code
    }

    private mutating func number() throws -> RecordValue {
        let start = position
        while position < bytes.count, "+-0123456789.eE".utf8.contains(bytes[position]) { position += 1 }
        let text = String(decoding: bytes[start ..< position], as: UTF8.self)
        if !text.contains(where: { $0 == "." || $0 == "e" || $0 == "E" }), let v = Int64(text) { return .int(v) }
        guard let v = Double(text), !text.isEmpty else { throw TypedJSONError(offset: start, reason: "expected a value") }
        return .double(v)
    }
}
