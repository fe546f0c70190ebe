import Foundation
import Strata

/// A statement being written: its text and the arguments its placeholders bind.
struct SQLStatement {
    let dialect: SQLDialect
    var text = ""
    var arguments: [SQLValue] = []

    init(_ dialect: SQLDialect, _ text: String = "") {
        self.dialect = dialect
        self.text = text
    }

    /// The placeholder for `value`, which is bound in order.
    mutating func bind(_ value: SQLValue) -> String {
        arguments.append(value)
        return dialect.placeholder(arguments.count)
    }

    static func += (statement: inout SQLStatement, text: String) { statement.text += text }
}

/// Names in SQL: quoted identifiers, and the columns and indexes `SQLStorage` adds.
package enum SQLNames {
    /// The table every collection's catalog entry is stored in (the same JSON as a Strata
    /// file's `strata.catalog` tree, FORMAT.md section 14).
    package static let catalogTable = "strata_catalog"
    /// The primary key's key encoding (`Key`): rows compare in the order of the Strata file.
    static let keyColumn = "strata_key"
    /// The record's Strata encoding: the truth every read decodes.
    static let recordColumn = "strata_record"

    package static func quoted(_ name: String) -> String { "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\"" }

    /// The column holding an index's key encoding (without the primary key). Hashed, as an
    /// index name may be longer than a PostgreSQL identifier.
    static func indexColumn(_ index: String) -> String { "strata_ix_" + hex(XXH64.hash(Array(index.utf8))) }

    /// The SQL index's name: unique in the database (PostgreSQL names indexes per schema).
    static func sqlIndex(_ collection: String, _ index: String) -> String {
        "strata_" + hex(XXH64.hash(Array((collection + "\u{0}" + index).utf8)))
    }

    private static func hex(_ value: UInt64) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }

    /// Whether a top-level field gets a readable column of its own: not for names the
    /// storage uses, nor longer than the database allows.
    static func hasReadableColumn(_ field: String, dialect: SQLDialect) -> Bool {
        !field.hasPrefix("strata_") && !field.isEmpty && dialect.maxIdentifierBytes.map { field.utf8.count <= $0 } ?? true
    }
}

extension StoredType {
    /// Whether a field of this type is a scalar, mirrored in a readable column.
    var isScalar: Bool {
        switch self {
        case .struct, .array, .dictionary: false
        default: true
        }
    }
}

extension RecordValue {
    /// The value of a readable column: what the column's type can hold. The record column
    /// stays the truth; an unsigned integer above `Int64.max` reads as NULL here.
    var sqlValue: SQLValue {
        switch self {
        case .null: .null
        case .bool(let b): .bool(b)
        case .int(let i): .integer(i)
        case .uint(let u): u <= UInt64(Int64.max) ? .integer(Int64(u)) : .null
        case .double(let d): .real(d)
        case .string(let s), .url(let s), .decimal(let s): .text(s)
        case .bytes(let data): .blob(Array(data))
        case .date(let date): .date(date)
        case .uuid(let uuid): .uuid(uuid)
        case .object, .array, .map: .null
        }
    }
}
