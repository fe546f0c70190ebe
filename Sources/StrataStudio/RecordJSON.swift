import Strata
import StrataEngine

/// Records as Studio sends them: `{"key": "42", "keyHex": "…", "value": {…}}`. `key` is the
/// primary key for people (elements joined by ", "); `keyHex` names the record exactly, for
/// links and keyset paging.
enum RecordJSON {
    /// In lists, strings and byte strings longer than this many characters are cut, and
    /// arrays longer than `maxListElements`: a page of 200 records stays small whatever the
    /// records hold. The record view sends the record whole.
    static let maxListCharacters = 1_000
    static let maxListElements = 100

    static func write(_ record: CollectionInspector.Record, abridged: Bool, into out: inout String) {
        out += "{\"key\":"
        RecordValue.string(keyText(record.key)).writeJSON(to: &out)
        out += ",\"keyHex\":\"\(KeyHex.encode(record.key.bytes))\",\"value\":"
        (abridged ? record.value.abridged() : record.value).writeJSON(to: &out)
        out += "}"
    }

    static func array(_ records: [CollectionInspector.Record], abridged: Bool, into out: inout String) {
        out += "["
        for (i, record) in records.enumerated() {
            if i > 0 { out += "," }
            write(record, abridged: abridged, into: &out)
        }
        out += "]"
    }

    static func keyText(_ key: Key) -> String {
        guard let elements = try? key.elements() else { return "0x" + KeyHex.encode(key.bytes) }
        return elements.map { element in
            if case .string(let s) = element { return s }
            return element.description
        }.joined(separator: ", ")
    }
}

/// Key bytes as lowercase hex, and back: how a record is named in Studio's URLs.
enum KeyHex {
    /// Longer than any key a page can hold (a quarter of the largest page size).
    static let maxKeyBytes = 16_384
    private static let digits = Array("0123456789abcdef".utf8)

    static func encode(_ bytes: [UInt8]) -> String {
        var out = [UInt8]()
        out.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0xF)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// - Throws: `StudioError.badRequest` for text that is not hex of a plausible key.
    static func decode(_ text: String) throws -> [UInt8] {
        let utf8 = Array(text.utf8)
        guard utf8.count % 2 == 0, utf8.count <= maxKeyBytes * 2 else {
            throw StudioError.badRequest("'\(text.prefix(40))' is not a record key (hex digits, at most \(maxKeyBytes) bytes)")
        }
        func nibble(_ c: UInt8) throws -> UInt8 {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
            default: throw StudioError.badRequest("'\(text.prefix(40))' is not a record key (hex digits only)")
            }
        }
        return try stride(from: 0, to: utf8.count, by: 2).map { try nibble(utf8[$0]) << 4 | nibble(utf8[$0 + 1]) }
    }
}

extension RecordValue {
    /// The value with long strings, byte strings and arrays cut to what a list shows, each
    /// cut marked with how much there was.
    func abridged() -> RecordValue {
        let maxCharacters = RecordJSON.maxListCharacters
        switch self {
        case .string(let s) where s.utf8.count > maxCharacters && s.count > maxCharacters:
            return .string(String(s.prefix(maxCharacters)) + "… (\(s.count) characters)")
        case .bytes(let b) where b.count > maxCharacters * 3 / 4:
            return .string("(\(b.count) bytes)")
        case .array(let elements):
            var kept = elements.prefix(RecordJSON.maxListElements).map { $0.abridged() }
            if elements.count > kept.count { kept.append(.string("… (\(elements.count) elements)")) }
            return .array(kept)
        case .object(let fields):
            return .object(fields.map { RecordValue.Field(name: $0.name, value: $0.value.abridged()) })
        case .map(let fields):
            return .map(fields.prefix(RecordJSON.maxListElements).map { RecordValue.Field(name: $0.name, value: $0.value.abridged()) })
        default:
            return self
        }
    }
}
