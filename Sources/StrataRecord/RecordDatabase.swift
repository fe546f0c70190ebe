import Foundation
import Strata
import Synchronization

/// Where records are stored and read: a database, or a transaction open on one. Every record
/// operation takes one (`save(on:)`), defaulting to `RecordDatabase.default`.
public protocol RecordContext: Sendable {
    /// Runs `body` in a write transaction (the context's own, when it is one).
    ///
    /// - Parameter body: Writes through the writer it is given.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` or the storage throws; nothing is committed then.
    @discardableResult
    func write<R>(_ body: (any StorageWriter) throws -> R) throws -> R
    /// Runs `body` on a consistent view (a transaction's own, with its writes).
    /// - Parameter body: Reads through the reader it is given.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` or the storage throws.
    func read<R>(_ body: (any StorageReader) throws -> R) throws -> R
}

/// Where records live: any `Storage` — a Strata file, memory in tests, or another backend.
/// The app chooses the file's location (the article's Caches vs Documents):
///
/// ```swift
/// let caches = FileManager.default.urls(for: .cachesDirectory, in: .userDomainMask)[0]
/// let db = try RecordDatabase(path: caches.appendingPathComponent("app.strata").path)
/// RecordDatabase.default = db          // optional: lets `user.save()` omit `on:`
///
/// let testDB = RecordDatabase(storage: try MemoryStorage())   // the same records, in memory
/// ```
public final class RecordDatabase: RecordContext {
    /// Where the records are stored.
    public let storage: any Storage
    /// The thread running a transaction on this database, to refuse nesting instead of
    /// waiting for itself.
    private let transactionThread = Mutex<pthread_t?>(nil)

    /// Records in the Strata file at `path` (created when missing).
    ///
    /// - Parameters:
    ///   - path: The file's path.
    ///   - options: The storage's options.
    /// - Throws: `StrataError` when the file cannot be opened (locked, damaged, not a Strata file).
    public init(path: String, options: StrataStorage.Options = StrataStorage.Options()) throws {
        storage = try StrataStorage(path: path, options: options)
    }

    /// Records in `storage`.
    ///
    /// - Parameter storage: Any backend.
    public init(storage: any Storage) { self.storage = storage }

    /// Closes the storage.
    /// - Throws: what closing the storage throws.
    public func close() throws { try storage.close() }

    private static let defaultDatabase = Mutex<RecordDatabase?>(nil)

    /// The database record operations use when given none (iActiveRecord's convenience).
    public static var `default`: RecordDatabase? {
        get { defaultDatabase.withLock { $0 } }
        set { defaultDatabase.withLock { $0 = newValue } }
    }

    /// The context an operation runs in: the one given, else the default database.
    static func context(_ given: (any RecordContext)?) throws -> any RecordContext {
        if let given { return given }
        guard let database = `default` else { throw RecordDatabaseError.noDefaultDatabase }
        return database
    }

    /// Runs `body` in one write transaction: committed when it returns, rolled back when it
    /// throws.
    /// - Throws: `RecordDatabaseError.nestedTransaction` inside another; what `body` or the
    ///   storage throws.
    /// - Parameter body: Writes through the writer it is given.
    /// - Returns: What `body` returns.
    @discardableResult
    public func write<R>(_ body: (any StorageWriter) throws -> R) throws -> R {
        try checkNotInTransaction()
        return try storage.write(body)
    }

    /// Runs `body` on a consistent snapshot.
    /// - Throws: what `body` or the storage throws.
    /// - Parameter body: Reads through the reader it is given.
    /// - Returns: What `body` returns.
    public func read<R>(_ body: (any StorageReader) throws -> R) throws -> R { try storage.read(body) }

    /// Runs `body` in one transaction: it commits when `body` returns, and rolls back —
    /// leaving the file as it was — when `body` throws or calls `rollback()`. Transactions do
    /// not nest: starting one inside another throws `RecordDatabaseError.nestedTransaction`.
    ///
    /// ```swift
    /// try db.transaction { tx in
    ///     var project = Project(name: "Strata")
    ///     try project.save(on: tx)
    ///     if project.name.isEmpty { tx.rollback() }
    /// }
    /// ```
    ///
    /// - Parameter body: Saves and deletes records `on:` the transaction it is given.
    /// - Returns: What `body` returns.
    /// - Throws: `RecordDatabaseError.nestedTransaction` inside another; what `body` or the
    ///   storage throws (nothing is committed then).
    @discardableResult
    public func transaction<R>(_ body: (RecordTransaction) throws -> R) throws -> R {
        try checkNotInTransaction()
        transactionThread.withLock { $0 = pthread_self() }
        defer { transactionThread.withLock { $0 = nil } }
        let transaction = RecordTransaction(database: self)
        do {
            return try storage.write { writer in
                transaction.writer.withLock { $0 = WriterBox(writer) }
                defer { transaction.writer.withLock { $0 = nil } }
                let result = try body(transaction)
                if transaction.rolledBack.withLock({ $0 }) { throw RollbackRequested(result: result) }
                return result
            }
        } catch let rollback as RollbackRequested<R> {
            return rollback.result
        }
    }

    private func checkNotInTransaction() throws {
        if let thread = transactionThread.withLock({ $0 }), pthread_equal(thread, pthread_self()) != 0 {
            throw RecordDatabaseError.nestedTransaction
        }
    }
}

/// Thrown through `storage.write` to roll back after an explicit `rollback()`.
private struct RollbackRequested<R>: Error, @unchecked Sendable {  // never leaves this file's catch
    let result: R
}

/// The transaction a `transaction { }` block runs in; pass it as the context of record
/// operations inside the block.
public final class RecordTransaction: RecordContext {
    let database: RecordDatabase
    fileprivate let writer = Mutex<WriterBox?>(nil)
    fileprivate let rolledBack = Mutex(false)

    init(database: RecordDatabase) { self.database = database }

    /// Ends the transaction without writing anything when the block returns.
    public func rollback() { rolledBack.withLock { $0 = true } }

    /// Runs `body` in this transaction.
    /// - Throws: `RecordDatabaseError.transactionEnded` after the block returned; what
    ///   `body` throws.
    /// - Parameter body: Writes through the transaction's writer.
    /// - Returns: What `body` returns.
    @discardableResult
    public func write<R>(_ body: (any StorageWriter) throws -> R) throws -> R {
        guard let box = writer.withLock({ $0 }) else { throw RecordDatabaseError.transactionEnded }
        return try body(box.writer)
    }

    /// Runs `body` on this transaction's view (its own writes included).
    ///
    /// - Parameter body: Reads through the transaction's writer.
    /// - Returns: What `body` returns.
    /// - Throws: `RecordDatabaseError.transactionEnded` after the block returned; what `body`
    ///   throws.
    public func read<R>(_ body: (any StorageReader) throws -> R) throws -> R {
        guard let box = writer.withLock({ $0 }) else { throw RecordDatabaseError.transactionEnded }
        return try body(box.writer)
    }
}

/// The writer is used only on the transaction's own thread, inside its block.
struct WriterBox: @unchecked Sendable {
    let writer: any StorageWriter
    init(_ writer: any StorageWriter) { self.writer = writer }
}

/// Misuses of a record database: each says what to do instead.
public enum RecordDatabaseError: Error, Sendable, Equatable, DescribedError {
    /// No `on:` was given and `RecordDatabase.default` is not set.
    case noDefaultDatabase
    /// `observe()` was called on a fetcher running in a transaction.
    case observationNeedsDatabase
    /// A transaction was begun inside another on the same database.
    case nestedTransaction
    /// A transaction's context was used after it ended.
    case transactionEnded
    /// `update`, `delete` or a relation needs a record that has been saved.
    case notSaved(model: String)
    /// The record's row is gone (deleted by someone else since it was loaded).
    case notFound(model: String, id: Int64)
    /// ActiveRecord assigns ids: the schema must be `Schema.autoIncrementing(\.id)`.
    case schemaNotAutoIncrementing(model: String)

    public var description: String {
        switch self {
        case .noDefaultDatabase: "no database given and RecordDatabase.default is not set"
        case .observationNeedsDatabase: "observe() needs a database, not a transaction: a transaction has no later commits to observe"
        case .nestedTransaction: "a transaction is already open on this database in this thread; run the work in that transaction (pass it as the context) instead of starting another"
        case .transactionEnded: "the transaction has ended; use it only inside its transaction block"
        case .notSaved(let model): "this \(model) has not been saved yet; save it before updating, deleting or relating it"
        case .notFound(let model, let id): "\(model) \(id) no longer exists"
        case .schemaNotAutoIncrementing(let model): "\(model)'s schema must be Schema.autoIncrementing(\\.id)"
        }
    }
}
