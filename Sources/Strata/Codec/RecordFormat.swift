import Foundation
import StrataEngine

/// Bounds every record reader enforces and every writer keeps (FORMAT.md, "Records").
public enum RecordLimits {
    /// How deeply containers (structs, arrays, dictionaries) may nest in one record. The
    /// encoder refuses deeper values and the decoders report deeper bytes as corrupt, so a
    /// crafted record cannot exhaust the stack.
    public static let maxNestingDepth = 128
}

/// Type tags of the binary record format (FORMAT.md, "Records"). A record is one value;
/// models encode as a keyed value whose field names are interned in the collection's
/// field table, so names are stored once per collection, not per record.
/// Declared in raw-value order with no gaps: `DecodingContext.tag(at:)` relies on it.
public enum RecordTag: UInt8, Sendable, CustomStringConvertible, CaseIterable {
    case null = 0
    case bool = 1
    case int = 2        // zigzag varint
    case uint = 3       // varint
    case double = 4     // 8 bytes LE
    case float = 5      // 4 bytes LE
    case string = 6     // varint length + UTF-8
    case bytes = 7      // varint length + bytes (Data)
    case date = 8       // Double seconds since 1970, 8 bytes LE
    case uuid = 9       // 16 bytes
    case url = 10       // varint length + UTF-8 absolute string
    case decimal = 11   // varint length + UTF-8 description
    case keyed = 12     // varint count, count × (varint field id, value)
    case unkeyed = 13   // varint count, count × value
    case map = 14       // varint count, count × (varint length + UTF-8 key, value)
    case referenceDate = 15 // Double seconds since 2001-01-01, 8 bytes LE: Foundation's own, exact

    public var description: String {
        switch self {
        case .null: "nil"
        case .bool: "Bool"
        case .int: "signed integer"
        case .uint: "unsigned integer"
        case .double: "Double"
        case .float: "Float"
        case .string: "String"
        case .bytes: "Data"
        case .date, .referenceDate: "Date"
        case .uuid: "UUID"
        case .url: "URL"
        case .decimal: "Decimal"
        case .keyed: "struct"
        case .unkeyed: "array"
        case .map: "dictionary"
        }
    }
}

/// The interned field names of one collection: ids are indexes into `names`. Names are only
/// ever added, so a newer table decodes every older record.
public struct FieldTable: Sendable, Equatable {
    /// The field names; a name's id is its index.
    public private(set) var names: [String] = []
    private var ids: [String: UInt32] = [:]
    /// The ids of the last record encoded, in order: records of one type repeat it, so a
    /// string comparison replaces a hash lookup. Not part of the table's value.
    private var order: [UInt32] = []

    /// Tables are equal when their names are.
    public static func == (a: FieldTable, b: FieldTable) -> Bool { a.names == b.names }

    /// A table of `names`, with ids 0, 1, 2… in order.
    ///
    /// - Parameter names: The field names, each given the next id; repeats are ignored.
    public init(names: [String] = []) {
        for name in names { _ = intern(name) }
    }

    /// The id of `name`, if the table has it.
    ///
    /// - Parameter name: A field name.
    /// - Returns: Its id, or nil when the table lacks it.
    public func id(of name: String) -> UInt32? { ids[name] }

    /// The table for reading records written before the given renames were moved: a field
    /// stored under an earlier name reads as its current one. Only for decoding — a writer
    /// moves the values instead (`StrataWriter.moveRenamedFields`).
    func readingRenamed(_ renames: [(from: String, to: String)]) -> FieldTable {
        var table = self
        for (from, to) in renames where table.ids[to] == nil {
            guard let id = table.ids[from] else { continue }
            table.names[Int(id)] = to
            table.ids[to] = id
            table.ids[from] = nil
        }
        return table
    }

    /// The name with this id, if any.
    ///
    /// - Parameter id: A field id from a record.
    /// - Returns: Its name, or nil when the table has no such id.
    public func name(of id: UInt32) -> String? { Int(id) < names.count ? names[Int(id)] : nil }

    /// The id of the `position`-th field of a record being encoded, learning the order.
    mutating func intern(_ name: String, at position: Int) -> UInt32 {
        if position < order.count {
            let guess = order[position]
            if names[Int(guess)] == name { return guess }
            order.removeSubrange(position...)
        }
        let id = intern(name)
        if position == order.count { order.append(id) }
        return id
    }

    /// The id of `name`, adding it when new.
    ///
    /// - Parameter name: A field name.
    /// - Returns: Its id: the existing one, or the next free one.
    public mutating func intern(_ name: String) -> UInt32 {
        if let id = ids[name] { return id }
        let id = UInt32(names.count)
        names.append(name)
        ids[name] = id
        return id
    }
}

/// Failures of the record layer, naming the collection and field involved.
public enum RecordError: Error, Sendable, Equatable, DescribedError {
    /// A stored field's type differs from the model's: the model changed incompatibly.
    case typeMismatch(collection: String, field: String, stored: String, expected: String)
    /// A field the model needs is absent from the record and has no zero value.
    case missingField(collection: String, field: String, expected: String)
    /// The record bytes are malformed.
    case corruptRecord(collection: String, reason: String)
    /// The model cannot be encoded (e.g. a non-finite value where it is not allowed).
    case unencodable(collection: String, reason: String)

    public var description: String {
        switch self {
        case .typeMismatch(let c, let f, let s, let e):
            "collection '\(c)', field '\(f)': stored as \(s) but the model expects \(e); the model changed incompatibly (migrate the data or restore the field's type)"
        case .missingField(let c, let f, let e):
            "collection '\(c)': stored record has no field '\(f)' and \(e) has no zero value; make the field optional or decode it with a default"
        case .corruptRecord(let c, let reason):
            "collection '\(c)': corrupt record: \(reason)"
        case .unencodable(let c, let reason):
            "collection '\(c)': cannot encode: \(reason)"
        }
    }
}

/// An encoder or decoder positioned at one value: its coding path is its parent's plus its
/// key, computed only when asked (for errors), so nesting allocates no path arrays.
protocol CodingPathNode: AnyObject {
    associatedtype Parent: CodingPathNode
    var parent: Parent? { get }
    var key: CodingKey? { get }
}

extension CodingPathNode {
    var codingPath: [CodingKey] {
        var path = parent?.codingPath ?? []
        if let key { path.append(key) }
        return path
    }
}

/// The coding key of an array element.
struct IndexKey: CodingKey {
    var intValue: Int?
    var stringValue: String { "\(intValue ?? 0)" }
    init(_ index: Int) { intValue = index }
    init?(stringValue: String) { nil }
    init?(intValue: Int) { self.intValue = intValue }
}

/// Signed integers as unsigned, small magnitudes first: 0, -1, 1, -2, … → 0, 1, 2, 3, …
enum ZigZag {
    static func encode(_ v: Int64) -> UInt64 { UInt64(bitPattern: (v << 1) ^ (v >> 63)) }
    static func decode(_ v: UInt64) -> Int64 { Int64(bitPattern: v >> 1) ^ -Int64(bitPattern: v & 1) }
}
