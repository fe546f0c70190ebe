import Dispatch
import Foundation
import StrataEngine
import Synchronization

/// `Storage` in memory, for app unit tests (the DAO talk's promise: swap the database, keep
/// the app). Same semantics as `StrataStorage` — transactions, snapshots, duplicate keys,
/// unique indexes, auto-increment ids, query results and order — verified by the shared
/// `StorageConformance` suite. Queries scan every record of the collection: fine for tests,
/// not for large data.
///
/// ```swift
/// let storage = MemoryStorage()
/// let service = UserService(storage: storage)   // the same code that runs on StrataStorage
/// ```
public final class MemoryStorage: Storage {
    struct Collection: Sendable {
        var records: [[UInt8]: any Sendable] = [:]
        var nextID: Int64 = 1
    }

    private let state = Mutex<[String: Collection]>([:])
    private let gate = WriteGate()

    public init() {}

    public func read<R>(_ body: (any StorageReader) throws -> R) throws -> R {
        try body(MemoryReader(collections: state.withLock { $0 }))
    }

    public func write<R>(_ body: (any StorageWriter) throws -> R) throws -> R {
        guard gate.enter() else { throw StorageError.nestedTransaction }
        defer { gate.leave() }
        let writer = MemoryWriter(collections: state.withLock { $0 })
        let result = try body(writer)
        if let violation = writer.abortedBy { throw violation }
        let committed = writer.collections
        state.withLock { $0 = committed }
        return result
    }
}

/// The collections of one snapshot, with the shared query semantics.
protocol MemoryReading: StorageReader {
    var collections: [String: MemoryStorage.Collection] { get }
}

extension MemoryReading {
    /// The models of a collection in primary-key order.
    func models<M: Model>(_ type: M.Type) throws -> [([UInt8], M)] {
        guard let collection = collections[M.collectionName] else { return [] }
        return try collection.records.sorted { $0.key.lexicographicallyPrecedes($1.key) }.map { key, value in
            guard let model = value as? M else {
                throw StorageError.schemaMismatch(collection: M.collectionName, reason: "holds \(Swift.type(of: value)) records, not \(M.self)")
            }
            return (key, model)
        }
    }

    func matching<M: Model>(_ query: Query<M>) throws -> [([UInt8], M)] {
        var matches = try models(M.self).filter { try query.matches($0.1) }
        query.sort(&matches) { $0.1 }
        return Array(query.window(matches))
    }

    func read<M: Model>(_ type: M.Type, primaryKey: some KeyComponent) throws -> M? {
        guard let value = collections[M.collectionName]?.records[Key(primaryKey).bytes] else { return nil }
        guard let model = value as? M else {
            throw StorageError.schemaMismatch(collection: M.collectionName, reason: "holds \(Swift.type(of: value)) records, not \(M.self)")
        }
        return model
    }

    func read<M: Model>(_ query: Query<M>) throws -> [M] { try matching(query).map(\.1) }

    func forEach<M: Model>(_ query: Query<M>, _ body: (M) throws -> Bool) throws {
        for (_, model) in try matching(query) where try !body(model) { return }
    }

    func count<M: Model>(_ query: Query<M>) throws -> Int { try matching(query).count }

    func explain<M: Model>(_ query: Query<M>) throws -> QueryPlan {
        QueryPlan(collection: M.collectionName, access: .fullScan, range: nil, residualFilter: query.hasConditions,
                  sortsInMemory: !query.sortKeys.isEmpty, stopsAfter: query.sortKeys.isEmpty ? query.needed : nil)
    }
}

struct MemoryReader: MemoryReading {
    let collections: [String: MemoryStorage.Collection]
}

final class MemoryWriter: MemoryReading, StorageWriter {
    var collections: [String: MemoryStorage.Collection]
    var abortedBy: StorageError?

    init(collections: [String: MemoryStorage.Collection]) {
        self.collections = collections
    }

    private func checkNotAborted() throws {
        if case .uniqueViolation(let c, let i, let v)? = abortedBy { throw StorageError.transactionAborted(collection: c, index: i, value: v) }
    }

    private func assignID<M: Model>(_ model: inout M) {
        guard let auto = M.schema.autoIncrement else { return }
        var collection = collections[M.collectionName] ?? .init()
        let id = auto.get(model)
        if id == 0 {
            auto.set(&model, collection.nextID)
            collection.nextID += 1
        } else {
            collection.nextID = max(collection.nextID, id + 1)
        }
        collections[M.collectionName] = collection
    }

    private func checkUnique<M: Model>(_ model: M, key: [UInt8]) throws {
        for index in M.schema.indexes where index.isUnique {
            let value = index.key(of: model).bytes
            for (other, existing) in try models(M.self) where other != key && index.key(of: existing).bytes == value {
                let violation = StorageError.uniqueViolation(collection: M.collectionName, index: index.name, value: Key(bytes: value).description)
                abortedBy = violation
                throw violation
            }
        }
    }

    @discardableResult
    func create<M: Model>(_ model: M) throws -> M { try write(model, mustBeNew: true) }

    @discardableResult
    func persist<M: Model>(_ model: M) throws -> M { try write(model, mustBeNew: false) }

    private func write<M: Model>(_ model: M, mustBeNew: Bool) throws -> M {
        try checkNotAborted()
        var model = model
        assignID(&model)
        let key = M.schema.primaryKey(of: model).bytes
        if mustBeNew, collections[M.collectionName]?.records[key] != nil {
            throw StorageError.duplicateKey(collection: M.collectionName, key: Key(bytes: key).description)
        }
        try checkUnique(model, key: key)
        collections[M.collectionName, default: .init()].records[key] = model
        return model
    }

    @discardableResult
    func erase<M: Model>(_ type: M.Type, primaryKey: some KeyComponent) throws -> Bool {
        try checkNotAborted()
        return collections[M.collectionName]?.records.removeValue(forKey: Key(primaryKey).bytes) != nil
    }

    @discardableResult
    func erase<M: Model>(_ query: Query<M>) throws -> Int {
        try checkNotAborted()
        let keys = try matching(query).map(\.0)
        for key in keys { collections[M.collectionName]?.records[key] = nil }
        return keys.count
    }

    func eraseAll<M: Model>(_ type: M.Type) throws {
        try checkNotAborted()
        collections[M.collectionName]?.records = [:]
    }
}
