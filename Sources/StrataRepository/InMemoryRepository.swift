import Foundation
import Synchronization

/// Items in a dictionary: for tests and previews, and as the reference backend.
public final class InMemoryBackend: RepositoryBackend {
    private let items = Mutex<[String: Data]>([:])

    /// An empty store.
    public init() {}

    /// The stored bytes of `id`, or nil.
    ///
    /// - Parameter id: The item's id.
    /// - Returns: The item's encoded bytes, or nil when none is stored under `id`.
    /// - Throws: The store's read errors.
    public func load(_ id: String) throws -> Data? { items.withLock { $0[id] } }

    /// Stores new items, all or none.
    /// - Throws: `RepositoryError.alreadyExists` when an id is taken (nothing is stored).
    /// - Parameter new: The ids and encoded bytes to store.
    public func insert(_ new: [(id: String, data: Data)]) throws {
        try items.withLock { items in
            try checkInsert(new.map(\.id)) { items[$0] != nil }
            for (id, data) in new { items[id] = data }
        }
    }

    /// Replaces a stored item.
    /// - Throws: `RepositoryError.recordNotFound` when there is none.
    /// - Parameters:
    ///   - id: The item's id.
    ///   - data: Its new encoded bytes.
    public func replace(_ id: String, with data: Data) throws {
        try items.withLock { items in
            guard items[id] != nil else { throw RepositoryError.recordNotFound(id: id) }
            items[id] = data
        }
    }

    /// Removes items, all or none.
    /// - Throws: `RepositoryError.recordNotFound` for one not stored (nothing is removed).
    /// - Parameter ids: The ids of the items to remove.
    public func remove(_ ids: [String]) throws {
        try items.withLock { items in
            try checkRemove(ids) { items[$0] != nil }
            for id in ids { items[id] = nil }
        }
    }

    /// The ids starting with `prefix`, in byte order, at most `limit`.
    ///
    /// - Parameters:
    ///   - prefix: What the ids start with; "" for all.
    ///   - limit: The most ids to return; nil for all.
    /// - Returns: The ids, in byte order.
    /// - Throws: The store's read errors.
    public func ids(prefix: String, limit: Int?) throws -> [String] {
        orderedIDs(items.withLock { Array($0.keys) }, prefix: prefix, limit: limit)
    }
}

/// A `CRUDRepository` in memory, for tests.
public typealias InMemoryRepository = BackendRepository<InMemoryBackend>

extension BackendRepository where Backend == InMemoryBackend {
    /// An empty in-memory repository encoding with `transformer`.
    ///
    /// - Parameter transformer: How items become bytes (JSON by default).
    public init(transformer: any DataTransformer = JSONDataTransformer()) {
        self.init(backend: InMemoryBackend(), transformer: transformer)
    }
}

/// Throws `alreadyExists` for the first taken id, or for an id given twice.
func checkInsert(_ ids: [String], exists: (String) throws -> Bool) throws {
    var seen = Set<String>()
    for id in ids where try exists(id) || !seen.insert(id).inserted { throw RepositoryError.alreadyExists(id: id) }
}

/// Throws `recordNotFound` for the first missing id.
func checkRemove(_ ids: [String], exists: (String) throws -> Bool) throws {
    for id in ids where try !exists(id) { throw RepositoryError.recordNotFound(id: id) }
}

/// Ids with `prefix`, ascending by UTF-8 bytes, at most `limit`.
func orderedIDs(_ ids: some Sequence<String>, prefix: String, limit: Int?) -> [String] {
    let sorted = ids.filter { $0.utf8.starts(with: prefix.utf8) }.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
    return limit.map { Array(sorted.prefix($0)) } ?? sorted
}
