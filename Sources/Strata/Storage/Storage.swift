import Dispatch
import Foundation
import StrataEngine

/// Reading operations available in a read or write transaction of any `Storage`.
public protocol StorageReader {
    /// The model with this primary key, or nil. For a composite key pass `Key(a, b)`.
    ///
    /// - Parameters:
    ///   - type: The model type, which names the collection.
    ///   - primaryKey: The primary key's value (`Key(a, b)` for a composite key).
    /// - Returns: The decoded model, or nil when no record has the key.
    /// - Throws: `RecordError` when the stored record cannot be decoded as `M`; the backend's errors.
    func read<M: Model>(_ type: M.Type, primaryKey: some KeyComponent) throws -> M?
    /// The models matching the query, in its order (primary-key order when unsorted).
    ///
    /// - Parameter query: The conditions, order and window to read.
    /// - Returns: The matching models.
    /// - Throws: `RecordError` for a record that cannot be decoded; the backend's errors.
    func read<M: Model>(_ query: Query<M>) throws -> [M]
    /// Visits matching models one at a time without collecting them; stop by returning false.
    ///
    /// - Parameters:
    ///   - query: The conditions, order and window to read.
    ///   - body: Called with each match in order; returns whether to go on.
    /// - Throws: What `body` throws; `RecordError` for a record that cannot be decoded; the
    ///   backend's errors.
    func forEach<M: Model>(_ query: Query<M>, _ body: (M) throws -> Bool) throws
    /// How many models match the query, its offset and limit applied.
    /// - Parameter query: The conditions (its sort is ignored) and window.
    /// - Returns: The number of matches.
    /// - Throws: `RecordError` for a record that must be decoded to check and cannot be; the
    ///   backend's errors.
    func count<M: Model>(_ query: Query<M>) throws -> Int
    /// How the query would run.
    ///
    /// - Parameter query: The query to plan; nothing is read.
    /// - Returns: The chosen access path, the alternatives considered and their estimated rows.
    /// - Throws: The backend's errors.
    func explain<M: Model>(_ query: Query<M>) throws -> QueryPlan
}

/// Writing operations available in a write transaction of any `Storage`.
public protocol StorageWriter: StorageReader {
    /// Inserts a new model; fails with `StorageError.duplicateKey` when its primary key is
    /// taken. Returns the model as stored (with its assigned id, for auto-increment schemas).
    ///
    /// - Parameter model: The model to insert.
    /// - Throws: `StorageError.duplicateKey`, `.uniqueViolation`; the backend's errors.
    /// - Returns: The model as stored.
    @discardableResult
    func create<M: Model>(_ model: M) throws -> M
    /// Inserts or replaces (upsert). Returns the model as stored.
    ///
    /// - Parameter model: The model to insert or replace.
    /// - Throws: `StorageError.uniqueViolation` when another record holds a unique index's value;
    ///   the backend's errors.
    /// - Returns: The model as stored.
    @discardableResult
    func persist<M: Model>(_ model: M) throws -> M
    /// Deletes by primary key; returns whether it existed.
    ///
    /// - Parameters:
    ///   - type: The model type, which names the collection.
    ///   - primaryKey: The primary key of the model to delete.
    /// - Throws: The backend's errors.
    /// - Returns: True when the model existed.
    @discardableResult
    func erase<M: Model>(_ type: M.Type, primaryKey: some KeyComponent) throws -> Bool
    /// Deletes every match; returns how many.
    ///
    /// - Parameter query: The conditions of the models to delete.
    /// - Throws: `RecordError` for a record that cannot be decoded to check; the backend's errors.
    /// - Returns: How many models were deleted.
    @discardableResult
    func erase<M: Model>(_ query: Query<M>) throws -> Int
    /// Deletes every model of the type.
    ///
    /// - Parameter type: The model type whose collection is emptied.
    /// - Throws: The backend's errors.
    func eraseAll<M: Model>(_ type: M.Type) throws
    /// Drops a secondary index. Indexes are never dropped implicitly — a model that does
    /// not declare one leaves it in place and keeps it up to date — so this is the only way
    /// to remove one.
    /// - Throws: `StorageError.collectionNotFound` or `.indexNotFound`, naming what exists.
    /// - Parameters:
    ///   - index: The index's name, as `Schema` declared it.
    ///   - collection: The collection's name (`Model.collectionName`).
    func dropIndex(_ index: String, from collection: String) throws
}

/// A store of models: the one protocol the DAO, ActiveRecord and Repository layers talk
/// to, so the same app code runs on Strata (`StrataStorage`), in memory (`MemoryStorage`)
/// or any other backend that passes `StorageConformance`.
///
/// ```swift
/// let storage: any Storage = try StrataStorage(path: "app.strata")
/// try storage.create(User(id: 1, name: "Ada", email: "ada@example.com", age: 36))
/// let adults = try storage.read(User.filter(\.age >= 18).sorted(by: \.name))
/// try storage.write { tx in                      // one atomic transaction
///     try tx.persist(adults[0])
///     try tx.erase(User.self, primaryKey: 2)
/// }
/// ```
public protocol Storage: Sendable {
    /// Runs `body` on a consistent snapshot.
    ///
    /// - Parameter body: Reads through the reader it is given, which is valid only during the call.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws; the backend's errors.
    func read<R>(_ body: (any StorageReader) throws -> R) throws -> R
    /// Runs `body` in a transaction that commits when it returns and rolls back, leaving
    /// nothing behind, when it throws.
    ///
    /// - Parameter body: Writes through the writer it is given, which is valid only during the call.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws (nothing is committed then); `StorageError.nestedTransaction`
    ///   inside another `write` of the same storage; the backend's errors.
    @discardableResult
    func write<R>(_ body: (any StorageWriter) throws -> R) throws -> R
    /// Releases what the storage holds open (a file, connections); later calls fail.
    /// Storages that hold nothing open need not implement it.
    ///
    /// - Throws: The backend's errors while releasing (a final checkpoint that cannot be written).
    func close() throws
    /// Calls `observer` after every commit that changed records, with the collections it
    /// changed, and once with `.closed` when the storage closes. What `observe` is built on;
    /// a backend keeps a `CommitObservers`.
    ///
    /// - Parameter observer: Called on a background thread after each commit.
    /// - Returns: The registration; observing stops when it is cancelled or released.
    func observeCommits(_ observer: @escaping @Sendable (CommitEvent) -> Void) -> CommitObservation
    /// Makes commits that other handles or processes made since this storage last looked
    /// visible to its next reads, and tells its observers about them. Backends whose
    /// every read starts at the newest commit (SQLite, PostgreSQL, a writable Strata file)
    /// have nothing to do; a read-only Strata file handle catches up with the file.
    /// Observing a storage keeps it fresh without calling this.
    ///
    /// - Throws: what reading the new commits ran into (damage, I/O errors).
    func refresh() throws
}

extension Storage {
    /// Nothing to release, for backends without a file or connection.
    ///
    /// - Throws: Nothing.
    public func close() throws {}
    /// Nothing to catch up with, for backends whose every read starts at the newest commit.
    ///
    /// - Throws: Nothing.
    public func refresh() throws {}
}

/// Errors of the typed layer that every backend reports alike.
public enum StorageError: Error, Sendable, Equatable, DescribedError {
    case duplicateKey(collection: String, key: String)
    case uniqueViolation(collection: String, index: String, value: String)
    /// The model's declared schema conflicts with what the file holds.
    case schemaMismatch(collection: String, reason: String)
    /// A write transaction had a unique violation; it is being rolled back.
    case transactionAborted(collection: String, index: String, value: String)
    /// No collection of this name exists in the file.
    case collectionNotFound(String, existing: [String])
    /// No index of this name exists in the collection.
    case indexNotFound(collection: String, index: String, existing: [String])
    /// `write` was called inside a `write` of the same storage on the same thread. Nested
    /// writes are refused rather than run in the enclosing transaction, because the outer
    /// one could still roll back what the inner one reported as written.
    case nestedTransaction
    /// A live query could not follow the storage's commits any more (for a read-only file
    /// handle: another process's commits could not be read). Reads still return the last
    /// state read; reopen the storage to start again.
    case observationFailed(String)

    public var description: String {
        switch self {
        case .duplicateKey(let c, let k): "collection '\(c)' already has a record with primary key \(k)"
        case .uniqueViolation(let c, let i, let v): "collection '\(c)': unique index '\(i)' already holds \(v); the transaction is rolled back"
        case .schemaMismatch(let c, let reason): "collection '\(c)': \(reason)"
        case .transactionAborted(let c, let i, let v): "the transaction was aborted by a unique violation (collection '\(c)', index '\(i)', value \(v)) and cannot commit"
        case .indexNotFound(let c, let i, let existing):
            "collection '\(c)' has no index '\(i)'" + (existing.isEmpty ? "; it has none" : "; it has \(existing.joined(separator: ", "))")
        case .nestedTransaction:
            "a write transaction of this storage is already open on this thread; use the writer it gave you instead of calling write again (a nested write would wait for itself forever)"
        case .observationFailed(let reason):
            "the storage stopped following commits: \(reason); reopen it to read newer commits"
        case .collectionNotFound(let name, let existing):
            "no such collection '\(name)'" + (existing.isEmpty ? "; the file has none" : "; the file has \(existing.joined(separator: ", "))")
        }
    }
}

extension StorageReader {
    /// The models with these primary keys, in the order given; missing keys are skipped.
    ///
    /// - Parameters:
    ///   - type: The model type, which names the collection.
    ///   - primaryKeys: The keys to read, in the order wanted.
    /// - Returns: The models found, in the order of their keys.
    /// - Throws: As `read(_:primaryKey:)`.
    public func read<M: Model, K: KeyComponent>(_ type: M.Type, primaryKeys: [K]) throws -> [M] {
        try primaryKeys.compactMap { try read(type, primaryKey: $0) }
    }

    /// Every model of the type, in primary-key order.
    ///
    /// - Parameter type: The model type, which names the collection.
    /// - Returns: Every model of the collection.
    /// - Throws: As `read(_:)`.
    public func readAll<M: Model>(_ type: M.Type) throws -> [M] { try read(Query<M>()) }

    /// The first model `query` returns, or nil.
    ///
    /// - Parameter query: The conditions and order.
    /// - Returns: The first match, or nil when none matches.
    /// - Throws: As `read(_:)`.
    public func first<M: Model>(_ query: Query<M>) throws -> M? { try read(query.limit(1)).first }

    /// Whether any model matches `query`.
    ///
    /// - Parameter query: The conditions.
    /// - Returns: True when at least one model matches.
    /// - Throws: As `read(_:)`.
    public func exists<M: Model>(_ query: Query<M>) throws -> Bool { try first(query) != nil }
}

extension Storage {
    /// Drops a secondary index, in a transaction of its own.
    ///
    /// Indexes are never dropped implicitly: a model type that does not declare one of its
    /// collection's indexes leaves it in place and keeps it up to date. Stop declaring the
    /// index in every model, then drop it:
    ///
    /// ```swift
    /// try storage.dropIndex("age", from: User.collectionName)
    /// ```
    /// - Throws: `StorageError.collectionNotFound` or `.indexNotFound` (naming the indexes
    ///   there are); `StorageError.nestedTransaction` inside a `write`.
    /// - Parameters:
    ///   - index: The index's name, as `Schema` declared it.
    ///   - collection: The collection's name (`Model.collectionName`).
    public func dropIndex(_ index: String, from collection: String) throws {
        try write { try $0.dropIndex(index, from: collection) }
    }
}

extension StorageWriter {
    /// Upserts several models.
    ///
    /// - Parameter models: The models to insert or replace, in order.
    /// - Throws: As `persist(_:)` for one model.
    public func persist<M: Model>(_ models: [M]) throws {
        for model in models { try persist(model) }
    }

    /// Deletes several models by primary key; returns how many existed.
    ///
    /// - Parameters:
    ///   - type: The model type, which names the collection.
    ///   - primaryKeys: The keys of the models to delete.
    /// - Returns: How many of them existed.
    /// - Throws: The backend's errors.
    @discardableResult
    public func erase<M: Model, K: KeyComponent>(_ type: M.Type, primaryKeys: [K]) throws -> Int {
        try primaryKeys.reduce(0) { $0 + (try erase(type, primaryKey: $1) ? 1 : 0) }
    }
}

// One-shot operations, each in its own transaction: the transaction's method of the same
// name, run in `read { … }` or `write { … }`. Group several in one `write` to commit them
// together.
extension Storage {
    /// Inserts a model that must not exist yet, in a transaction of its own.
    ///
    /// ```swift
    /// try storage.create(User(id: 1, name: "Ada", age: 36))
    /// ```
    /// - Returns: the model as stored (an auto-incrementing schema assigns its id).
    /// - Throws: `StorageError.duplicateKey` when a record has its primary key,
    ///   `.uniqueViolation` when a unique index already holds its value; the storage's errors.
    /// - Parameter model: The model to insert.
    @discardableResult
    public func create<M: Model>(_ model: M) throws -> M { try write { try $0.create(model) } }

    /// Inserts or replaces a model by primary key (an upsert), in a transaction of its own.
    /// - Returns: the model as stored (an auto-incrementing schema assigns a new one's id).
    /// - Throws: `StorageError.uniqueViolation` when a unique index's value is held by
    ///   another record; the storage's errors.
    /// - Parameter model: The model to insert or replace.
    @discardableResult
    public func persist<M: Model>(_ model: M) throws -> M { try write { try $0.persist(model) } }

    /// Upserts several models atomically: all or none.
    /// - Throws: as `persist(_:)` for one model; nothing is stored then.
    /// - Parameter models: The models to insert or replace.
    public func persist<M: Model>(_ models: [M]) throws { try write { try $0.persist(models) } }

    /// The model with this primary key, or nil.
    /// - Throws: `RecordError` when the stored record cannot be decoded as `M`; the
    ///   storage's errors.
    /// - Parameters:
    ///   - type: The model type, which names the collection.
    ///   - primaryKey: The primary key's value (`Key(a, b)` for a composite key).
    /// - Returns: The decoded model, or nil when no record has the key.
    public func read<M: Model>(_ type: M.Type, primaryKey: some KeyComponent) throws -> M? { try read { try $0.read(type, primaryKey: primaryKey) } }

    /// The models with these primary keys, in the order given; missing keys are skipped.
    /// - Throws: as `read(_:primaryKey:)`.
    /// - Parameters:
    ///   - type: The model type, which names the collection.
    ///   - primaryKeys: The keys to read, in the order wanted.
    /// - Returns: The models found, in the order of their keys.
    public func read<M: Model, K: KeyComponent>(_ type: M.Type, primaryKeys: [K]) throws -> [M] { try read { try $0.read(type, primaryKeys: primaryKeys) } }

    /// The models matching `query`, in its order (primary-key order when unsorted).
    ///
    /// ```swift
    /// let page = try storage.read(User.filter(\.age >= 18).sorted(by: \.name).limit(20))
    /// ```
    /// - Throws: `RecordError` for a record that cannot be decoded; the storage's errors.
    /// - Parameter query: The conditions, order and window to read.
    /// - Returns: The matching models.
    public func read<M: Model>(_ query: Query<M>) throws -> [M] { try read { try $0.read(query) } }

    /// Every model of the type, in primary-key order.
    /// - Parameter type: The model type, which names the collection.
    /// - Returns: Every model of the collection.
    /// - Throws: as `read(_:)`.
    public func readAll<M: Model>(_ type: M.Type) throws -> [M] { try read { try $0.readAll(type) } }

    /// The first model `query` returns, or nil.
    /// - Parameter query: The conditions and order.
    /// - Returns: The first match, or nil when none matches.
    /// - Throws: as `read(_:)`.
    public func first<M: Model>(_ query: Query<M>) throws -> M? { try read { try $0.first(query) } }

    /// Whether any model matches `query`.
    /// - Throws: as `read(_:)`.
    /// - Parameter query: The conditions.
    /// - Returns: True when at least one model matches.
    public func exists<M: Model>(_ query: Query<M>) throws -> Bool { try read { try $0.exists(query) } }

    /// How many models match `query` (its offset and limit applied); answered from an index
    /// without decoding records where the plan allows.
    /// - Throws: as `read(_:)`.
    /// - Parameter query: The conditions (its sort is ignored) and window.
    /// - Returns: The number of matches.
    public func count<M: Model>(_ query: Query<M>) throws -> Int { try read { try $0.count(query) } }

    /// How many models of the type are stored.
    /// - Throws: the storage's errors.
    /// - Parameter type: The model type, which names the collection.
    /// - Returns: The number of models stored.
    public func count<M: Model>(_ type: M.Type) throws -> Int { try count(Query<M>()) }

    /// How `query` would run: the access path, range, what is filtered and sorted in
    /// memory, the estimated rows and the alternatives considered. Reads no records.
    /// - Throws: the storage's errors.
    /// - Parameter query: The query to plan.
    /// - Returns: The plan, as `QueryPlan` describes it.
    public func explain<M: Model>(_ query: Query<M>) throws -> QueryPlan { try read { try $0.explain(query) } }

    /// Deletes the model with this primary key, and its index entries.
    /// - Returns: whether it existed.
    /// - Throws: the storage's errors.
    /// - Parameters:
    ///   - type: The model type, which names the collection.
    ///   - primaryKey: The primary key of the model to delete.
    @discardableResult
    public func erase<M: Model>(_ type: M.Type, primaryKey: some KeyComponent) throws -> Bool { try write { try $0.erase(type, primaryKey: primaryKey) } }

    /// Deletes the models with these primary keys, atomically.
    /// - Returns: how many existed.
    /// - Throws: the storage's errors.
    /// - Parameters:
    ///   - type: The model type, which names the collection.
    ///   - primaryKeys: The keys of the models to delete.
    @discardableResult
    public func erase<M: Model, K: KeyComponent>(_ type: M.Type, primaryKeys: [K]) throws -> Int { try write { try $0.erase(type, primaryKeys: primaryKeys) } }

    /// Deletes every model matching `query`, atomically.
    /// - Returns: how many were deleted.
    /// - Throws: `RecordError` for a record that cannot be decoded to check; the storage's
    ///   errors.
    /// - Parameter query: The conditions of the models to delete.
    @discardableResult
    public func erase<M: Model>(_ query: Query<M>) throws -> Int { try write { try $0.erase(query) } }

    /// Deletes every model of the type; the collection and its indexes stay declared.
    /// - Throws: the storage's errors.
    /// - Parameter type: The model type whose collection is emptied.
    public func eraseAll<M: Model>(_ type: M.Type) throws { try write { try $0.eraseAll(type) } }
}

// Async variants: the work runs on a dispatch queue, never blocking the cooperative pool
// with disk I/O. The concrete storages re-declare them: called on a concrete type, its own
// synchronous methods would otherwise outrank these protocol-extension ones even in async
// code, and `try await storage.write { … }` would block a cooperative thread.
extension Storage {
    /// Runs `body` in a read transaction on Strata's own queue, not on a thread of the
    /// cooperative pool.
    ///
    /// ```swift
    /// let adults = try await storage.read { try $0.read(User.filter(\.age >= 18)) }
    /// ```
    /// - Returns: what `body` returns.
    /// - Throws: what `body` or the storage throws.
    /// - Parameter body: Reads through the reader it is given, on a dispatch queue.
    public func read<R: Sendable>(_ body: @escaping @Sendable (any StorageReader) throws -> R) async throws -> R {
        try await offload { try self.read(body) }
    }

    /// Runs `body` in a write transaction on Strata's own queue: committed when it returns,
    /// rolled back when it throws.
    /// - Returns: what `body` returns.
    /// - Throws: what `body` or the storage throws; nothing is committed then.
    /// - Parameter body: Writes through the writer it is given, on a dispatch queue.
    @discardableResult
    public func write<R: Sendable>(_ body: @escaping @Sendable (any StorageWriter) throws -> R) async throws -> R {
        try await offload { try self.write(body) }
    }
}

extension StrataStorage {
    /// `Storage.read(_:)` (async), declared on the type so that calls on it choose it in
    /// async code over the type's own blocking `read`.
    ///
    /// - Parameter body: Reads through the reader it is given, on a dispatch queue.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` or the storage throws.
    public func read<R: Sendable>(_ body: @escaping @Sendable (any StorageReader) throws -> R) async throws -> R {
        try await offload { try self.read(body) }
    }

    /// `Storage.write(_:)` (async), declared on the type for the same reason.
    ///
    /// - Parameter body: Writes through the writer it is given, on a dispatch queue.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` or the storage throws; nothing is committed then.
    @discardableResult
    public func write<R: Sendable>(_ body: @escaping @Sendable (any StorageWriter) throws -> R) async throws -> R {
        try await offload { try self.write(body) }
    }
}

extension MemoryStorage {
    /// `Storage.read(_:)` (async), declared on the type so that calls on it choose it in
    /// async code over the type's own blocking `read`.
    ///
    /// - Parameter body: Reads through the reader it is given, on a dispatch queue.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` or the storage throws.
    public func read<R: Sendable>(_ body: @escaping @Sendable (any StorageReader) throws -> R) async throws -> R {
        try await offload { try self.read(body) }
    }

    /// `Storage.write(_:)` (async), declared on the type for the same reason.
    ///
    /// - Parameter body: Writes through the writer it is given, on a dispatch queue.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` or the storage throws; nothing is committed then.
    @discardableResult
    public func write<R: Sendable>(_ body: @escaping @Sendable (any StorageWriter) throws -> R) async throws -> R {
        try await offload { try self.write(body) }
    }
}

let storageQueue = DispatchQueue(label: "strata.storage", attributes: .concurrent)

/// Runs blocking work (disk I/O) on Strata's own queue, so async callers never block a
/// thread of the cooperative pool. Shared by the layers built on this module.
package func offload<R: Sendable>(_ work: @escaping @Sendable () throws -> R) async throws -> R {
    try await withCheckedThrowingContinuation { continuation in
        storageQueue.async { continuation.resume(with: Result { try work() }) }
    }
}
