import Foundation
import StrataEngine

/// A Strata file's collections as JSON lines, and back: `storedump export` and `storedump
/// import`, and the way to move data to a storage that is not a Strata file by hand. The
/// first line of each collection is its catalog entry, `{"catalog":{…}}` (FORMAT.md,
/// section 14); then one line per record, `{"collection":"User","record":{…}}`, in
/// primary-key order, the record as typed JSON (`RecordValue.typedJSON`). Nothing but the
/// model's stored values is written: importing rebuilds keys, field tables and indexes.
extension StrataStorage {
    /// Writes the named collections (all when nil) as JSON lines, one call of `write` per
    /// line, from one snapshot. Returns how many records were written.
    /// - Throws: `StorageError.collectionNotFound`; `RecordError.corruptRecord` for a
    ///   damaged record; whatever `write` throws.
    /// - Parameters:
    ///   - names: The collections to write; nil for all.
    ///   - write: Called with each line, without its newline.
    /// - Returns: How many records were written.
    @discardableResult
    public func exportJSONLines(collections names: [String]? = nil, _ write: (String) throws -> Void) throws -> Int {
        let inspector = CollectionInspector(snapshot: try database.snapshot())
        var records = 0
        for name in try names ?? inspector.names() {
            let entry = try inspector.entry(name)
            try write("{\"catalog\":" + String(decoding: try entry.encoded(), as: UTF8.self) + "}")
            var prefix = "{\"collection\":"
            RecordValue.quote(name, into: &prefix)
            prefix += ",\"record\":"
            try inspector.records(in: name) { record in
                try write(prefix + record.value.typedJSON + "}")
                records += 1
                return true
            }
        }
        return records
    }

    /// What an import did.
    public struct ImportReport: Sendable, Equatable {
        /// Records imported, by collection, in the order first seen.
        public var records: [String: Int] = [:]
        /// Indexes on computed values the export listed but an import cannot build (only the
        /// model can compute them): the model builds them when it next writes.
        public var indexesLeftToTheModel: [String: [String]] = [:]
    }

    /// Imports JSON lines written by `exportJSONLines`, all in one transaction: a line that
    /// does not parse, names a collection whose catalog line has not come, or does not fit
    /// the catalog (a field's type, a duplicate key, a unique index) stops the import with
    /// `ImportError` naming the line, and nothing is committed. Into a collection the file
    /// already has, records are added (the primary key must match the export's).
    ///
    /// - Parameter lines: The lines, without newlines (empty lines are skipped).
    /// - Returns: How many collections and records were imported.
    /// - Throws: `ImportError` naming the line and what is wrong with it; nothing is committed.
    public func importJSONLines(_ lines: some Sequence<String>) throws -> ImportReport {
        var report = ImportReport()
        try transact { writer in
            for (offset, line) in lines.enumerated() where !line.allSatisfy(\.isWhitespace) {
                do {
                    try importLine(line, into: writer, report: &report)
                } catch let error as ImportError {
                    throw error
                } catch {
                    throw ImportError(line: offset + 1, reason: "\(error)")
                }
            }
        }
        return report
    }

    private func importLine(_ line: String, into writer: StrataWriter, report: inout ImportReport) throws {
        if line.hasPrefix("{\"catalog\":") {
            struct CatalogLine: Decodable { var catalog: CatalogEntry }
            let entry: CatalogEntry
            do { entry = try JSONDecoder().decode(CatalogLine.self, from: Data(line.utf8)).catalog } catch {
                throw RecordError.corruptRecord(collection: "(catalog line)", reason: "the catalog entry does not decode: \(error)")
            }
            let leftOut = try writer.importCatalog(entry)
            if !leftOut.isEmpty { report.indexesLeftToTheModel[entry.collection] = leftOut }
            report.records[entry.collection] = report.records[entry.collection] ?? 0
            return
        }
        guard case .object(let parts) = try RecordValue(typedJSON: line), parts.count == 2,
              parts[0].name == "collection", case .string(let collection) = parts[0].value, parts[1].name == "record" else {
            throw TypedJSONError(offset: 0, reason: "expected {\"collection\":…,\"record\":…} or {\"catalog\":…}")
        }
        guard report.records[collection] != nil else {
            throw StorageError.collectionNotFound(collection, existing: Array(report.records.keys).sorted())
        }
        try writer.importRecord(parts[1].value, into: collection)
        report.records[collection, default: 0] += 1
    }
}

/// Why an import stopped: the line (counting from 1) and what was wrong with it.
public struct ImportError: Error, Sendable, Equatable, DescribedError {
    /// The line, 1-based.
    public var line: Int
    /// What is wrong with it.
    public var reason: String
    public var description: String { "line \(line): \(reason); nothing was imported" }
}
