import Foundation
import StrataEngine

/// `Storage` in memory, for app unit tests and caches (the DAO talk's promise: swap the
/// database, keep the app). It is `StrataStorage` on a database held in memory
/// (`Database.inMemory`): the same records, catalog, checks, indexes, query planner and
/// errors as the file, so a test on it sees what the app will see — only nothing reaches
/// disk, and everything is gone when the storage is released. The shared
/// `StorageConformance` suite runs on both.
///
/// ```swift
/// let storage = try MemoryStorage()
/// let service = UserService(storage: storage)   // the same code that runs on StrataStorage
/// ```
public final class MemoryStorage: Storage {
    /// The storage this one is: a `StrataStorage` on an in-memory database.
    public let storage: StrataStorage

    /// A new, empty storage.
    /// - Throws: `StrataError` only if the in-memory database cannot be created (out of memory).
    /// - Parameter options: The engine's options (cache size, page size).
    public init(options: Database.Options = Database.Options()) throws {
        storage = StrataStorage(database: try Database.inMemory(options: options))
    }

    /// Runs `body` on a consistent snapshot.
    /// - Throws: what `body` or the storage throws.
    /// - Parameter body: Reads through the reader it is given, valid only during the call.
    /// - Returns: What `body` returns.
    public func read<R>(_ body: (any StorageReader) throws -> R) throws -> R { try storage.read(body) }

    /// Runs `body` in one write transaction: committed when it returns, rolled back when it throws.
    /// - Throws: what `body` or the storage throws; nothing is committed then.
    /// - Parameter body: Writes through the writer it is given, valid only during the call.
    /// - Returns: What `body` returns.
    @discardableResult
    public func write<R>(_ body: (any StorageWriter) throws -> R) throws -> R { try storage.write(body) }

    /// Releases the storage; later calls fail with a closed-storage error.
    ///
    /// - Throws: What releasing runs into (a final checkpoint that cannot be written).
    public func close() throws { try storage.close() }

    /// Calls `observer` after each commit with the collections it changed.
    ///
    /// - Parameter observer: Called on a background thread after each commit, then once with
    ///   `.closed`.
    /// - Returns: The registration; observing stops when it is cancelled or released.
    public func observeCommits(_ observer: @escaping @Sendable (CommitEvent) -> Void) -> CommitObservation { storage.observeCommits(observer) }
}
