import Foundation
import Strata
import StrataEngine

/// Items in a tree of a Strata database (`repository:TABLE`), keyed by the id's UTF-8 bytes
/// (not normalized: ids that differ in any byte are different items). Batches are one
/// transaction: all or nothing, durable when the call returns.
public final class StrataBackend: RepositoryBackend {
    public let database: Database
    public let tree: String

    /// A table in `database`; several tables can share one database file.
    public init(database: Database, table: String) throws {
        self.database = database
        self.tree = "repository:" + table
        try database.write { try $0.createTree(tree, ifNotExists: true) }
    }

    /// Opens (creating when missing) the database at `path`.
    public convenience init(path: String, table: String) throws {
        try self.init(database: Database(path: path), table: table)
    }

    /// "i" + UTF-8: the engine's keys cannot be empty, ids can.
    static func key(_ id: String) -> [UInt8] { [0x69] + Array(id.utf8) }

    public func load(_ id: String) throws -> Data? {
        try database.read { try $0.withValue(Self.key(id), in: tree) { Data($0) } }
    }

    public func insert(_ items: [(id: String, data: Data)]) throws {
        try database.write { tx in
            try checkInsert(items.map(\.id)) { try tx.contains(Self.key($0), in: tree) }
            for (id, data) in items { try tx.put([UInt8](data), forKey: Self.key(id), in: tree) }
        }
    }

    public func replace(_ id: String, with data: Data) throws {
        try database.write { tx in
            guard try tx.contains(Self.key(id), in: tree) else { throw RepositoryError.recordNotFound(id: id) }
            try tx.put([UInt8](data), forKey: Self.key(id), in: tree)
        }
    }

    public func remove(_ ids: [String]) throws {
        try database.write { tx in
            try checkRemove(ids) { try tx.contains(Self.key($0), in: tree) }
            for id in ids { _ = try tx.delete(Self.key(id), in: tree) }
        }
    }

    public func ids(prefix: String, limit: Int?) throws -> [String] {
        try database.read { snapshot in
            var ids: [String] = []
            try snapshot.scan(tree, in: .prefix(Self.key(prefix))) { key, _ in
                if let limit, ids.count >= limit { return false }
                ids.append(String(decoding: key.dropFirst(), as: UTF8.self))
                return true
            }
            return ids
        }
    }
}

public typealias StrataCRUDRepository = BackendRepository<StrataBackend>

extension BackendRepository where Backend == StrataBackend {
    /// A repository in table `table` of the Strata database at `path`.
    public init(path: String, table: String, transformer: any DataTransformer = JSONDataTransformer()) throws {
        self.init(backend: try StrataBackend(path: path, table: table), transformer: transformer)
    }

    public init(database: Database, table: String, transformer: any DataTransformer = JSONDataTransformer()) throws {
        self.init(backend: try StrataBackend(database: database, table: table), transformer: transformer)
    }
}
