import Foundation
import Strata
import Synchronization

/// `Storage` on a SQL database: a table per collection, so the same models, queries and app
/// code run on a database other programs can read. `SQLiteStorage` (GRDB) and
/// `PostgresStorage` (postgres-nio) are this storage on their database.
///
/// Each collection is a table named after it:
///
/// | column | holds |
/// | --- | --- |
/// | `strata_key` (primary key) | the primary key's key encoding (`Key`): the file's order |
/// | `strata_record` | the record, encoded as in a Strata file: what every read decodes |
/// | `strata_ix_…` | one per index: its key encoding, under a SQL index (`UNIQUE` for a unique one) |
/// | one per top-level scalar field | the field's value in a native column type, for people and SQL tools |
///
/// Conditions on the primary key's and each index's first field become SQL ranges over
/// the key columns, which compare byte by byte exactly as the Strata file orders keys (NaN,
/// ±0, nil, strings), so every backend returns the same rows; other conditions, and sorts
/// SQL cannot order the same way, run in Swift. `explain` shows the statement and what is
/// left to Swift. The catalog (`strata_catalog`) is the Strata file's, with its rules.
open class SQLStorage: Storage, @unchecked Sendable {
    /// The SQL database underneath.
    public let database: any SQLDatabase
    let observers = CommitObservers()
    /// The last catalog entry decoded per collection, with its stored text.
    private let decoded = Mutex<[String: (text: [UInt8], state: CollectionState)]>([:])
    /// This storage's id: names its open write transaction in the thread's dictionary, and
    /// its commits' announcements (which it does not hear as another's).
    private let id: String
    private let writingKey: String
    /// Whether the database is listening for other storages' commits (from the first observer on).
    private let listening = Mutex(false)

    /// A storage on `database`; creates the catalog table when it is missing.
    /// - Throws: the database's error when it cannot create the table.
    /// - Parameter database: The SQL database, through its adapter.
    public init(database: any SQLDatabase) throws {
        self.database = database
        id = UUID().uuidString
        writingKey = "strata.sql.writing." + id
        try database.write { connection in
            try connection.execute("CREATE TABLE IF NOT EXISTS \(SQLNames.catalogTable) (collection TEXT PRIMARY KEY, entry TEXT NOT NULL)", [])
        }
    }

    /// Runs `body` on a consistent snapshot.
    /// - Throws: what `body` or the storage throws.
    /// - Parameter body: Reads through the reader it is given.
    /// - Returns: What `body` returns.
    public final func read<R>(_ body: (any StorageReader) throws -> R) throws -> R {
        try checkNotWriting()
        return try database.read { try body(SQLReader(storage: self, connection: $0)) }
    }

    /// Runs `body` in one write transaction: committed when it returns, rolled back when it throws.
    /// - Throws: what `body` or the storage throws; nothing is committed then.
    /// - Parameter body: Writes through the writer it is given.
    /// - Returns: What `body` returns.
    @discardableResult
    public final func write<R>(_ body: (any StorageWriter) throws -> R) throws -> R {
        try checkNotWriting()
        Thread.current.threadDictionary[writingKey] = true
        defer { Thread.current.threadDictionary[writingKey] = nil }
        var changed: Set<String> = []
        let result = try database.write { connection in
            let writer = SQLWriter(storage: self, connection: connection)
            let result = try body(writer)
            changed = try writer.finish()
            if !changed.isEmpty { try database.announce(changed, from: id, in: connection) }
            return result
        }
        observers.committed(changed)
        return result
    }

    /// A transaction of this storage is open on this thread: a nested one would wait for
    /// the database's writer (itself), so it is refused, as on every backend.
    private func checkNotWriting() throws {
        if Thread.current.threadDictionary[writingKey] != nil { throw StorageError.nestedTransaction }
    }

    /// Releases the storage; later calls fail with a closed-storage error.
    ///
    /// - Throws: The database's error while closing.
    public func close() throws {
        try database.close()
        observers.close()
    }

    /// Calls `observer` after each commit of this storage, and — where the database tells of
    /// them (PostgreSQL) — of every other storage on the same tables, in any process.
    ///
    /// - Parameter observer: Called after each commit, then once with `.closed`.
    /// - Returns: The registration; observing stops when it is cancelled or released.
    public func observeCommits(_ observer: @escaping @Sendable (CommitEvent) -> Void) -> CommitObservation {
        let observation = observers.add(observer)
        let start = listening.withLock { started in
            defer { started = true }
            return !started
        }
        if start {
            let (observers, id) = (self.observers, self.id)
            do {
                try database.listen { storage, collections in
                    if storage != id { observers.committed(collections) }
                }
            } catch {
                listening.withLock { $0 = false }
                ListenFailure.report(error)
            }
        }
        return observation
    }

    /// How many commit observers are registered.
    public var activeObservers: Int { observers.count }

    /// The collection's catalog entry as `connection`'s transaction sees it, or nil.
    func collection(_ name: String, in connection: any SQLConnection) throws -> CollectionState? {
        var text: [UInt8]?
        try connection.query("SELECT entry FROM \(SQLNames.catalogTable) WHERE collection = \(database.dialect.placeholder(1))", [.text(name)]) { row in
            text = try row.blob(at: 0)
            return false
        }
        guard let text else { return nil }
        if let cached = decoded.withLock({ $0[name] }), cached.text == text { return cached.state }
        let state = CollectionState(try CatalogEntry.decode(text, collection: name))
        decoded.withLock { $0[name] = (text, state) }
        return state
    }
}

extension SQLStorage {
    // The async forms (see `Storage`): re-declared so a call on this type does not pick the
    // synchronous ones in async code.
    /// `Storage.read(_:)` (async), declared on the class so that calls on it choose it in async code.
    ///
    /// - Parameter body: Reads through the reader it is given, on a dispatch queue.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` or the storage throws.
    public func read<R: Sendable>(_ body: @escaping @Sendable (any StorageReader) throws -> R) async throws -> R {
        try await offload { try self.read(body) }
    }

    /// `Storage.write(_:)` (async), declared on the class for the same reason.
    ///
    /// - Parameter body: Writes through the writer it is given, on a dispatch queue.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` or the storage throws; nothing is committed then.
    @discardableResult
    public func write<R: Sendable>(_ body: @escaping @Sendable (any StorageWriter) throws -> R) async throws -> R {
        try await offload { try self.write(body) }
    }
}

/// A database that cannot listen leaves observation in-process; said once, on stderr.
enum ListenFailure {
    static func report(_ error: any Error) {
        FileHandle.standardError.write(Data("strata: cannot listen for other processes' commits (\(error)); observation sees this process's commits only\n".utf8))
    }
}
