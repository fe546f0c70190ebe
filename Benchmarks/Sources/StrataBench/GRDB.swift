// GRDB.swift 7 the way a Swift developer uses it: Codable records with FetchableRecord and
// PersistableRecord, a DatabasePool (WAL) set back to synchronous=FULL.
import BenchmarkSupport
import Foundation
import GRDB

struct UserRecord: Codable, FetchableRecord, PersistableRecord, UserFields {
    static let databaseTableName = "user"
    var id: Int64
    var name: String
    var email: String
    var age: Int
    var score: Double
    var createdAt: Int64
}

struct DocumentRecord: Codable, FetchableRecord, PersistableRecord {
    static let databaseTableName = "document"
    var id: Int64
    var title: String
    var body: String
    var tags: [String]   // stored as JSON text, GRDB's default for Codable arrays

    init(_ d: Document) { (id, title, body, tags) = (d.id, d.title, d.body, d.tags) }
    var document: Document { Document(id: id, title: title, body: body, tags: tags) }
}

/// A DatabasePool with durable commits. GRDB turns on WAL and silently sets
/// synchronous=NORMAL; WORKLOAD.md compares durable commits, so set FULL and check it.
final class GRDBDatabase {
    let path: String
    private(set) var pool: DatabasePool

    init(path: String) throws {
        self.path = path
        pool = try Self.open(path)
    }

    private static func open(_ path: String) throws -> DatabasePool {
        let pool = try DatabasePool(path: path)
        let synchronous = try pool.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA synchronous = FULL")
            return try Int.fetchOne(db, sql: "PRAGMA synchronous")
        }
        guard synchronous == 2 else { throw BenchError("GRDB: PRAGMA synchronous reads back \(synchronous ?? -1), not 2 (FULL)") }
        return pool
    }

    func inTransactions(count: Int, transactionSize: Int, progress: Progress, _ write: (GRDB.Database, Int) throws -> Void) throws {
        try inBatches(count: count, of: transactionSize, progress: progress) { range in
            try pool.write { db in for i in range { try write(db, i) } }
        }
    }

    func reopen() throws {
        try pool.close()
        pool = try Self.open(path)
    }

    func vacuum() throws {
        try pool.writeWithoutTransaction { db in
            try db.execute(sql: "VACUUM")
            try db.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)")
        }
    }
}

final class GRDBW1: W1Engine {
    let database: GRDBDatabase
    static let age = Column("age")

    init(directory: String) throws {
        database = try GRDBDatabase(path: directory + "/bench.grdb.sqlite")
        try database.pool.write { db in
            try db.create(table: "user", options: .ifNotExists) { t in
                t.primaryKey("id", .integer)
                t.column("name", .text).notNull()
                t.column("email", .text).notNull()
                t.column("age", .integer).notNull()
                t.column("score", .double).notNull()
                t.column("createdAt", .integer).notNull()
            }
        }
    }

    func insert(_ users: [User], transactionSize: Int, progress: Progress) throws {
        try database.inTransactions(count: users.count, transactionSize: transactionSize, progress: progress) { db, i in
            try UserRecord(users[i]).insert(db)
        }
    }

    /// `get` with a cached statement, GRDB's fast path.
    func get(_ ids: [Int64], progress: Progress) throws -> Checksum {
        try database.pool.read { db in
            let statement = try db.cachedStatement(sql: "SELECT * FROM user WHERE id = ?")
            return try lookUp(ids, progress: progress) { try UserRecord.fetchOne(statement, arguments: [$0])?.digest }
        }
    }

    /// `get` the way most GRDB code reads a record, `fetchOne(db, key:)`; and `get.in`,
    /// `inListSize` ids per query, `filter(keys:)` (`WHERE id IN (...)`).
    var getVariants: [(op: String, run: ([Int64], Progress) throws -> Checksum)] {
        [("get.fetchOne", { [database] ids, progress in
            try database.pool.read { db in
                try lookUp(ids, progress: progress) { try UserRecord.fetchOne(db, key: $0)?.digest }
            }
        }),
         ("get.in", { [database] ids, progress in
            try database.pool.read { db in
                try lookUpInLists(ids, progress: progress) { list, found in
                    let cursor = try UserRecord.filter(keys: list).fetchCursor(db)
                    while let record = try cursor.next() { found(record.id, record.digest) }
                }
            }
        })]
    }

    private func fetchAll(_ request: QueryInterfaceRequest<UserRecord>) throws -> Checksum {
        try database.pool.read { db in
            var sum = Checksum()
            let cursor = try request.fetchCursor(db)
            while let record = try cursor.next() { sum.add(record.digest) }
            return sum
        }
    }

    func scanFilter(ages: ClosedRange<Int>) throws -> Checksum {
        try fetchAll(UserRecord.filter(ages.contains(Self.age)))
    }

    func createAgeIndex() throws {
        try database.pool.write { db in try db.create(index: "user_age", on: "user", columns: ["age"]) }
    }

    func queryAgeIndex(ages: ClosedRange<Int>) throws -> Checksum { try scanFilter(ages: ages) }

    func update(_ updates: [(id: Int64, score: Double)], transactionSize: Int, progress: Progress) throws {
        try database.inTransactions(count: updates.count, transactionSize: transactionSize, progress: progress) { db, i in
            guard var record = try UserRecord.fetchOne(db, key: updates[i].id) else { throw BenchError("id \(updates[i].id) not found") }
            record.score = updates[i].score
            try record.update(db)
        }
    }

    func scanAll() throws -> Checksum { try fetchAll(UserRecord.all()) }
    func reopen() throws { try database.reopen() }

    func compact() throws -> Bool {
        try database.vacuum()
        return true
    }

    func close() throws { try database.pool.close() }
}

final class GRDBW2: W2Engine {
    let database: GRDBDatabase

    init(directory: String) throws {
        database = try GRDBDatabase(path: directory + "/bench.grdb.sqlite")
        try database.pool.write { db in
            try db.create(table: "document", options: .ifNotExists) { t in
                t.primaryKey("id", .integer)
                t.column("title", .text).notNull()
                t.column("body", .text).notNull()
                t.column("tags", .text).notNull()
            }
        }
    }

    func insert(_ documents: [Document], transactionSize: Int, progress: Progress) throws {
        try database.inTransactions(count: documents.count, transactionSize: transactionSize, progress: progress) { db, i in
            try DocumentRecord(documents[i]).insert(db)
        }
    }

    func get(_ ids: [Int64], progress: Progress) throws -> Checksum {
        try database.pool.read { db in
            let statement = try db.cachedStatement(sql: "SELECT * FROM document WHERE id = ?")
            return try lookUp(ids, progress: progress) { try DocumentRecord.fetchOne(statement, arguments: [$0])?.document.digest }
        }
    }

    func scanFilter(tag: String) throws -> Checksum {
        try database.pool.read { db in
            var sum = Checksum()
            let ids = try Int64.fetchCursor(db, DocumentRecord.select(Column("id")).filter(Column("tags").like("%\"\(tag)\"%")))
            while let id = try ids.next() { sum.add(UInt64(id)) }
            return sum
        }
    }

    func compact() throws -> Bool {
        try database.vacuum()
        return true
    }

    func close() throws { try database.pool.close() }
}
