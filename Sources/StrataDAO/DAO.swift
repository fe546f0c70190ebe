import Foundation
import Strata

/// Failures of the DAO layer, naming the plain object involved.
public enum DAOError: Error, DescribedError {
    /// The translator threw while translating the object with this identifier.
    case translationFailed(id: UniqueID, type: String, underlying: any Error)
    /// A record the translator expected (e.g. a dialog's message) is missing.
    case relatedRecordMissing(id: UniqueID, collection: String)
    /// The storage failed while handling the object with this identifier.
    case storageFailed(id: UniqueID?, underlying: any Error)

    public var description: String {
        switch self {
        case .translationFailed(let id, let type, let error): "translating \(type) \(id) failed: \(error)"
        case .relatedRecordMissing(let id, let collection): "\(id) refers to a record missing from '\(collection)'"
        case .storageFailed(let id, let error): "storage failed" + (id.map { " for \($0)" } ?? "") + ": \(error)"
        }
    }
}

/// Data access object: the app reads and writes plain objects; the translator and the
/// storage behind it can be swapped without touching the app (the DAO talk's promise).
///
/// ```swift
/// let dao = DAO(storage: try StrataStorage(path: "app.strata"), translator: DialogTranslator())
/// try dao.persist(dialogs)                                       // one transaction
/// let pinned = try dao.read(predicatedBy: #Predicate { $0.isPinned }, orderedBy: \.id)
/// try dao.erase(byPrimaryKey: 42)
/// ```
///
/// Every method runs in one transaction of the storage: a failure leaves nothing
/// half-written. Predicates and orderings are written on the database model with
/// `#Predicate` and key paths (`NSPredicate` format strings do not exist on Linux).
public final class DAO<S: Storage, T: Translator>: Sendable {
    /// What the app works with.
    public typealias PlainModel = T.PlainModel
    /// What is stored.
    public typealias DatabaseModel = T.DatabaseModel

    /// Where the database models are stored; swap it, keep everything else.
    public let storage: S
    /// Converts between plain objects and database models.
    public let translator: T

    /// A DAO for the translator's types on `storage`.
    ///
    /// - Parameters:
    ///   - storage: The storage to keep the database models in.
    ///   - translator: Converts between plain objects and database models.
    public init(storage: S, translator: T) {
        self.storage = storage
        self.translator = translator
    }

    // MARK: Persist

    /// Inserts or replaces one plain object (and, through the translator, its related records).
    ///
    /// - Parameter plain: The plain object.
    /// - Throws: `DAOError.translationFailed` naming the object; `.storageFailed`.
    public func persist(_ plain: PlainModel) throws {
        try persist([plain])
    }

    /// Inserts or replaces several plain objects in one transaction: all or none.
    ///
    /// - Parameter plains: The plain objects.
    /// - Throws: `DAOError.translationFailed` naming the object; `.storageFailed`. Nothing is
    ///   stored then.
    public func persist(_ plains: [PlainModel]) throws {
        try persist(plains, erasingOthers: false)
    }

    /// Makes the stored set exactly `plains`: persists them and, with `erasingOthers`, erases
    /// every other stored object (and its related records, as the translator decides).
    ///
    /// - Parameters:
    ///   - plains: The plain objects.
    ///   - erasingOthers: Whether to erase every stored object not among them.
    /// - Throws: As `persist(_:)`; nothing is changed then.
    public func persist(_ plains: [PlainModel], erasingOthers: Bool) throws {
        try write { tx in
            if erasingOthers {
                let keep = Set(plains.map { Key($0.uniqueId).bytes })
                for model in try tx.readAll(DatabaseModel.self) where !keep.contains(DatabaseModel.schema.primaryKey(of: model).bytes) {
                    try erase(model, in: tx)
                }
            }
            for plain in plains {
                try tx.persist(try translated(plain, in: tx))
            }
        }
    }

    private func translated(_ plain: PlainModel, in tx: any StorageWriter) throws -> DatabaseModel {
        do {
            if var existing = try tx.read(DatabaseModel.self, primaryKey: plain.uniqueId) {
                try translator.translate(from: plain, to: &existing, context: tx)
                return existing
            }
            return try translator.translate(plain: plain, context: tx)
        } catch let error as DAOError {
            throw error
        } catch {
            throw DAOError.translationFailed(id: plain.uniqueId, type: "\(PlainModel.self)", underlying: error)
        }
    }

    // MARK: Read

    /// The plain object with this identifier, or nil.
    /// - Throws: `DAOError.translationFailed` naming the object; the storage's errors.
    /// - Parameter id: The object's identifier.
    /// - Returns: The plain object, or nil.
    public func read(byPrimaryKey id: UniqueID) throws -> PlainModel? {
        try readTransaction { tx in try tx.read(DatabaseModel.self, primaryKey: id).map { try plain($0, in: tx) } }
    }

    /// The plain objects with these identifiers, in the order given; missing ones are skipped.
    ///
    /// - Parameter ids: The identifiers.
    /// - Returns: The plain objects found.
    /// - Throws: `DAOError.translationFailed` naming the object; `.storageFailed`.
    public func read(byPrimaryKeys ids: [UniqueID]) throws -> [PlainModel] {
        try readTransaction { tx in try tx.read(DatabaseModel.self, primaryKeys: ids).map { try plain($0, in: tx) } }
    }

    /// Every plain object, in primary-key order.
    ///
    /// - Returns: The plain objects.
    /// - Throws: `DAOError.translationFailed` naming the object; `.storageFailed`.
    public func read() throws -> [PlainModel] {
        try read(Query<DatabaseModel>())
    }

    /// The plain objects whose database models match `predicate`, in primary-key order.
    ///
    /// - Parameter predicate: The condition on the database model.
    /// - Returns: The plain objects.
    /// - Throws: `DAOError.translationFailed` naming the object; `.storageFailed`.
    public func read(predicatedBy predicate: Predicate<DatabaseModel>) throws -> [PlainModel] {
        try read(Query<DatabaseModel>().filter(predicate))
    }

    /// Every plain object, ordered by a database-model field.
    ///
    /// - Parameters:
    ///   - keyPath: The database-model field to order by.
    ///   - ascending: Smallest first (`true`, the default) or largest first.
    /// - Returns: The plain objects.
    /// - Throws: `DAOError.translationFailed` naming the object; `.storageFailed`.
    public func read<V: Comparable>(orderedBy keyPath: KeyPath<DatabaseModel, V> & Sendable, ascending: Bool = true) throws -> [PlainModel] {
        try read(Query<DatabaseModel>().sorted(by: keyPath, ascending: ascending))
    }

    /// The plain objects matching `predicate`, ordered by a field, after `offset`, at most
    /// `limit`.
    ///
    /// - Parameters:
    ///   - predicate: The condition on the database model.
    ///   - keyPath: The field to order by.
    ///   - ascending: Smallest first (`true`, the default) or largest first.
    ///   - limit: The most objects to return; nil for all.
    ///   - offset: How many matches to skip.
    /// - Returns: The plain objects.
    /// - Throws: `DAOError.translationFailed` naming the object; `.storageFailed`.
    public func read<V: Comparable>(predicatedBy predicate: Predicate<DatabaseModel>, orderedBy keyPath: KeyPath<DatabaseModel, V> & Sendable,
                                    ascending: Bool = true, limit: Int? = nil, offset: Int = 0) throws -> [PlainModel] {
        var query = Query<DatabaseModel>().filter(predicate).sorted(by: keyPath, ascending: ascending).offset(offset)
        if let limit { query = query.limit(limit) }
        return try read(query)
    }

    /// Any query on the database model: key-path filters, predicates, sorting, windows.
    ///
    /// - Parameter query: The query on the database model.
    /// - Returns: The plain objects.
    /// - Throws: `DAOError.translationFailed` naming the object; `.storageFailed`.
    public func read(_ query: Query<DatabaseModel>) throws -> [PlainModel] {
        try readTransaction { tx in try tx.read(query).map { try plain($0, in: tx) } }
    }

    /// The plain objects a query selects, now and after every commit that may change them
    /// (`Storage.observe`): the database model's collection and the translator's
    /// `relatedCollections`. Results are not deduplicated: plain objects compare by id.
    ///
    /// ```swift
    /// for try await pinned in dialogs.observe(predicatedBy: #Predicate { $0.isPinned }, orderedBy: \.id) {
    ///     show(pinned)
    /// }
    /// ```
    ///
    /// - Parameter query: The query on the database model.
    /// - Returns: The sequence of results; it ends with an error when a read or translation fails.
    public func observe(_ query: Query<DatabaseModel>) -> AsyncThrowingStream<[PlainModel], Error> {
        let collections = translator.relatedCollections.map { $0.union([DatabaseModel.collectionName]) }
        return storage.observe(collections: collections, isDuplicate: nil) { tx in try tx.read(query).map { try self.plain($0, in: tx) } }
    }

    /// `observe` with a predicate, an order and a window.
    ///
    /// - Parameters:
    ///   - predicate: The condition on the database model; nil for every object.
    ///   - keyPath: The field to order by.
    ///   - ascending: Smallest first (`true`, the default) or largest first.
    ///   - limit: The most objects in each result; nil for all.
    ///   - offset: How many matches to skip.
    /// - Returns: The sequence of results.
    public func observe<V: Comparable>(predicatedBy predicate: Predicate<DatabaseModel>? = nil, orderedBy keyPath: KeyPath<DatabaseModel, V> & Sendable,
                                       ascending: Bool = true, limit: Int? = nil, offset: Int = 0) -> AsyncThrowingStream<[PlainModel], Error> {
        var query = Query<DatabaseModel>().sorted(by: keyPath, ascending: ascending).offset(offset)
        if let predicate { query = query.filter(predicate) }
        if let limit { query = query.limit(limit) }
        return observe(query)
    }

    /// How many stored objects match `predicate` (all, when nil); nothing is translated.
    ///
    /// - Parameter predicate: The condition; nil for every object.
    /// - Returns: The number of stored objects that match.
    /// - Throws: `DAOError.storageFailed`.
    public func count(predicatedBy predicate: Predicate<DatabaseModel>? = nil) throws -> Int {
        try readTransaction { tx in try tx.count(predicate.map { Query<DatabaseModel>().filter($0) } ?? Query<DatabaseModel>()) }
    }

    private func plain(_ model: DatabaseModel, in tx: any StorageReader) throws -> PlainModel {
        do {
            return try translator.translate(model: model, context: tx)
        } catch let error as DAOError {
            throw error
        } catch {
            let id = UniqueID(Key(bytes: DatabaseModel.schema.primaryKey(of: model).bytes).description)
            throw DAOError.translationFailed(id: id, type: "\(DatabaseModel.self)", underlying: error)
        }
    }

    // MARK: Erase

    /// Erases every stored object (related records as the translator decides).
    ///
    /// - Throws: `DAOError.storageFailed`; nothing is erased then.
    public func erase() throws {
        try write { tx in for model in try tx.readAll(DatabaseModel.self) { try erase(model, in: tx) } }
    }

    /// Erases the object with this identifier (related records as the translator decides).
    /// - Returns: whether it existed.
    /// - Parameter id: The object's identifier.
    /// - Throws: `DAOError.storageFailed`.
    @discardableResult
    public func erase(byPrimaryKey id: UniqueID) throws -> Bool {
        try erase(byPrimaryKeys: [id]) == 1
    }

    /// Erases the objects with these identifiers; returns how many existed.
    ///
    /// - Parameter ids: The identifiers.
    /// - Returns: How many existed.
    /// - Throws: `DAOError.storageFailed`; nothing is erased then.
    @discardableResult
    public func erase(byPrimaryKeys ids: [UniqueID]) throws -> Int {
        try write { tx in
            try tx.read(DatabaseModel.self, primaryKeys: ids).reduce(0) { count, model in
                try erase(model, in: tx)
                return count + 1
            }
        }
    }

    /// Erases every object whose database model matches `predicate`.
    /// - Returns: how many were erased.
    /// - Parameter predicate: The condition on the database model.
    /// - Throws: `DAOError.storageFailed`; nothing is erased then.
    @discardableResult
    public func erase(predicatedBy predicate: Predicate<DatabaseModel>) throws -> Int {
        try write { tx in
            let models = try tx.read(Query<DatabaseModel>().filter(predicate))
            for model in models { try erase(model, in: tx) }
            return models.count
        }
    }

    private func erase(_ model: DatabaseModel, in tx: any StorageWriter) throws {
        try translator.eraseRelated(of: model, context: tx)
        try tx.erase(DatabaseModel.self, primaryKey: DatabaseModel.schema.primaryKey(of: model))
    }

    // MARK: Transactions

    @discardableResult
    private func write<R>(_ body: (any StorageWriter) throws -> R) throws -> R {
        do {
            return try storage.write(body)
        } catch let error as DAOError {
            throw error
        } catch {
            throw DAOError.storageFailed(id: nil, underlying: error)
        }
    }

    private func readTransaction<R>(_ body: (any StorageReader) throws -> R) throws -> R {
        do {
            return try storage.read(body)
        } catch let error as DAOError {
            throw error
        } catch {
            throw DAOError.storageFailed(id: nil, underlying: error)
        }
    }
}

// Async variants: the work runs off the cooperative pool, as the storage's async API does.
extension DAO {
    /// The method of the same name above, run off the caller's thread.
    ///
    /// - Parameter plains: The plain objects.
    /// - Throws: As the synchronous method.
    public func persist(_ plains: [PlainModel]) async throws {
        try await offload { try self.persist(plains) }
    }

    /// The method of the same name above, run off the caller's thread.
    ///
    /// - Returns: The plain objects.
    /// - Throws: As the synchronous method.
    public func read() async throws -> [PlainModel] {
        try await offload { try self.read() }
    }

    /// The method of the same name above, run off the caller's thread.
    ///
    /// - Parameter id: The object's identifier.
    /// - Returns: The plain object, or nil.
    /// - Throws: As the synchronous method.
    public func read(byPrimaryKey id: UniqueID) async throws -> PlainModel? {
        try await offload { try self.read(byPrimaryKey: id) }
    }

    /// The method of the same name above, run off the caller's thread.
    ///
    /// - Parameter query: The query on the database model.
    /// - Returns: The plain objects.
    /// - Throws: As the synchronous method.
    public func read(_ query: Query<DatabaseModel>) async throws -> [PlainModel] {
        try await offload { try self.read(query) }
    }

    /// The method of the same name above, run off the caller's thread.
    ///
    /// - Parameter plain: The plain object.
    /// - Throws: As the synchronous method.
    public func persist(_ plain: PlainModel) async throws {
        try await offload { try self.persist(plain) }
    }

    /// The method of the same name above, run off the caller's thread.
    ///
    /// - Parameters:
    ///   - plains: The plain objects.
    ///   - erasingOthers: Whether to erase every stored object not among them.
    /// - Throws: As the synchronous method.
    public func persist(_ plains: [PlainModel], erasingOthers: Bool) async throws {
        try await offload { try self.persist(plains, erasingOthers: erasingOthers) }
    }

    /// The method of the same name above, run off the caller's thread.
    ///
    /// - Parameter ids: The identifiers.
    /// - Returns: The plain objects found.
    /// - Throws: As the synchronous method.
    public func read(byPrimaryKeys ids: [UniqueID]) async throws -> [PlainModel] {
        try await offload { try self.read(byPrimaryKeys: ids) }
    }

    /// The method of the same name above, run off the caller's thread.
    ///
    /// - Parameter predicate: The condition on the database model.
    /// - Returns: The plain objects.
    /// - Throws: As the synchronous method.
    public func read(predicatedBy predicate: Predicate<DatabaseModel>) async throws -> [PlainModel] {
        try await offload { try self.read(predicatedBy: predicate) }
    }

    /// The method of the same name above, run off the caller's thread.
    ///
    /// - Parameters:
    ///   - predicate: The condition on the database model.
    ///   - keyPath: The field to order by.
    ///   - ascending: Smallest first (`true`, the default) or largest first.
    ///   - limit: The most objects to return; nil for all.
    ///   - offset: How many matches to skip.
    /// - Returns: The plain objects.
    /// - Throws: As the synchronous method.
    public func read<V: Comparable>(predicatedBy predicate: Predicate<DatabaseModel>, orderedBy keyPath: KeyPath<DatabaseModel, V> & Sendable,
                                    ascending: Bool = true, limit: Int? = nil, offset: Int = 0) async throws -> [PlainModel] {
        // The query is Sendable; the key path's value type need not be.
        var query = Query<DatabaseModel>().filter(predicate).sorted(by: keyPath, ascending: ascending).offset(offset)
        if let limit { query = query.limit(limit) }
        let built = query
        return try await offload { try self.read(built) }
    }

    /// The method of the same name above, run off the caller's thread.
    ///
    /// - Parameter predicate: The condition; nil for every object.
    /// - Returns: The number of stored objects that match.
    /// - Throws: As the synchronous method.
    public func count(predicatedBy predicate: Predicate<DatabaseModel>? = nil) async throws -> Int {
        try await offload { try self.count(predicatedBy: predicate) }
    }

    /// The method of the same name above, run off the caller's thread.
    ///
    /// - Throws: As the synchronous method.
    public func erase() async throws {
        try await offload { try self.erase() }
    }

    /// The method of the same name above, run off the caller's thread.
    ///
    /// - Parameter ids: The identifiers.
    /// - Returns: How many existed.
    /// - Throws: As the synchronous method.
    @discardableResult
    public func erase(byPrimaryKeys ids: [UniqueID]) async throws -> Int {
        try await offload { try self.erase(byPrimaryKeys: ids) }
    }

    /// The method of the same name above, run off the caller's thread.
    ///
    /// - Parameter predicate: The condition on the database model.
    /// - Returns: How many were erased.
    /// - Throws: As the synchronous method.
    @discardableResult
    public func erase(predicatedBy predicate: Predicate<DatabaseModel>) async throws -> Int {
        try await offload { try self.erase(predicatedBy: predicate) }
    }
}
