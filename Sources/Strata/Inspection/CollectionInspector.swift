import Foundation
import StrataEngine

/// The collections of a Strata file, read without their Swift types: the catalog, records
/// as `RecordValue`s, lookups by key text, and index verification. What `storedump` uses.
///
/// ```swift
/// let collections = try CollectionInspector(snapshot: try Database(path: p, options: .init(readOnly: true)).snapshot())
/// for record in try collections.records(in: "User", limit: 10) { print(record.value.json) }
/// ```
public struct CollectionInspector {
    /// A collection as `storedump collections` shows it.
    public struct Collection: Codable, Sendable, Equatable {
        /// One index of the collection.
        public struct Index: Codable, Sendable, Equatable {
            /// The index's name.
            public var name: String
            /// Its fields, in key order.
            public var fields: [String]
            /// Whether it is unique.
            public var unique: Bool
            /// Its entry count (one per record).
            public var entries: Int
        }

        /// The collection's name.
        public var name: String
        /// Its record count.
        public var records: Int
        /// The primary key's fields.
        public var primaryKey: [String]
        /// The primary key's element types, as stored (from the first record's key).
        public var primaryKeyTypes: [String]
        /// Every field the catalog's field table names.
        public var fields: [String]
        /// Each top-level field's stored type, read from the first record ("absent" when
        /// that record lacks the field).
        public var fieldTypes: [String: String]
        /// Each top-level field's type as the catalog records and enforces it (`StoredType`
        /// names); nil for files written before the catalog recorded types.
        public var storedTypes: [String: String]?
        /// The fields each model type that declares all its fields (`DescribedModel`) reads,
        /// by type name; nil until such a model has opened the collection for writing.
        public var readers: [String: [String]]?
        /// Its indexes.
        public var indexes: [Index]
        /// The Swift type that created it.
        public var modelType: String
        /// For auto-increment schemas, the next id to assign.
        public var nextID: Int64?

        /// Stored top-level fields that none of `readers` reads — a field renamed without
        /// declaring `originalName`, or one a model dropped; their values are kept but no
        /// longer read. Empty when no reader is recorded (nothing can be told then).
        public var unreadFields: [String] {
            guard let readers, let storedTypes else { return [] }
            let read = Set(readers.values.joined())
            return storedTypes.keys.filter { !read.contains($0) }.sorted()
        }
    }

    /// One record: its primary key and its value, decoded without the model type.
    public struct Record: Sendable {
        /// The primary key.
        public var key: Key
        /// The record.
        public var value: RecordValue
    }

    let snapshot: Snapshot

    /// Reads the collections of `snapshot` (`Database.snapshot()`, or an `Inspector`'s database's).
    ///
    /// - Parameter snapshot: The committed state to read; it stays the same while this reads it.
    public init(snapshot: Snapshot) {
        self.snapshot = snapshot
    }

    func entry(_ name: String) throws -> CatalogEntry {
        guard let entry = try CatalogEntry.load(name, from: snapshot), snapshot.hasTree(entry.recordsTree) else {
            throw StorageError.collectionNotFound(name, existing: try names())
        }
        return entry
    }

    /// Every collection's name.
    ///
    /// - Returns: The names, sorted.
    /// - Throws: `StrataError` or `RecordError` for a damaged catalog.
    public func names() throws -> [String] { try CatalogEntry.collectionNames(in: snapshot) }

    /// Every collection with its records, fields, types and indexes.
    ///
    /// - Returns: The collections, by name.
    /// - Throws: `StrataError` or `RecordError` for a damaged catalog or tree.
    public func collections() throws -> [Collection] {
        try names().map { try collection($0) }
    }

    /// One collection.
    /// - Throws: `StorageError.collectionNotFound` naming those there are.
    /// - Parameter name: The collection's name.
    /// - Returns: Its record count, fields, types and indexes.
    public func collection(_ name: String) throws -> Collection {
        let entry = try entry(name)
        var keyTypes: [String] = []
        var fieldTypes: [String: String] = [:]
        let cursor = try snapshot.cursor(entry.recordsTree)
        if try cursor.first() {
            keyTypes = try Key(bytes: cursor.key).elements().map(\.typeName)
            if case .object(let stored) = try RecordValue.decode(try cursor.value(), fields: FieldTable(names: entry.fields), collection: name) {
                for field in stored { fieldTypes[field.name] = field.value.typeName }
            }
            for field in entry.fields where fieldTypes[field] == nil { fieldTypes[field] = "absent" }
        }
        return Collection(
            name: name, records: try snapshot.count(in: entry.recordsTree), primaryKey: entry.primaryKey, primaryKeyTypes: keyTypes,
            fields: entry.fields, fieldTypes: fieldTypes, storedTypes: entry.types?.mapValues(\.rawValue), readers: entry.readers,
            indexes: try entry.indexes.map { .init(name: $0.name, fields: $0.fields, unique: $0.unique, entries: try snapshot.count(in: entry.indexTree($0.name))) },
            modelType: entry.modelType, nextID: entry.nextID)
    }

    /// Records in primary-key order, from `start` (a key), up to `limit`.
    ///
    /// - Parameters:
    ///   - name: The collection's name.
    ///   - start: The first primary key to read from (included); nil for the start.
    ///   - limit: The most records to read; nil for all.
    ///   - body: Called with each record; returns whether to go on.
    /// - Throws: `StorageError.collectionNotFound`; `RecordError` or `StrataError` for damaged
    ///   bytes; what `body` throws.
    public func records(in name: String, from start: Key? = nil, limit: Int? = nil, _ body: (Record) throws -> Bool) throws {
        let entry = try entry(name)
        let fields = FieldTable(names: entry.fields)
        var seen = 0
        let range = start.map { KeyRange(lower: .included($0.bytes)) } ?? .all
        try snapshot.scan(entry.recordsTree, in: range) { key, value in
            if let limit, seen >= limit { return false }
            seen += 1
            return try body(Record(key: Key(bytes: Array(key)), value: try RecordValue.decode(Array(value), fields: fields, collection: name)))
        }
    }

    /// The record whose primary key is `text`, parsed as the collection's key types
    /// (comma-separated for composite keys).
    ///
    /// - Parameters:
    ///   - name: The collection's name.
    ///   - text: The primary key as text.
    /// - Returns: The record, or nil when none has that key.
    /// - Throws: `StorageError.collectionNotFound`; `KeyParseError` for text
    ///   that is not a key of the collection's types; errors for damaged bytes.
    public func record(in name: String, keyText text: String) throws -> Record? {
        try record(in: name, key: try parseKey(text, types: try collection(name).primaryKeyTypes))
    }

    /// The record whose primary key is `key`, or nil.
    /// - Throws: `StorageError.collectionNotFound`; `RecordError` or `StrataError` for
    ///   damaged bytes.
    /// - Parameters:
    ///   - name: The collection's name.
    ///   - key: The encoded primary key.
    /// - Returns: The record, or nil when none has that key.
    public func record(in name: String, key: Key) throws -> Record? {
        let entry = try entry(name)
        guard let bytes = try snapshot.get(key.bytes, in: entry.recordsTree) else { return nil }
        return Record(key: key, value: try RecordValue.decode(bytes, fields: FieldTable(names: entry.fields), collection: name))
    }

    /// Parses key text by element types (`int`, `uint`, `double`, `string`, `uuid`, `bool`, `date`).
    ///
    /// - Parameters:
    ///   - text: The key's elements, comma-separated when there are several.
    ///   - types: The element types, in key order.
    /// - Returns: The encoded key.
    /// - Throws: `KeyParseError` naming the element that does not parse as its type.
    public func parseKey(_ text: String, types: [String]) throws -> Key {
        let parts = types.count > 1 ? text.split(separator: ",", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) } : [text]
        guard parts.count == max(types.count, 1) else {
            throw KeyParseError(text: text, reason: "expected \(types.count) comma-separated values (\(types.joined(separator: ", ")))")
        }
        var key = Key()
        for (part, type) in zip(parts, types.isEmpty ? ["string"] : types) {
            switch type {
            case "int": guard let v = Int64(part) else { throw KeyParseError(text: part, reason: "not an integer") }; key.append(v)
            case "uint": guard let v = UInt64(part) else { throw KeyParseError(text: part, reason: "not an unsigned integer") }; key.append(v)
            case "double": guard let v = Double(part) else { throw KeyParseError(text: part, reason: "not a number") }; key.append(v)
            case "uuid": guard let v = UUID(uuidString: part) else { throw KeyParseError(text: part, reason: "not a UUID") }; key.append(v)
            case "bool": guard let v = Bool(part) else { throw KeyParseError(text: part, reason: "not true or false") }; key.append(v)
            case "date":
                guard let v = InstantText.parse(part) else { throw KeyParseError(text: part, reason: "not an ISO 8601 date") }
                key.append(v)
            default: key.append(part)
            }
        }
        return key
    }

    /// Checks every index entry against the records: each names an existing record whose
    /// fields give the entry's key, and each record has its entries. Returns the faults.
    ///
    /// - Returns: One line per fault; empty when every index agrees with its records.
    /// - Throws: `StrataError` or `RecordError` when a tree cannot be read at all.
    public func verifyIndexes() throws -> [String] {
        var faults: [String] = []
        let collections: [String]
        do {
            collections = try names()
        } catch {
            // A damaged catalog is a finding of its own; the engine's checks name its offset.
            return ["the catalog does not read, so no index was checked: \(error)"]
        }
        for name in collections {
            do {
                try verifyIndexes(of: name, into: &faults)
            } catch {
                // A record or entry that does not read is a fault of its own, reported with
                // its offset by the engine's checks; the index check stops for this collection.
                faults.append("collection '\(name)': indexes not checked: \(error)")
            }
        }
        return faults
    }

    private func verifyIndexes(of name: String, into faults: inout [String]) throws {
        let entry = try entry(name)
        let fields = FieldTable(names: entry.fields)
        // An index on a computed value (`@name`) can only be recomputed by its model.
        for index in entry.indexes where !index.isComputed {
            let tree = entry.indexTree(index.name)
            guard snapshot.hasTree(tree) else {
                faults.append("collection '\(name)': index '\(index.name)' is in the catalog but its tree is missing")
                continue
            }
            var expected = Set<[UInt8]>()
            var skipped = false
            try snapshot.scan(entry.recordsTree) { key, value in
                let record = try RecordValue.decode(Array(value), fields: fields, collection: name)
                guard let indexKey = index.key(of: record, primaryKey: Array(key)) else { skipped = true; return false }
                expected.insert(indexKey)
                return true
            }
            if skipped { continue }  // fields that keys cannot hold: the model decides
            var found = 0
            try snapshot.scan(tree) { key, primaryKey in
                found += 1
                if !expected.contains(Array(key)) {
                    faults.append("collection '\(name)': index '\(index.name)' entry \(Key(bytes: Array(key))) matches no record's fields")
                } else if try snapshot.get(Array(primaryKey), in: entry.recordsTree) == nil {
                    faults.append("collection '\(name)': index '\(index.name)' entry \(Key(bytes: Array(key))) names missing record \(Key(bytes: Array(primaryKey)))")
                }
                return true
            }
            if found != expected.count {
                faults.append("collection '\(name)': index '\(index.name)' has \(found) entries for \(expected.count) records")
            }
        }
    }
}

/// Key text that does not read as the collection's key types.
public struct KeyParseError: Error, DescribedError {
    /// The text.
    public var text: String
    /// What is wrong with it.
    public var reason: String
    public var description: String { "cannot read key '\(text)': \(reason)" }
}

extension KeyElement {
    /// The element's type as `CollectionInspector.parseKey` names it.
    public var typeName: String {
        switch self {
        case .null: "null"
        case .bool: "bool"
        case .int: "int"
        case .uint: "uint"
        case .double: "double"
        case .string: "string"
        case .bytes: "bytes"
        case .date: "date"
        case .uuid: "uuid"
        }
    }
}
