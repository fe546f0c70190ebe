// SQLite 3 through its C API (the system library, via GRDB's GRDBSQLite module): WAL,
// synchronous=FULL, prepared statements, one table per workload.
import BenchmarkSupport
import Foundation
import GRDBSQLite

/// One SQLite connection with the pragmas WORKLOAD.md names.
final class SQLiteConnection {
    let path: String
    private(set) var db: OpaquePointer?
    private var statements: [String: OpaquePointer] = [:]

    init(path: String) throws {
        self.path = path
        try open()
    }

    private func open() throws {
        try check(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nil))
        try execute("PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL")
    }

    func execute(_ sql: String) throws {
        // A statement left on a row counts as in progress and blocks VACUUM and COMMIT.
        for statement in statements.values { sqlite3_reset(statement) }
        var message: UnsafeMutablePointer<CChar>?
        let rc = sqlite3_exec(db, sql, nil, nil, &message)
        if rc != SQLITE_OK {
            defer { sqlite3_free(message) }
            throw BenchError("SQLite: \(message.map { String(cString: $0) } ?? "error \(rc)") in \(sql)")
        }
    }

    /// A prepared statement, prepared once per connection and reset before reuse.
    func statement(_ sql: String) throws -> Statement {
        if let cached = statements[sql] {
            sqlite3_reset(cached)
            sqlite3_clear_bindings(cached)
            return Statement(handle: cached, connection: self)
        }
        var handle: OpaquePointer?
        try check(sqlite3_prepare_v3(db, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &handle, nil))
        statements[sql] = handle
        return Statement(handle: handle!, connection: self)
    }

    /// Runs `body` between BEGIN and COMMIT (ROLLBACK when it throws).
    func transaction(_ body: () throws -> Void) throws {
        try execute("BEGIN")
        do { try body() } catch {
            try? execute("ROLLBACK")
            throw error
        }
        try execute("COMMIT")
    }

    func reopen() throws {
        try close()
        try open()
    }

    func close() throws {
        for statement in statements.values { sqlite3_finalize(statement) }
        statements = [:]
        try check(sqlite3_close(db))
        db = nil
    }

    func check(_ rc: Int32) throws {
        guard rc == SQLITE_OK || rc == SQLITE_DONE || rc == SQLITE_ROW else {
            throw BenchError("SQLite: \(String(cString: sqlite3_errmsg(db))) (\(rc))")
        }
    }

    struct Statement {
        let handle: OpaquePointer
        let connection: SQLiteConnection

        /// Makes the statement ready to run again (bindings are replaced by the next binds).
        func reset() { sqlite3_reset(handle) }

        func bind(_ index: Int32, _ value: Int64) { sqlite3_bind_int64(handle, index, value) }
        func bind(_ index: Int32, _ value: Double) { sqlite3_bind_double(handle, index, value) }
        func bind(_ index: Int32, _ value: String) { sqlite3_bind_text(handle, index, value, -1, sqliteTransient) }

        /// Steps once; true when a row is available.
        func step() throws -> Bool {
            let rc = sqlite3_step(handle)
            try connection.check(rc)
            return rc == SQLITE_ROW
        }

        func int64(_ column: Int32) -> Int64 { sqlite3_column_int64(handle, column) }
        func double(_ column: Int32) -> Double { sqlite3_column_double(handle, column) }
        func string(_ column: Int32) -> String {
            guard let text = sqlite3_column_text(handle, column) else { return "" }
            return String(decoding: UnsafeRawBufferPointer(start: text, count: Int(sqlite3_column_bytes(handle, column))), as: UTF8.self)
        }
    }
}

/// SQLITE_TRANSIENT: SQLite copies the bound text.
private let sqliteTransient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

/// Runs `count` writes in transactions of `transactionSize`.
func inTransactions(_ connection: SQLiteConnection, count: Int, transactionSize: Int, progress: Progress, _ write: (Int) throws -> Void) throws {
    try inBatches(count: count, of: transactionSize, progress: progress) { range in
        try connection.transaction { for i in range { try write(i) } }
    }
}

final class SQLiteW1: W1Engine {
    let connection: SQLiteConnection
    static let columns = "id, name, email, age, score, createdAt"

    init(directory: String) throws {
        connection = try SQLiteConnection(path: directory + "/bench.sqlite")
        try connection.execute("""
            CREATE TABLE IF NOT EXISTS user(id INTEGER PRIMARY KEY, name TEXT NOT NULL, email TEXT NOT NULL,
              age INTEGER NOT NULL, score REAL NOT NULL, createdAt INTEGER NOT NULL)
            """)
    }

    func insert(_ users: [User], transactionSize: Int, progress: Progress) throws {
        let insert = try connection.statement("INSERT INTO user(\(Self.columns)) VALUES (?, ?, ?, ?, ?, ?)")
        try inTransactions(connection, count: users.count, transactionSize: transactionSize, progress: progress) { i in
            let user = users[i]
            insert.reset()
            insert.bind(1, user.id)
            insert.bind(2, user.name)
            insert.bind(3, user.email)
            insert.bind(4, Int64(user.age))
            insert.bind(5, user.score)
            insert.bind(6, user.createdAt)
            _ = try insert.step()
        }
    }

    private func user(_ row: SQLiteConnection.Statement) -> User {
        User(id: row.int64(0), name: row.string(1), email: row.string(2), age: Int(row.int64(3)), score: row.double(4), createdAt: row.int64(5))
    }

    func get(_ ids: [Int64], progress: Progress) throws -> Checksum {
        let select = try connection.statement("SELECT \(Self.columns) FROM user WHERE id = ?")
        return try lookUp(ids, progress: progress) { id in
            select.reset()
            select.bind(1, id)
            return try select.step() ? user(select).digest : nil
        }
    }

    private func selectAll(_ sql: String, bind: (SQLiteConnection.Statement) -> Void = { _ in }) throws -> Checksum {
        let select = try connection.statement(sql)
        bind(select)
        var sum = Checksum()
        while try select.step() { sum.add(user(select)) }
        return sum
    }

    func scanFilter(ages: ClosedRange<Int>) throws -> Checksum {
        try selectAll("SELECT \(Self.columns) FROM user WHERE age BETWEEN ? AND ?") {
            $0.bind(1, Int64(ages.lowerBound))
            $0.bind(2, Int64(ages.upperBound))
        }
    }

    func createAgeIndex() throws { try connection.execute("CREATE INDEX user_age ON user(age)") }

    func queryAgeIndex(ages: ClosedRange<Int>) throws -> Checksum {
        // The same statement as scanFilter: with the index in place SQLite's planner uses it.
        try scanFilter(ages: ages)
    }

    func update(_ updates: [(id: Int64, score: Double)], transactionSize: Int, progress: Progress) throws {
        let update = try connection.statement("UPDATE user SET score = ? WHERE id = ?")
        try inTransactions(connection, count: updates.count, transactionSize: transactionSize, progress: progress) { i in
            update.reset()
            update.bind(1, updates[i].score)
            update.bind(2, updates[i].id)
            _ = try update.step()
        }
    }

    func scanAll() throws -> Checksum { try selectAll("SELECT \(Self.columns) FROM user") }

    func reopen() throws { try connection.reopen() }

    func compact() throws -> Bool {
        try connection.execute("VACUUM; PRAGMA wal_checkpoint(TRUNCATE)")
        return true
    }

    func close() throws { try connection.close() }
}

final class SQLiteW2: W2Engine {
    let connection: SQLiteConnection

    init(directory: String) throws {
        connection = try SQLiteConnection(path: directory + "/bench.sqlite")
        try connection.execute("CREATE TABLE IF NOT EXISTS document(id INTEGER PRIMARY KEY, title TEXT NOT NULL, body TEXT NOT NULL, tags TEXT NOT NULL)")
    }

    func insert(_ documents: [Document], transactionSize: Int, progress: Progress) throws {
        let insert = try connection.statement("INSERT INTO document(id, title, body, tags) VALUES (?, ?, ?, ?)")
        try inTransactions(connection, count: documents.count, transactionSize: transactionSize, progress: progress) { i in
            let doc = documents[i]
            insert.reset()
            insert.bind(1, doc.id)
            insert.bind(2, doc.title)
            insert.bind(3, doc.body)
            insert.bind(4, doc.tags.joined(separator: ","))
            _ = try insert.step()
        }
    }

    func get(_ ids: [Int64], progress: Progress) throws -> Checksum {
        let select = try connection.statement("SELECT id, title, body, tags FROM document WHERE id = ?")
        return try lookUp(ids, progress: progress) { id in
            select.reset()
            select.bind(1, id)
            guard try select.step() else { return nil }
            let tags = select.string(3).split(separator: ",").map(String.init)
            return Document(id: select.int64(0), title: select.string(1), body: select.string(2), tags: tags).digest
        }
    }

    func scanFilter(tag: String) throws -> Checksum {
        let select = try connection.statement("SELECT id FROM document WHERE instr(',' || tags || ',', ?) > 0")
        select.bind(1, "," + tag + ",")
        var sum = Checksum()
        while try select.step() { sum.add(UInt64(select.int64(0))) }
        return sum
    }

    func compact() throws -> Bool {
        try connection.execute("VACUUM; PRAGMA wal_checkpoint(TRUNCATE)")
        return true
    }

    func close() throws { try connection.close() }
}
