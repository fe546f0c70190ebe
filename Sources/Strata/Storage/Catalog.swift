import Foundation
import StrataEngine

/// What the file records about one collection (FORMAT.md, "Schema catalog"): stored as
/// JSON in the `strata.catalog` tree under the collection's name, so any tool can read it.
package struct CatalogEntry: Codable, Sendable, Equatable {
    package struct Index: Codable, Sendable, Equatable {
        package var name: String
        package var fields: [String]
        package var unique: Bool

        package init(name: String, fields: [String], unique: Bool) {
            (self.name, self.fields, self.unique) = (name, fields, unique)
        }

        /// Whether a field is a computed value (`@name`), which only its model can compute.
        package var isComputed: Bool { fields.contains { $0.hasPrefix("@") } }

        /// The index key of a record, from its stored values (the key a model computes from
        /// the same values); nil when a field holds a value keys cannot hold (a struct, an array).
        package func key(of record: RecordValue, primaryKey: [UInt8]) -> [UInt8]? {
            var key = Key()
            for field in fields {
                guard (record.value(at: field) ?? .null).appendKey(to: &key) else { return nil }
            }
            return unique ? key.bytes : key.bytes + primaryKey
        }
    }

    package var version = 1
    package var collection: String
    package var modelType: String
    /// The field table: a record's field id n is `fields[n]`.
    package var fields: [String]
    package var primaryKey: [String]
    package var indexes: [Index]
    /// The next auto-assigned id, for auto-incrementing schemas.
    package var nextID: Int64?
    /// The stored type of each top-level field written so far. Absent in files written
    /// before types were recorded: opening for writing fills it in from a stored record.
    package var types: [String: StoredType]?
    /// The top-level fields each model type that declares all its fields (`DescribedModel`)
    /// reads, by the type's name; absent until one such model opens the collection.
    package var readers: [String: [String]]?

    package static let tree = "strata.catalog"
    package static func recordsTree(_ collection: String) -> String { "c:" + collection }
    /// The collection whose records `tree` holds, or nil for index and catalog trees.
    package static func collection(ofRecordsTree tree: String) -> String? { tree.hasPrefix("c:") ? String(tree.dropFirst(2)) : nil }
    package static func indexTree(_ collection: String, _ index: String) -> String { "i:" + collection + ":" + index }

    package var recordsTree: String { Self.recordsTree(collection) }
    package func indexTree(_ index: String) -> String { Self.indexTree(collection, index) }

    package func encoded() throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return Array(try encoder.encode(self))
    }

    /// The names of the collections the catalog lists, in order.
    package static func collectionNames(in reader: some TreeReading) throws -> [String] {
        guard reader.hasTree(tree) else { return [] }
        var names: [String] = []
        try reader.scan(tree, in: .all, reverse: false) { key, _ in
            if case .string(let name)? = try Key(bytes: Array(key)).elements().first { names.append(name) }
            return true
        }
        return names
    }

    package static func load(_ collection: String, from reader: some TreeReading) throws -> CatalogEntry? {
        guard reader.hasTree(tree), let bytes = try reader.get(Key(collection).bytes, in: tree) else { return nil }
        return try decode(bytes, collection: collection)
    }

    /// Decodes a stored entry.
    /// - Throws: `RecordError.corruptRecord` when the bytes are not a catalog entry.
    package static func decode(_ bytes: [UInt8], collection: String) throws -> CatalogEntry {
        do {
            return try JSONDecoder().decode(CatalogEntry.self, from: Data(bytes))
        } catch {
            throw RecordError.corruptRecord(collection: collection, reason: "its catalog entry does not decode: \(error)")
        }
    }
}

/// A collection as a transaction sees it: its catalog entry with a ready field table.
package struct CollectionState: Sendable {
    package var entry: CatalogEntry
    package var fields: FieldTable
    /// `entry.types` by field id, so the write path checks a record's types without
    /// hashing field names; rebuilt when fields or types change.
    package private(set) var typesByID: [StoredType?] = []

    package init(_ entry: CatalogEntry) {
        self.entry = entry
        self.fields = FieldTable(names: entry.fields)
        indexTypes()
    }

    /// The entry with the current field table.
    package var current: CatalogEntry {
        var e = entry
        e.fields = fields.names
        return e
    }

    /// The stored type recorded for field `id`, or nil when none is yet.
    package func storedType(ofField id: UInt32) -> StoredType? {
        if Int(id) < typesByID.count { return typesByID[Int(id)] }
        return fields.name(of: id).flatMap { entry.types?[$0] }
    }

    /// Records the stored types of fields first written now.
    package mutating func learn(_ types: [(name: String, type: StoredType)]) {
        for (name, type) in types { entry.types = (entry.types ?? [:]).merging([name: type]) { old, _ in old } }
        indexTypes()
    }

    private mutating func indexTypes() {
        typesByID = fields.names.map { entry.types?[$0] }
    }
}
