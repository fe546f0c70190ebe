import Foundation
import GRDB
import Strata
import StrataSQL
import Synchronization

/// `Storage` on a SQLite database through GRDB: the same models, queries, catalog rules and
/// errors as a Strata file, in tables any SQLite tool reads (see `SQLStorage` for the layout).
///
/// ```swift
/// let storage = try SQLiteStorage(path: "app.sqlite")   // instead of StrataStorage(path:)
/// try storage.create(User(id: 1, name: "Ada", email: "ada@example.com", age: 36))
/// print(try storage.explain(User.filter(\.age > 30)))   // the SQL, and what runs in Swift
/// ```
///
/// A file opens as a GRDB `DatabasePool` in WAL mode: reads run on snapshots beside the one
/// writer, and other processes may open the same file (a writer waits up to
/// `busyTimeout` for another's transaction). `SQLiteStorage()` is a private in-memory database.
public final class SQLiteStorage: SQLStorage, @unchecked Sendable {
    /// GRDB's handle, for SQL of the app's own next to Strata's tables.
    public let writer: any DatabaseWriter

    /// Opens (creating when missing) the SQLite file at `path`.
    /// - Throws: GRDB's `DatabaseError` when the file cannot be opened.
    /// - Parameters:
    ///   - path: The file's path.
    ///   - busyTimeout: How long a write waits for another process's lock, in seconds.
    public convenience init(path: String, busyTimeout: TimeInterval = 5) throws {
        var configuration = Configuration()
        configuration.busyMode = .timeout(busyTimeout)
        try self.init(writer: try DatabasePool(path: path, configuration: configuration))
    }

    /// A new, empty in-memory SQLite database, gone when the storage is released.
    ///
    /// - Throws: GRDB's `DatabaseError` when the catalog table cannot be created.
    public convenience init() throws {
        try self.init(writer: try DatabaseQueue())
    }

    /// A storage on a database GRDB has opened.
    ///
    /// - Parameter writer: A GRDB `DatabaseQueue` or `DatabasePool`.
    /// - Throws: GRDB's `DatabaseError` when the catalog table cannot be created.
    public init(writer: any DatabaseWriter) throws {
        self.writer = writer
        try writer.write { try SQLiteCommitLog.create(in: $0) }
        try super.init(database: GRDBDatabase(writer: writer))
    }
}

/// GRDB as `SQLDatabase`.
struct GRDBDatabase: SQLDatabase {
    let writer: any DatabaseWriter
    /// Polls for other storages' commits while this storage has observers.
    private let poller = PollerSlot()

    private final class PollerSlot: Sendable {
        let value = Mutex<SQLiteCommitPoller?>(nil)
    }

    init(writer: any DatabaseWriter) { self.writer = writer }

    /// How often an observed storage looks for other storages' commits on its file.
    static let pollInterval = Duration.milliseconds(20)

    func announce(_ collections: Set<String>, from storage: String, in connection: any SQLConnection) throws {
        guard let connection = connection as? GRDBConnection else { return }
        try SQLiteCommitLog.append(collections, from: storage, in: connection.db)
    }

    /// Polls the file for other connections' commits; an in-memory database has no others.
    func listen(_ handler: @escaping @Sendable (_ storage: String, _ collections: Set<String>) -> Void) throws {
        guard let pool = writer as? DatabasePool else { return }
        let started = try SQLiteCommitPoller(path: pool.path, interval: Self.pollInterval, handler: handler)
        poller.value.withLock { $0 = started }
    }

    var dialect: SQLDialect {
        SQLDialect(name: "SQLite", bytesType: "BLOB", maxIdentifierBytes: nil, placeholder: { _ in "?" }) { type in
            switch type {
            case .integer: "INTEGER"
            case .floating: "REAL"
            case .bool: "BOOLEAN"
            case .bytes, .uuid: "BLOB"
            case .date: "DATETIME"
            default: "TEXT"
            }
        }
    }

    func read<R>(_ body: (any SQLConnection) throws -> R) throws -> R {
        try writer.read { try body(GRDBConnection(db: $0)) }
    }

    @discardableResult
    func write<R>(_ body: (any SQLConnection) throws -> R) throws -> R {
        try writer.write { try body(GRDBConnection(db: $0)) }
    }

    func close() throws {
        poller.value.withLock { $0.take() }?.stop()
        if let pool = writer as? DatabasePool { try pool.close() } else if let queue = writer as? DatabaseQueue { try queue.close() }
    }
}

struct GRDBConnection: SQLConnection {
    let db: Database

    func execute(_ sql: String, _ arguments: [SQLValue]) throws {
        try db.execute(sql: sql, arguments: StatementArguments(arguments.map(\.databaseValue)))
    }

    func query(_ sql: String, _ arguments: [SQLValue], _ body: (any SQLRow) throws -> Bool) throws {
        let rows = try Row.fetchCursor(db, sql: sql, arguments: StatementArguments(arguments.map(\.databaseValue)))
        while let row = try rows.next() {
            guard try body(GRDBRow(row: row)) else { return }
        }
    }
}

struct GRDBRow: SQLRow {
    let row: Row

    func blob(at column: Int) throws -> [UInt8]? {
        let value: DatabaseValue = row[column]
        switch value.storage {
        case .null: return nil
        case .blob(let data): return Array(data)
        case .string(let string): return Array(string.utf8)
        default: throw DatabaseError(message: "column \(column) holds \(value), not bytes")
        }
    }

    func integer(at column: Int) throws -> Int64? {
        let value: DatabaseValue = row[column]
        switch value.storage {
        case .null: return nil
        case .int64(let i): return i
        default: throw DatabaseError(message: "column \(column) holds \(value), not an integer")
        }
    }
}

extension SQLValue {
    /// The value in GRDB's conventions (dates as its text format, UUIDs as 16 bytes), so
    /// GRDB records decode the readable columns.
    var databaseValue: DatabaseValue {
        switch self {
        case .null: .null
        case .integer(let i): i.databaseValue
        case .real(let d): d.databaseValue
        case .text(let s): s.databaseValue
        case .blob(let bytes): Data(bytes).databaseValue
        case .bool(let b): b.databaseValue
        case .date(let date): date.databaseValue
        case .uuid(let uuid): uuid.databaseValue
        }
    }
}
