import Foundation
import Strata

/// One repository item as a typed record: the table and id it is stored under, and the
/// bytes its transformer wrote. Every table of a storage shares one collection.
struct RepositoryItem: Model {
    var table: String
    var id: String
    var data: Data
    static let collectionName = "repository.items"
    static let schema = Schema<RepositoryItem>(primaryKey: \.table, \.id)
}

/// Items of one table, stored through any `Storage` — a Strata file, memory, or another
/// backend — as records of the `repository.items` collection keyed by (table, id). Ids are
/// compared as they are (not normalized). Batches are one transaction: all or nothing.
public final class StorageBackend: RepositoryBackend {
    /// The collection every table's items are stored in.
    public static let collectionName = RepositoryItem.collectionName

    /// Where the items are stored.
    public let storage: any Storage
    /// The table the items belong to.
    public let table: String

    /// Table `table` of `storage`; several tables can share one storage.
    ///
    /// - Parameters:
    ///   - storage: The storage to keep items in.
    ///   - table: The table's name; items are records of one collection, keyed by table and id.
    public init(storage: any Storage, table: String) {
        self.storage = storage
        self.table = table
    }

    /// Table `table` of the Strata file at `path` (created when missing).
    ///
    /// - Parameters:
    ///   - path: The Strata file's path.
    ///   - table: The table's name.
    /// - Throws: `StrataError` when the file cannot be opened (locked, damaged, not a Strata file).
    public convenience init(path: String, table: String) throws {
        self.init(storage: try StrataStorage(path: path), table: table)
    }

    private func key(_ id: String) -> Key { Key(table, id) }

    /// Whether `id` is stored: one point read of the primary key.
    private func exists(_ id: String, in reader: any StorageReader) throws -> Bool {
        try reader.read(RepositoryItem.self, primaryKey: key(id)) != nil
    }

    /// The stored bytes of `id`, or nil.
    ///
    /// - Parameter id: The item's id.
    /// - Returns: The item's encoded bytes, or nil when none is stored under `id`.
    /// - Throws: The store's read errors.
    public func load(_ id: String) throws -> Data? {
        try storage.read(RepositoryItem.self, primaryKey: key(id))?.data
    }

    /// Stores new items, all or none.
    /// - Throws: `RepositoryError.alreadyExists` when an id is taken (nothing is stored).
    /// - Parameter items: The ids and encoded bytes to store.
    public func insert(_ items: [(id: String, data: Data)]) throws {
        try storage.write { tx in
            try checkInsert(items.map(\.id)) { try exists($0, in: tx) }
            for (id, data) in items { try tx.create(RepositoryItem(table: table, id: id, data: data)) }
        }
    }

    /// Replaces a stored item.
    /// - Throws: `RepositoryError.recordNotFound` when there is none.
    /// - Parameters:
    ///   - id: The item's id.
    ///   - data: Its new encoded bytes.
    public func replace(_ id: String, with data: Data) throws {
        try storage.write { tx in
            guard try exists(id, in: tx) else { throw RepositoryError.recordNotFound(id: id) }
            try tx.persist(RepositoryItem(table: table, id: id, data: data))
        }
    }

    /// Removes items, all or none.
    /// - Throws: `RepositoryError.recordNotFound` for one not stored (nothing is removed).
    /// - Parameter ids: The ids of the items to remove.
    public func remove(_ ids: [String]) throws {
        try storage.write { tx in
            try checkRemove(ids) { try exists($0, in: tx) }
            for id in ids { try tx.erase(RepositoryItem.self, primaryKey: key(id)) }
        }
    }

    /// Ids in order, from the first at or after `prefix`, while they start with it.
    ///
    /// - Parameters:
    ///   - prefix: What the ids start with; "" for all.
    ///   - limit: The most ids to return; nil for all.
    /// - Returns: The ids, in byte order.
    /// - Throws: The store's read errors.
    public func ids(prefix: String, limit: Int?) throws -> [String] {
        let table = table
        return try storage.read { reader in
            var ids: [String] = []
            // Only the ids are decoded, not the items' bytes.
            let query = RepositoryItem.filter(\.table == table && \.id >= prefix).sorted(by: \.id).only(["table", "id"])
            try reader.forEach(query) { item in
                guard item.id.utf8.starts(with: prefix.utf8), limit.map({ ids.count < $0 }) ?? true else { return false }
                ids.append(item.id)
                return true
            }
            return ids
        }
    }
}

/// A `CRUDRepository` on any `Storage`: items are records of the `repository.items` collection.
public typealias StrataCRUDRepository = BackendRepository<StorageBackend>

extension BackendRepository where Backend == StorageBackend {
    /// A repository in table `table` of the Strata file at `path`.
    ///
    /// - Parameters:
    ///   - path: The Strata file's path.
    ///   - table: The table's name.
    ///   - transformer: How items become bytes (JSON by default).
    /// - Throws: `StrataError` when the file cannot be opened.
    public init(path: String, table: String, transformer: any DataTransformer = JSONDataTransformer()) throws {
        self.init(backend: try StorageBackend(path: path, table: table), transformer: transformer)
    }

    /// A repository in table `table` of `storage`.
    ///
    /// - Parameters:
    ///   - storage: The storage to keep items in.
    ///   - table: The table's name.
    ///   - transformer: How items become bytes (JSON by default).
    public init(storage: any Storage, table: String, transformer: any DataTransformer = JSONDataTransformer()) {
        self.init(backend: StorageBackend(storage: storage, table: table), transformer: transformer)
    }
}
