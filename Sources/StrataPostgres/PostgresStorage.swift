import Foundation
import Logging
import NIOCore
import NIOPosix
import PostgresNIO
import Strata
import StrataSQL

/// `Storage` on a PostgreSQL server through postgres-nio: the same models, queries, catalog
/// rules and errors as a Strata file, in tables on a server many app processes share (see
/// `SQLStorage` for the layout).
///
/// ```swift
/// let storage = try PostgresStorage(url: "postgres://app:secret@db.internal/app")
/// try storage.create(User(id: 1, name: "Ada", email: "ada@example.com", age: 36))
/// ```
///
/// **Transactions.** A read runs in a `REPEATABLE READ READ ONLY` transaction: one snapshot,
/// as on every backend. A write runs in a `READ COMMITTED` transaction that first takes a
/// transaction-scoped advisory lock on the storage's schema, so Strata writers (in this
/// process and every other) run one at a time, as on a Strata file, and each statement sees
/// every earlier commit: no serialization failures to retry. Programs writing the tables
/// without Strata bypass that lock; let them read.
///
/// **Connections.** A pool of up to `maxConnections` connections, opened when first needed
/// and reused; a caller waits for a free one. Each transaction holds one connection for its
/// duration. The storage is `Sendable`: share one per process.
public final class PostgresStorage: SQLStorage, @unchecked Sendable {
    /// The schema holding this storage's tables.
    public let schema: String

    /// Connects to the server `url` names: `postgres://user:password@host:port/database`,
    /// or a Unix socket with `postgres://user@/database?host=/var/run/postgresql`.
    ///
    /// - Parameters:
    ///   - url: the server, database and credentials.
    ///   - schema: the PostgreSQL schema for the tables (created when missing): one per app
    ///     or tenant. Default `public`.
    ///   - maxConnections: the pool's size.
    /// - Throws: `PostgresStorageError.invalidURL`, or the server's error when it cannot be
    ///   reached or refuses the login.
    public convenience init(url: String, schema: String = "public", maxConnections: Int = 8) throws {
        try self.init(configuration: try PostgresStorageURL.configuration(url), schema: schema, maxConnections: maxConnections)
    }

    /// Connects with a postgres-nio configuration (TLS and timeouts are set there).
    ///
    /// - Parameters:
    ///   - configuration: The server, credentials, TLS and timeouts.
    ///   - schema: The PostgreSQL schema the tables live in (created when missing).
    ///   - maxConnections: The most connections the storage opens at once.
    /// - Throws: `PSQLError` when the server cannot be reached or the tables cannot be created.
    public init(configuration: PostgresConnection.Configuration, schema: String = "public", maxConnections: Int = 8) throws {
        self.schema = schema
        let pool = PostgresPool(configuration: configuration, schema: schema, maxConnections: max(1, maxConnections))
        _ = try pool.withConnection { connection in
            try connection.run("CREATE SCHEMA IF NOT EXISTS \(SQLNames.quoted(schema))", [])
        }
        try super.init(database: PostgresDatabaseAdapter(pool: pool, lockKey: Int64(bitPattern: XXH64.hash(Array(("strata:" + schema).utf8)))))
    }
}

/// Errors of `PostgresStorage` itself (the server's own come as postgres-nio's `PSQLError`).
public enum PostgresStorageError: Error, Sendable, Equatable, DescribedError {
    case invalidURL(String, reason: String)
    case closed
    /// The server refused a statement, or the connection failed.
    case server(message: String, sqlState: String?, statement: String)

    public var description: String {
        switch self {
        case .invalidURL(let url, let reason): "'\(url)' is not a PostgreSQL URL (\(reason)); write postgres://user:password@host:port/database"
        case .closed: "the storage is closed; open a new PostgresStorage"
        case .server(let message, let state, let statement): "PostgreSQL: \(message)" + (state.map { " (SQLSTATE \($0))" } ?? "") + " in: \(statement)"
        }
    }

    /// postgres-nio's error with the server's message (its own description hides it).
    init(_ error: PSQLError, sql: String) {
        let message = error.serverInfo?[.message] ?? "\(error.code)" + (error.underlying.map { ": \($0)" } ?? "")
        self = .server(message: message, sqlState: error.serverInfo?[.sqlState], statement: sql)
    }
}

/// `postgres://` URLs as postgres-nio configurations.
enum PostgresStorageURL {
    static func configuration(_ url: String) throws -> PostgresConnection.Configuration {
        guard let components = URLComponents(string: url), ["postgres", "postgresql"].contains(components.scheme ?? "") else {
            throw PostgresStorageError.invalidURL(url, reason: "the scheme must be postgres or postgresql")
        }
        let database = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : components.path
        guard let user = components.user, !user.isEmpty else { throw PostgresStorageError.invalidURL(url, reason: "no user name") }
        let password = components.password?.removingPercentEncoding
        if let socket = components.queryItems?.first(where: { $0.name == "host" })?.value, socket.hasPrefix("/") {
            return .init(unixSocketPath: socket + "/.s.PGSQL.\(components.port ?? 5432)", username: user, password: password, database: database.isEmpty ? nil : database)
        }
        guard let host = components.host, !host.isEmpty else { throw PostgresStorageError.invalidURL(url, reason: "no host") }
        return .init(host: host, port: components.port ?? 5432, username: user, password: password, database: database.isEmpty ? nil : database, tls: .disable)
    }
}

/// Connections opened on demand, reused, at most `maxConnections` at once.
final class PostgresPool: Sendable {
    let configuration: PostgresConnection.Configuration
    let maxConnections: Int
    private let state = Mutex<(idle: [PostgresConnection], closed: Bool)>(([], false))
    private let slots: DispatchSemaphore
    private let nextID = Mutex(0)
    static let logger = Logger(label: "strata.postgres")

    init(configuration: PostgresConnection.Configuration, schema: String, maxConnections: Int) {
        var configuration = configuration
        // Every connection's unqualified names are in the storage's schema.
        configuration.options.additionalStartupParameters.append(("search_path", SQLNames.quoted(schema)))
        self.configuration = configuration
        self.maxConnections = maxConnections
        slots = DispatchSemaphore(value: maxConnections)
    }

    /// Runs `body` with a connection of the pool; a connection that failed is closed rather
    /// than reused.
    func withConnection<R>(_ body: (PostgresConnection) throws -> R) throws -> R {
        slots.wait()
        defer { slots.signal() }
        let idle = try state.withLock { state -> PostgresConnection? in
            if state.closed { throw PostgresStorageError.closed }
            return state.idle.popLast()
        }
        let connection = try idle ?? PostgresConnection.connect(
            on: MultiThreadedEventLoopGroup.singleton.any(), configuration: configuration,
            id: nextID.withLock { $0 += 1; return $0 }, logger: Self.logger).wait()
        do {
            let result = try body(connection)
            giveBack(connection)
            return result
        } catch {
            if connection.isClosed { try? connection.close().wait() } else { giveBack(connection) }
            throw error
        }
    }

    private func giveBack(_ connection: PostgresConnection) {
        let keep = state.withLock { state -> Bool in
            guard !state.closed, !connection.isClosed else { return false }
            state.idle.append(connection)
            return true
        }
        if !keep { try? connection.close().wait() }
    }

    /// A pool released without `close()` closes its connections (postgres-nio requires a
    /// connection be closed before it is released: each is kept until its close completes).
    deinit {
        for connection in state.withLock({ $0.idle }) {
            connection.close().whenComplete { _ in _ = connection }
        }
    }

    func close() throws {
        let idle = state.withLock { state -> [PostgresConnection] in
            state.closed = true
            defer { state.idle = [] }
            return state.idle
        }
        for connection in idle { try connection.close().wait() }
    }
}

import Synchronization

/// PostgreSQL as `SQLDatabase`: transactions on pooled connections.
final class PostgresDatabaseAdapter: SQLDatabase {
    let pool: PostgresPool
    /// The advisory lock that serializes this schema's Strata writers.
    let lockKey: Int64
    /// The connection listening for other storages' commits, once observed.
    let listener = Mutex<PostgresConnection?>(nil)

    init(pool: PostgresPool, lockKey: Int64) {
        (self.pool, self.lockKey) = (pool, lockKey)
    }

    /// Released without `close()`: the listening connection is closed (postgres-nio requires it).
    deinit {
        if let connection = listener.withLock({ $0.take() }) { connection.close().whenComplete { _ in _ = connection } }
    }

    var dialect: SQLDialect {
        SQLDialect(name: "PostgreSQL", bytesType: "BYTEA", maxIdentifierBytes: 63, placeholder: { "$\($0)" }) { type in
            switch type {
            case .integer: "BIGINT"
            case .floating: "DOUBLE PRECISION"
            case .bool: "BOOLEAN"
            case .bytes: "BYTEA"
            case .date: "TIMESTAMPTZ"
            case .uuid: "UUID"
            default: "TEXT"
            }
        }
    }

    func read<R>(_ body: (any SQLConnection) throws -> R) throws -> R {
        try transaction("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY") { connection in
            // The snapshot is taken by the first statement, not BEGIN: take it now, so the
            // transaction sees the state of its start, as on every backend.
            try connection.execute("SELECT 1", [])
            return try body(connection)
        }
    }

    @discardableResult
    func write<R>(_ body: (any SQLConnection) throws -> R) throws -> R {
        try transaction("BEGIN ISOLATION LEVEL READ COMMITTED") { connection in
            try connection.execute("SELECT pg_advisory_xact_lock($1)", [.integer(lockKey)])
            return try body(connection)
        }
    }

    private func transaction<R>(_ begin: String, _ body: (any SQLConnection) throws -> R) throws -> R {
        try pool.withConnection { connection in
            try connection.run(begin, [])
            do {
                let result = try body(PostgresSQLConnection(connection: connection))
                try connection.run("COMMIT", [])
                return result
            } catch {
                _ = try? connection.run("ROLLBACK", [])
                throw error
            }
        }
    }

    func close() throws {
        try pool.close()
        if let listener = listener.withLock({ $0.take() }) { try? listener.close().wait() }
    }

    /// The channel this schema's commits are announced on.
    var channel: String { "strata_" + String(UInt64(bitPattern: lockKey), radix: 16) }

    /// `NOTIFY channel, 'storage-id collection…'` (names separated by NUL-free newlines,
    /// JSON-escaped): PostgreSQL delivers it when, and only if, the transaction commits.
    func announce(_ collections: Set<String>, from storage: String, in connection: any SQLConnection) throws {
        // A payload is at most 8000 bytes: many names go in several notifications (a name
        // is at most 120 bytes).
        var chunks: [[String]] = [[]]
        var size = 0
        for name in collections.sorted() {
            if size + name.utf8.count > 6_000 { (chunks, size) = (chunks + [[]], 0) }
            chunks[chunks.count - 1].append(name)
            size += name.utf8.count + 8
        }
        for chunk in chunks {
            let payload = String(decoding: try JSONEncoder().encode([storage] + chunk), as: UTF8.self)
            try connection.execute("SELECT pg_notify($1, $2)", [.text(channel), .text(payload)])
        }
    }

    /// One connection outside the pool, listening on the channel.
    func listen(_ handler: @escaping @Sendable (_ storage: String, _ collections: Set<String>) -> Void) throws {
        let connection = try PostgresConnection.connect(on: MultiThreadedEventLoopGroup.singleton.any(), configuration: pool.configuration,
                                                        id: 0, logger: PostgresPool.logger).wait()
        connection.addListener(channel: channel) { _, notification in
            guard let names = try? JSONDecoder().decode([String].self, from: Data(notification.payload.utf8)), let storage = names.first else { return }
            handler(storage, Set(names.dropFirst()))
        }
        try connection.run("LISTEN \(channel)", [])
        listener.withLock { $0 = connection }
    }
}

struct PostgresSQLConnection: SQLConnection {
    let connection: PostgresConnection

    func execute(_ sql: String, _ arguments: [SQLValue]) throws {
        try connection.run(sql, arguments)
    }

    func query(_ sql: String, _ arguments: [SQLValue], _ body: (any SQLRow) throws -> Bool) throws {
        for row in try connection.run(sql, arguments).rows {
            guard try body(PostgresSQLRow(row: PostgresRandomAccessRow(row))) else { return }
        }
    }
}

extension PostgresConnection {
    /// Runs a statement and collects its rows; the caller's thread waits (never an event loop's).
    @discardableResult
    func run(_ sql: String, _ arguments: [SQLValue]) throws -> PostgresQueryResult {
        var bindings = PostgresBindings(capacity: arguments.count)
        for argument in arguments {
            switch argument {
            case .null: bindings.appendNull()
            case .integer(let i): bindings.append(i)
            case .real(let d): bindings.append(d)
            // PostgreSQL text cannot hold NUL: such a string's readable column is NULL (the
            // record column holds it whole).
            case .text(let s) where s.utf8.contains(0): bindings.appendNull()
            case .text(let s): bindings.append(s)
            case .blob(let bytes): bindings.append(ByteBuffer(bytes: bytes))
            case .bool(let b): bindings.append(b)
            case .date(let date): bindings.append(date)
            case .uuid(let uuid): bindings.append(uuid)
            }
        }
        do {
            return try query(PostgresQuery(unsafeSQL: sql, binds: bindings), logger: PostgresPool.logger).wait()
        } catch let error as PSQLError {
            throw PostgresStorageError(error, sql: sql)
        }
    }
}

struct PostgresSQLRow: SQLRow {
    let row: PostgresRandomAccessRow

    func blob(at column: Int) throws -> [UInt8]? {
        guard let bytes = row[column].bytes else { return nil }
        return Array(bytes.readableBytesView)
    }

    func integer(at column: Int) throws -> Int64? {
        guard row[column].bytes != nil else { return nil }
        return try row[column].decode(Int64.self)
    }
}
