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
    public init(storage: any Storage, table: String) {
        self.storage = storage
        self.table = table
    }

    /// Table `table` of the Strata file at `path` (created when missing).
    public convenience init(path: String, table: String) throws {
        self.init(storage: try StrataStorage(path: path), table: table)
    }

    private func key(_ id: String) -> Key { Key(table, id) }

    /// Whether `id` is stored: one point read of the primary key.
    private func exists(_ id: String, in reader: any StorageReader) throws -> Bool {
        try reader.read(RepositoryItem.self, primaryKey: key(id)) != nil
    }

    /// The stored bytes of `id`, or nil.
    public func load(_ id: String) throws -> Data? {
        try storage.read(RepositoryItem.self, primaryKey: key(id))?.data
    }

    /// Stores new items, all or none.
    /// - Throws: `RepositoryError.alreadyExists` when an id is taken (nothing is stored).
    public func insert(_ items: [(id: String, data: Data)]) throws {
        try storage.write { tx in
            try checkInsert(items.map(\.id)) { try exists($0, in: tx) }
            for (id, data) in items { try tx.create(RepositoryItem(table: table, id: id, data: data)) }
        }
    }

    /// Replaces a stored item.
    /// - Throws: `RepositoryError.recordNotFound` when there is none.
    public func replace(_ id: String, with data: Data) throws {
        try storage.write { tx in
            guard try exists(id, in: tx) else { throw RepositoryError.recordNotFound(id: id) }
            try tx.persist(RepositoryItem(table: table, id: id, data: data))
        }
    }

    /// Removes items, all or none.
    /// - Throws: `RepositoryError.recordNotFound` for one not stored (nothing is removed).
    public func remove(_ ids: [String]) throws {
        try storage.write { tx in
            try checkRemove(ids) { try exists($0, in: tx) }
            for id in ids { try tx.erase(RepositoryItem.self, primaryKey: key(id)) }
        }
    }

    /// Ids in order, from the first at or after `prefix`, while they start with it.
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
    public init(path: String, table: String, transformer: any DataTransformer = JSONDataTransformer()) throws {
        self.init(backend: try StorageBackend(path: path, table: table), transformer: transformer)
    }

    /// A repository in table `table` of `storage`.
    public init(storage: any Storage, table: String, transformer: any DataTransformer = JSONDataTransformer()) {
        self.init(backend: StorageBackend(storage: storage, table: table), transformer: transformer)
    }
}
