// W4, the notes app: the same screens' queries on Strata's typed layer, GRDB and SQLite's C
// API, with the same indexes: (notebookId, createdAt), tag, priority, done.
import BenchmarkSupport
import Foundation
import GRDB
import GRDBSQLite
import Strata

extension EngineKind {
    func makeW4(directory: String) throws -> (any W4Engine)? {
        switch self {
        case .strataTyped: try TypedW4(directory: directory)
        case .grdb: try GRDBW4(directory: directory)
        case .sqlite: try SQLiteW4(directory: directory)
        case .strata, .strataTypedCodable, .lmdb, .leveldb: nil   // key-value stores: no queries to compare
        }
    }
}

final class TypedW4: W4Engine {
    let database: TypedDatabase

    init(directory: String) throws { database = try TypedDatabase(directory: directory) }

    func insert(_ notes: [Note]) throws {
        try database.storage.write { writer in for note in notes { _ = try writer.create(note) } }
    }

    func notebookPage(_ notebook: Int64, limit: Int) throws -> [Int64] {
        try database.storage.read(Self.notebookPage(notebook, limit: limit)).map(\.id)
    }

    func tagPage(_ tag: String, limit: Int) throws -> [Int64] {
        try database.storage.read(Self.tagPage(tag, limit: limit)).map(\.id)
    }

    func topPriority(limit: Int) throws -> [Int64] {
        try database.storage.read(Self.topPriority(limit: limit)).map(\.id)
    }

    func count(done: Bool, priority: Int) throws -> Int {
        try database.storage.count(Self.count(done: done, priority: priority))
    }

    func keysetPage(_ notebook: Int64, before: Int64?, limit: Int) throws -> [(id: Int64, createdAt: Int64)] {
        try database.storage.read(Self.keysetPage(notebook, before: before, limit: limit)).map { ($0.id, $0.createdAt) }
    }

    // The queries, as an app writes them.
    static func notebookPage(_ notebook: Int64, limit: Int) -> Query<Note> {
        Note.filter(\.notebookId == notebook).sorted(by: \.createdAt, ascending: false).limit(limit)
    }

    static func tagPage(_ tag: String, limit: Int) -> Query<Note> {
        Note.filter(\.tag == tag).sorted(by: \.createdAt, ascending: false).limit(limit)
    }

    static func topPriority(limit: Int) -> Query<Note> {
        Note.query().sorted(by: \.priority, ascending: false).limit(limit)
    }

    static func count(done: Bool, priority: Int) -> Query<Note> {
        Note.filter(\.done == done && \.priority == priority)
    }

    static func keysetPage(_ notebook: Int64, before: Int64?, limit: Int) -> Query<Note> {
        var query = Note.filter(\.notebookId == notebook)
        if let before { query = query.filter(\.createdAt < before) }
        return query.sorted(by: \.createdAt, ascending: false).limit(limit)
    }

    /// `explain()` of each op's first query, for the report (README's "How queries run").
    func plans(_ data: W4Data) throws -> [String] {
        let (done, priority) = data.countFilter(0)
        let queries: [(String, Query<Note>)] = [
            ("notebook page, newest first", Self.notebookPage(data.notebook(0), limit: W4Data.notebookPage)),
            ("first page by tag", Self.tagPage(data.tag(0), limit: W4Data.tagPage)),
            ("top-50 by priority", Self.topPriority(limit: W4Data.topCount)),
            ("count by two fields", Self.count(done: done, priority: priority)),
            ("keyset paging, a next page", Self.keysetPage(data.notebook(0), before: 1_700_000_000_000 + 25_000, limit: W4Data.keysetPage)),
        ]
        return try queries.map { op, query in "\(op): `\(try database.storage.explain(query))`" }
    }

    func close() throws { try database.storage.close() }
}

struct NoteRecord: Codable, FetchableRecord, PersistableRecord {
    static let databaseTableName = "note"
    var id: Int64
    var notebookId: Int64
    var createdAt: Int64
    var title: String
    var tag: String
    var priority: Int
    var done: Bool
    var due: Int64?

    init(_ n: Note) {
        (id, notebookId, createdAt, title, tag, priority, done, due) = (n.id, n.notebookId, n.createdAt, n.title, n.tag, n.priority, n.done, n.due)
    }
}

/// The W4 table and its indexes, for both SQLite engines.
private let noteTableSQL = """
    CREATE TABLE IF NOT EXISTS note(id INTEGER PRIMARY KEY, notebookId INTEGER NOT NULL, createdAt INTEGER NOT NULL,
      title TEXT NOT NULL, tag TEXT NOT NULL, priority INTEGER NOT NULL, done BOOLEAN NOT NULL, due INTEGER);
    CREATE INDEX IF NOT EXISTS note_notebook_created ON note(notebookId, createdAt);
    CREATE INDEX IF NOT EXISTS note_tag ON note(tag);
    CREATE INDEX IF NOT EXISTS note_priority ON note(priority);
    CREATE INDEX IF NOT EXISTS note_done ON note(done);
    """

final class GRDBW4: W4Engine {
    let database: GRDBDatabase
    static let (notebookId, createdAt, tag, priority, done, id) =
        (Column("notebookId"), Column("createdAt"), Column("tag"), Column("priority"), Column("done"), Column("id"))

    init(directory: String) throws {
        database = try GRDBDatabase(path: directory + "/bench.grdb.sqlite")
        try database.pool.write { db in try db.execute(sql: noteTableSQL) }
    }

    func insert(_ notes: [Note]) throws {
        try database.pool.write { db in for note in notes { try NoteRecord(note).insert(db) } }
    }

    func notebookPage(_ notebook: Int64, limit: Int) throws -> [Int64] {
        try database.pool.read { db in
            try NoteRecord.filter(Self.notebookId == notebook).order(Self.createdAt.desc, Self.id).limit(limit).fetchAll(db).map(\.id)
        }
    }

    func tagPage(_ tag: String, limit: Int) throws -> [Int64] {
        try database.pool.read { db in
            try NoteRecord.filter(Self.tag == tag).order(Self.createdAt.desc, Self.id).limit(limit).fetchAll(db).map(\.id)
        }
    }

    func topPriority(limit: Int) throws -> [Int64] {
        try database.pool.read { db in try NoteRecord.order(Self.priority.desc, Self.id).limit(limit).fetchAll(db).map(\.id) }
    }

    func count(done: Bool, priority: Int) throws -> Int {
        try database.pool.read { db in try NoteRecord.filter(Self.done == done && Self.priority == priority).fetchCount(db) }
    }

    func keysetPage(_ notebook: Int64, before: Int64?, limit: Int) throws -> [(id: Int64, createdAt: Int64)] {
        try database.pool.read { db in
            var request = NoteRecord.filter(Self.notebookId == notebook)
            if let before { request = request.filter(Self.createdAt < before) }
            return try request.order(Self.createdAt.desc, Self.id).limit(limit).fetchAll(db).map { ($0.id, $0.createdAt) }
        }
    }

    func close() throws { try database.pool.close() }
}

final class SQLiteW4: W4Engine {
    let connection: SQLiteConnection
    static let columns = "id, notebookId, createdAt, title, tag, priority, done, due"

    init(directory: String) throws {
        connection = try SQLiteConnection(path: directory + "/bench.sqlite")
        try connection.execute(noteTableSQL)
    }

    func insert(_ notes: [Note]) throws {
        try connection.transaction {
            let insert = try connection.statement("INSERT INTO note(\(Self.columns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?)")
            for note in notes {
                insert.reset()
                insert.bind(1, note.id); insert.bind(2, note.notebookId); insert.bind(3, note.createdAt); insert.bind(4, note.title)
                insert.bind(5, note.tag); insert.bind(6, Int64(note.priority)); insert.bind(7, note.done ? Int64(1) : 0)
                if let due = note.due { insert.bind(8, due) } else { sqlite3_bind_null(insert.handle, 8) }
                _ = try insert.step()
            }
        }
    }

    /// Reads every column of each row into a `Note`, as the other engines decode whole notes.
    private func notes(_ statement: SQLiteConnection.Statement) throws -> [Note] {
        var notes: [Note] = []
        while try statement.step() {
            notes.append(Note(id: statement.int64(0), notebookId: statement.int64(1), createdAt: statement.int64(2), title: statement.string(3),
                              tag: statement.string(4), priority: Int(statement.int64(5)), done: statement.int64(6) != 0,
                              due: sqlite3_column_type(statement.handle, 7) == SQLITE_NULL ? nil : statement.int64(7)))
        }
        return notes
    }

    func notebookPage(_ notebook: Int64, limit: Int) throws -> [Int64] {
        let select = try connection.statement("SELECT \(Self.columns) FROM note WHERE notebookId = ? ORDER BY createdAt DESC, id LIMIT ?")
        select.bind(1, notebook); select.bind(2, Int64(limit))
        return try notes(select).map(\.id)
    }

    func tagPage(_ tag: String, limit: Int) throws -> [Int64] {
        let select = try connection.statement("SELECT \(Self.columns) FROM note WHERE tag = ? ORDER BY createdAt DESC, id LIMIT ?")
        select.bind(1, tag); select.bind(2, Int64(limit))
        return try notes(select).map(\.id)
    }

    func topPriority(limit: Int) throws -> [Int64] {
        let select = try connection.statement("SELECT \(Self.columns) FROM note ORDER BY priority DESC, id LIMIT ?")
        select.bind(1, Int64(limit))
        return try notes(select).map(\.id)
    }

    func count(done: Bool, priority: Int) throws -> Int {
        let select = try connection.statement("SELECT COUNT(*) FROM note WHERE done = ? AND priority = ?")
        select.bind(1, done ? Int64(1) : 0); select.bind(2, Int64(priority))
        guard try select.step() else { return 0 }
        return Int(select.int64(0))
    }

    func keysetPage(_ notebook: Int64, before: Int64?, limit: Int) throws -> [(id: Int64, createdAt: Int64)] {
        let select = try connection.statement("SELECT \(Self.columns) FROM note WHERE notebookId = ? AND createdAt < ? ORDER BY createdAt DESC, id LIMIT ?")
        select.bind(1, notebook); select.bind(2, before ?? .max); select.bind(3, Int64(limit))
        return try notes(select).map { ($0.id, $0.createdAt) }
    }

    func close() throws { try connection.close() }
}

extension Runner {
    /// W4 on the engines that answer queries (strata-typed, GRDB, SQLite), each result
    /// checked against the answer computed from the data.
    func runW4() throws {
        let count = max(1_000, min(50_000, records / 20))
        progress.note("W4: generating \(count) notes in \(W4Data.notebooks) notebooks")
        let data = W4Data(count: count)
        let queries = W4Data.queries, notebooks = 20
        // The answers, computed once, outside the timed ops.
        let expected = (notebookPages: (0 ..< queries).map(data.expectedNotebookPage), tagPages: (0 ..< queries).map(data.expectedTagPage),
                        counts: (0 ..< queries).map(data.expectedCount), keysetPages: (0 ..< notebooks).map(data.expectedKeysetPages))
        for kind in engines {
            let name = kind.rawValue
            let path = try engineDirectory("W4", name)
            guard let engine = try kind.makeW4(directory: path) else { continue }
            try measure("W4", "insert", name, count: count, unit: "notes/s", alwaysRuns: true) {
                try engine.insert(data.notes); return nil
            }
            if let typed = engine as? TypedW4 { report.notes += try typed.plans(data).map { "W4 plan (strata-typed), " + $0 } }
            func check(_ op: String, _ query: Int, _ found: [Int64], _ expected: [Int64]) throws {
                guard found == expected else { throw BenchError("W4 \(name) \(op) #\(query): \(found.count) ids \(found.prefix(5))…, expected \(expected.count) ids \(expected.prefix(5))…") }
            }
            try measure("W4", "notebook page, newest first", name, count: queries, unit: "queries/s", repeated: true) {
                for q in 0 ..< queries { try check("notebook page", q, try engine.notebookPage(data.notebook(q), limit: W4Data.notebookPage), expected.notebookPages[q]) }
                return nil
            }
            try measure("W4", "first page by tag", name, count: queries, unit: "queries/s", repeated: true) {
                for q in 0 ..< queries { try check("tag page", q, try engine.tagPage(data.tag(q), limit: W4Data.tagPage), expected.tagPages[q]) }
                return nil
            }
            let top = data.expectedTopPriority
            try measure("W4", "top-50 by priority", name, count: queries, unit: "queries/s", repeated: true) {
                for q in 0 ..< queries { try check("top priority", q, try engine.topPriority(limit: W4Data.topCount), top) }
                return nil
            }
            try measure("W4", "count by two fields", name, count: queries, unit: "queries/s", repeated: true) {
                for q in 0 ..< queries {
                    let (done, priority) = data.countFilter(q)
                    let found = try engine.count(done: done, priority: priority)
                    guard found == expected.counts[q] else { throw BenchError("W4 \(name) count #\(q): \(found), expected \(expected.counts[q])") }
                }
                return nil
            }
            try measure("W4", "keyset paging", name, count: notebooks * W4Data.keysetPages, unit: "pages/s", repeated: true) {
                for q in 0 ..< notebooks {
                    var ids: [Int64] = [], before: Int64?
                    for _ in 0 ..< W4Data.keysetPages {
                        let page = try engine.keysetPage(data.notebook(q), before: before, limit: W4Data.keysetPage)
                        ids += page.map(\.id)
                        guard let last = page.last else { break }
                        before = last.createdAt
                    }
                    try check("keyset paging", q, ids, expected.keysetPages[q])
                }
                return nil
            }
            try engine.close()
            if !keep { try FileManager.default.removeItem(atPath: path) }
        }
    }
}
