import Foundation
import Strata
import StrataEngine

/// The JSON views behind Studio's page, one method per `/api/…` path (documented in
/// docs/STUDIO.md). Reports that `storedump --json` also prints have its shapes.
///
/// Every answer is bounded: pages of at most `maxPage` records, with long values cut
/// (`RecordJSON`); queries stopped after `queryTime` and counts after `countTime`; whole-file
/// work run one at a time (`LongJobs`).
struct StudioAPI {
    let studio: Studio
    let request: StudioRequest

    static let defaultPage = 50
    static let maxPage = 200
    static let maxQueryRecords = 500
    static let maxOffset = 100_000
    static let maxPredicateLength = 4_096
    static let queryTime: Duration = .seconds(3)
    static let countTime: Duration = .seconds(2)
    /// Pages listed by the tree view; the levels table covers every page.
    static let maxTreePages = 500

    // MARK: Views

    /// What Studio shows, answered even when the file cannot be opened:
    /// `{"path": "…", "readOnly": true}`.
    func about() throws -> StudioResponse {
        var out = "{\"path\":"
        RecordValue.string(studio.path).writeJSON(to: &out)
        return .json(out + ",\"readOnly\":true}")
    }

    /// `storedump info --json`.
    func info() throws -> StudioResponse {
        try .json(encoding: try studio.inspector().info())
    }

    /// `storedump collections --json`.
    func collections() throws -> StudioResponse {
        try .json(encoding: try snapshotInspector().collections())
    }

    /// A page of records in primary-key order from `from` (a `keyHex`; the first record when
    /// absent): `{"collection", "records": [record…], "next": keyHex or null}`.
    func records(in collection: String) throws -> StudioResponse {
        let limit = try integer("limit", default: Self.defaultPage, in: 1...Self.maxPage)
        let start = try request.query["from"].flatMap { $0.isEmpty ? nil : Key(bytes: try KeyHex.decode($0)) }
        var page: [CollectionInspector.Record] = []
        // One record past the page names where the next page starts.
        try snapshotInspector().records(in: collection, from: start, limit: limit + 1) { record in
            page.append(record)
            return true
        }
        let next = page.count > limit ? page.removeLast() : nil
        var out = "{\"collection\":"
        RecordValue.string(collection).writeJSON(to: &out)
        out += ",\"records\":"
        RecordJSON.array(page, abridged: true, into: &out)
        out += ",\"next\":" + (next.map { "\"\(KeyHex.encode($0.key.bytes))\"" } ?? "null") + "}"
        return .json(out)
    }

    /// One record, whole.
    func record(in collection: String, keyHex: String) throws -> StudioResponse {
        let key = Key(bytes: try KeyHex.decode(keyHex))
        guard let record = try snapshotInspector().record(in: collection, key: key) else {
            throw StudioError.notFound("collection '\(collection)' has no record with key \(RecordJSON.keyText(key))")
        }
        var out = ""
        RecordJSON.write(record, abridged: false, into: &out)
        return .json(out)
    }

    /// A query in storedump's language (`where`, `sort` as in `storedump find`, `limit`,
    /// `offset`): `{"plan": …, "records": […], "count": {"value", "complete"}}`. The count
    /// is of every match; `complete` is false when counting stopped at `countTime`.
    func query() throws -> StudioResponse {
        guard let collection = request.query["collection"], !collection.isEmpty else {
            throw StudioError.badRequest("name the collection: /api/query?collection=NAME&where=…")
        }
        let text = request.query["where"] ?? ""
        guard text.utf8.count <= Self.maxPredicateLength else {
            throw StudioError.badRequest("the predicate is longer than \(Self.maxPredicateLength) bytes")
        }
        let predicate: TextPredicate?
        do {
            predicate = text.trimmingCharacters(in: .whitespaces).isEmpty ? nil : try TextPredicate.parse(text)
        } catch let error as TextQueryError {
            throw StudioError.badRequest("the predicate does not parse at column \(error.column): \(error.message)")
        }
        let sort = (request.query["sort"] ?? "").split(separator: ",").map { part in
            part.hasPrefix("-") ? (field: String(part.dropFirst()), ascending: false) : (field: String(part), ascending: true)
        }
        let limit = try integer("limit", default: Self.defaultPage, in: 1...Self.maxQueryRecords)
        let offset = try integer("offset", default: 0, in: 0...Self.maxOffset)
        let inspector = try snapshotInspector()
        var records: [CollectionInspector.Record] = []
        let plan = try inspector.find(in: collection, where: predicate, sortedBy: sort, limit: limit, offset: offset, timeLimit: Self.queryTime) {
            records.append($0)
            return true
        }
        var count = 0
        var complete = true
        do {
            try inspector.find(in: collection, where: predicate, timeLimit: Self.countTime) { _ in
                count += 1
                return true
            }
        } catch is QueryTimeLimitExceeded {
            complete = false
        }
        var out = "{\"plan\":" + (try InspectionJSON.encode(plan)) + ",\"records\":"
        RecordJSON.array(records, abridged: true, into: &out)
        out += ",\"count\":{\"value\":\(count),\"complete\":\(complete)}}"
        return .json(out)
    }

    /// `storedump stats --json`: live and dead bytes, per tree pages, fill and compression.
    func space() throws -> StudioResponse {
        let inspector = try studio.inspector()
        let sequence = try inspector.database.statistics().commitSequence
        return .json(try studio.longJobs.answer("stats", at: sequence) {
            try InspectionJSON.encode(try inspector.database.analyzeSpace())
        })
    }

    /// `storedump tree NAME --json` (a tree, or a collection's records tree), listing at most
    /// `maxTreePages` pages; `pagesOmitted` counts the rest.
    func tree(_ name: String) throws -> StudioResponse {
        let inspector = try studio.inspector()
        let snapshot = try inspector.database.snapshot()
        let tree = snapshot.hasTree(name) ? name : snapshot.hasTree("c:" + name) ? "c:" + name : name
        guard snapshot.hasTree(tree) else { throw StudioError.notFound("no tree or collection named '\(name)'") }
        let sequence = try inspector.database.statistics().commitSequence
        return .json(try studio.longJobs.answer("tree " + tree, at: sequence) {
            try InspectionJSON.encode(TreeView(shape: try inspector.shape(of: tree), maxPages: Self.maxTreePages))
        })
    }

    /// `storedump tree --page OFFSET --json`: one page frame decoded (a leaf's entries, a
    /// branch's children); `hex=true` adds the frame's bytes.
    func page(at text: String) throws -> StudioResponse {
        guard let offset = UInt64(text) else { throw StudioError.badRequest("'\(text.prefix(40))' is not a page offset (a whole number)") }
        let hex = request.query["hex"] == "true" || request.query["hex"] == "1"
        return try .json(encoding: try studio.inspector().page(at: offset, hex: hex))
    }

    /// `storedump verify --json` (`quick=true` for checksums and the commit chain only), run
    /// afresh on each request.
    func verify() throws -> StudioResponse {
        let quick = request.query["quick"] == "true" || request.query["quick"] == "1"
        return .json(try studio.longJobs.answer("verify", at: nil) {
            try InspectionJSON.encode(try VerificationReport.verify(path: studio.path, quick: quick))
        })
    }

    // MARK: Helpers

    /// A collection inspector on one snapshot: the answer is as of one commit.
    private func snapshotInspector() throws -> CollectionInspector {
        CollectionInspector(snapshot: try studio.inspector().database.snapshot())
    }

    private func integer(_ name: String, default value: Int, in range: ClosedRange<Int>) throws -> Int {
        guard let text = request.query[name], !text.isEmpty else { return value }
        guard let number = Int(text), range.contains(number) else {
            throw StudioError.badRequest("\(name) must be a whole number from \(range.lowerBound) to \(range.upperBound)")
        }
        return number
    }
}

/// A tree's shape with its page list cut to what a page can show.
private struct TreeView: Encodable {
    var shape: Inspector.TreeShape
    var pagesOmitted: Int

    init(shape: Inspector.TreeShape, maxPages: Int) {
        pagesOmitted = max(0, shape.pages.count - maxPages)
        self.shape = shape
        self.shape.pages = Array(shape.pages.prefix(maxPages))
    }

    private enum CodingKeys: String, CodingKey { case pagesOmitted }

    func encode(to encoder: any Encoder) throws {
        try shape.encode(to: encoder)
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(pagesOmitted, forKey: .pagesOmitted)
    }
}
