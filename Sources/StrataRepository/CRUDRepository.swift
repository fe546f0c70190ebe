import Foundation
import Strata

/// Create, read, update and delete `Codable` items by string id (the CRUD article's
/// protocol), plus what its users need next: `exists`, ordered id listing and batches.
///
/// ```swift
/// let repository: any CRUDRepository = try StrataCRUDRepository(path: "app.strata", table: "clients")
/// try await repository.create(id: "client", item: Client(name: "Chill Client"))
/// var client: Client = try await repository.read(id: "client")
/// client.name = "Busy Client"
/// try await repository.update(id: "client", item: client)
/// try await repository.delete(id: "client")
/// ```
///
/// `create` refuses an id that is taken (`RepositoryError.alreadyExists`) where the article's
/// silently overwrote: replacing is what `update` says, so an accidental reuse of an id
/// cannot destroy data. `read`, `update` and `delete` of a missing id throw
/// `RepositoryError.recordNotFound`.
public protocol CRUDRepository: Sendable {
    /// Stores a new item under `id`.
    /// - Parameters:
    ///   - id: The new item's id.
    ///   - item: The item.
    /// - Throws: `RepositoryError.alreadyExists` when the id is taken; `.encodingFailed`; `.storage`.
    func create<T: Codable & Sendable>(id: String, item: T) async throws
    /// The item stored under `id`.
    /// - Parameter id: The item's id.
    /// - Returns: The item.
    /// - Throws: `RepositoryError.recordNotFound`; `.decodingFailed`; `.transformerMismatch`; `.storage`.
    func read<T: Codable & Sendable>(id: String) async throws -> T
    /// Replaces the item stored under `id`.
    /// - Parameters:
    ///   - id: The item's id.
    ///   - item: The new item.
    /// - Throws: `RepositoryError.recordNotFound`; `.encodingFailed`; `.storage`.
    func update<T: Codable & Sendable>(id: String, item: T) async throws
    /// Removes the item stored under `id`.
    /// - Parameter id: The item's id.
    /// - Throws: `RepositoryError.recordNotFound`; `.storage`.
    func delete(id: String) async throws
    /// Whether an item is stored under `id`.
    /// - Parameter id: The item's id.
    /// - Returns: True when it is stored.
    /// - Throws: `RepositoryError.storage`.
    func exists(id: String) async throws -> Bool
    /// Ids starting with `prefix`, in ascending order (by UTF-8 bytes), at most `limit`.
    ///
    /// - Parameters:
    ///   - prefix: What the ids start with; "" for all.
    ///   - limit: The most ids to return; nil for all.
    /// - Returns: The ids.
    /// - Throws: `RepositoryError.storage`.
    func list(prefix: String, limit: Int?) async throws -> [String]
    /// Creates every item, or none when any id is taken (`alreadyExists` names it).
    ///
    /// - Parameter items: The ids and items.
    /// - Throws: `RepositoryError.alreadyExists`; `.encodingFailed`; `.storage`.
    func create<T: Codable & Sendable>(_ items: [(id: String, item: T)]) async throws
    /// The items stored under `ids`, in that order; `recordNotFound` names the first missing id.
    ///
    /// - Parameter ids: The items' ids.
    /// - Returns: The items.
    /// - Throws: `RepositoryError.recordNotFound`; `.decodingFailed`; `.storage`.
    func read<T: Codable & Sendable>(ids: [String]) async throws -> [T]
    /// Deletes every item, or none when any id is missing.
    ///
    /// - Parameter ids: The items' ids.
    /// - Throws: `RepositoryError.recordNotFound`; `.storage`.
    func delete(ids: [String]) async throws
}

extension CRUDRepository {
    /// `read(id:)` with the type spelled out: `try await repository.read(Client.self, id: "c1")`.
    ///
    /// - Parameters:
    ///   - type: The item's type.
    ///   - id: The item's id.
    /// - Returns: The item.
    /// - Throws: As `read(id:)`.
    public func read<T: Codable & Sendable>(_ type: T.Type, id: String) async throws -> T { try await read(id: id) }

    /// The ids starting with `prefix`, in byte order, at most `limit`.
    ///
    /// - Parameter prefix: What the ids start with; "" for all.
    /// - Returns: The ids, in byte order.
    /// - Throws: `RepositoryError.storage` when the backend cannot be read.
    public func list(prefix: String = "") async throws -> [String] { try await list(prefix: prefix, limit: nil) }
}

/// Where a repository keeps its bytes. Calls are synchronous and may block (disk); the
/// repository runs them off the cooperative pool. Implement it to add a backend: the shared
/// conformance tests (`RepositoryConformance` in the tests) say what it must do.
public protocol RepositoryBackend: Sendable {
    /// The stored bytes of `id`.
    /// - Parameter id: The item's id.
    /// - Returns: The bytes, or nil when none are stored.
    /// - Throws: The store's read errors.
    func load(_ id: String) throws -> Data?
    /// Stores new items; throws `alreadyExists` (storing none) when any id is taken.
    ///
    /// - Parameter items: The ids and bytes.
    /// - Throws: `RepositoryError.alreadyExists`; the store's errors.
    func insert(_ items: [(id: String, data: Data)]) throws
    /// Replaces an existing item; throws `recordNotFound` when it is missing.
    ///
    /// - Parameters:
    ///   - id: The item's id.
    ///   - data: Its new bytes.
    /// - Throws: `RepositoryError.recordNotFound`; the store's errors.
    func replace(_ id: String, with data: Data) throws
    /// Removes items; throws `recordNotFound` (removing none) when any is missing.
    ///
    /// - Parameter ids: The items' ids.
    /// - Throws: `RepositoryError.recordNotFound`; the store's errors.
    func remove(_ ids: [String]) throws
    /// The ids starting with `prefix`, in byte order, at most `limit`.
    /// - Parameters:
    ///   - prefix: What the ids start with; "" for all.
    ///   - limit: The most ids to return; nil for all.
    /// - Returns: The ids.
    /// - Throws: The store's read errors.
    func ids(prefix: String, limit: Int?) throws -> [String]
}

/// A `CRUDRepository` on any backend, encoding items with one transformer.
public struct BackendRepository<Backend: RepositoryBackend>: CRUDRepository {
    /// Where the bytes go.
    public let backend: Backend
    /// How items become bytes.
    public let transformer: any DataTransformer

    /// A repository on `backend`, encoding with `transformer`.
    ///
    /// - Parameters:
    ///   - backend: Where the encoded items are kept.
    ///   - transformer: How items become bytes (JSON by default).
    public init(backend: Backend, transformer: any DataTransformer = JSONDataTransformer()) {
        self.backend = backend
        self.transformer = transformer
    }

    /// Stores a new item under `id`.
    /// - Throws: `RepositoryError.alreadyExists` when the id is taken; `.encodingFailed`.
    /// - Parameters:
    ///   - id: The new item's id.
    ///   - item: The item.
    public func create<T: Codable & Sendable>(id: String, item: T) async throws {
        try await create([(id: id, item: item)])
    }

    /// The item stored under `id`.
    /// - Throws: `RepositoryError.recordNotFound`; `.decodingFailed`; `.transformerMismatch`.
    /// - Parameter id: The item's id.
    /// - Returns: The item.
    public func read<T: Codable & Sendable>(id: String) async throws -> T {
        try await read(ids: [id])[0]
    }

    /// Replaces the item under `id`.
    /// - Throws: `RepositoryError.recordNotFound` when there is none.
    /// - Parameters:
    ///   - id: The item's id.
    ///   - item: The new item.
    public func update<T: Codable & Sendable>(id: String, item: T) async throws {
        let data = try await StoredItem.encode(item, id: id, transformer: transformer)
        try await run("update", id) { try backend.replace(id, with: data) }
    }

    /// Removes the item under `id`.
    /// - Throws: `RepositoryError.recordNotFound` when there is none.
    /// - Parameter id: The item's id.
    public func delete(id: String) async throws { try await delete(ids: [id]) }

    /// Whether an item is stored under `id`.
    ///
    /// - Parameter id: The item's id.
    /// - Returns: True when it is stored.
    /// - Throws: `RepositoryError.storage` when the backend cannot be read.
    public func exists(id: String) async throws -> Bool {
        try await run("exists", id) { try backend.load(id) != nil }
    }

    /// The ids starting with `prefix`, in byte order, at most `limit`.
    ///
    /// - Parameters:
    ///   - prefix: What the ids start with; "" for all.
    ///   - limit: The most ids to return; nil for all.
    /// - Returns: The ids, in byte order.
    /// - Throws: `RepositoryError.storage` when the backend cannot be read.
    public func list(prefix: String, limit: Int?) async throws -> [String] {
        try await run("list", nil) { try backend.ids(prefix: prefix, limit: limit) }
    }

    /// Stores several new items, all or none.
    /// - Throws: `RepositoryError.alreadyExists` when an id is taken (nothing is stored).
    /// - Parameter items: The ids and items.
    public func create<T: Codable & Sendable>(_ items: [(id: String, item: T)]) async throws {
        var encoded: [(id: String, data: Data)] = []
        encoded.reserveCapacity(items.count)
        for (id, item) in items { encoded.append((id, try await StoredItem.encode(item, id: id, transformer: transformer))) }
        let rows = encoded
        try await run("create", items.count == 1 ? items[0].id : nil) { try backend.insert(rows) }
    }

    /// The items stored under `ids`, in order.
    /// - Throws: `RepositoryError.recordNotFound` for a missing id.
    /// - Parameter ids: The items' ids.
    /// - Returns: The items, in the order of `ids`.
    public func read<T: Codable & Sendable>(ids: [String]) async throws -> [T] {
        let stored = try await run("read", ids.count == 1 ? ids[0] : nil) { try ids.map { try backend.load($0) } }
        var items: [T] = []
        items.reserveCapacity(ids.count)
        for (id, data) in zip(ids, stored) {
            guard let data else { throw RepositoryError.recordNotFound(id: id) }
            items.append(try await StoredItem.decode(T.self, from: data, id: id, transformer: transformer))
        }
        return items
    }

    /// Removes the items under `ids`, all or none.
    /// - Throws: `RepositoryError.recordNotFound` for a missing id (nothing is removed).
    /// - Parameter ids: The items' ids.
    public func delete(ids: [String]) async throws {
        try await run("delete", ids.count == 1 ? ids[0] : nil) { try backend.remove(ids) }
    }

    /// Runs a backend call off the cooperative pool; its own errors pass through, anything
    /// else becomes `RepositoryError.storage` with the cause.
    private func run<R: Sendable>(_ operation: String, _ id: String?, _ work: @escaping @Sendable () throws -> R) async throws -> R {
        do {
            return try await offload(work)
        } catch let error as RepositoryError {
            throw error
        } catch {
            throw RepositoryError.storage(operation: operation, id: id, underlying: error)
        }
    }
}
