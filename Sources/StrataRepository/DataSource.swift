import Foundation

/// One place items live — memory, disk, network — behind the same six operations (the Data
/// Sources article's protocol, async and with typed errors instead of force-unwraps).
/// `Repository` combines several.
///
/// ```swift
/// let books: any DataSource<Book> = RepositoryDataSource(try StrataCRUDRepository(path: "books.strata", table: "books"))
/// try await books.insert(Book(id: "978-0", title: "Structure and Interpretation"))
/// let book = try await books.getById("978-0")
/// ```
public protocol DataSource<Item>: Sendable {
    associatedtype Item: Identifiable & Codable & Sendable where Item.ID == String
    /// A short label for errors and logs ("memory", "disk", "http://host/books").
    var name: String { get }
    /// Every item this source holds.
    /// - Returns: The items, in id order.
    /// - Throws: The source's errors.
    func getAll() async throws -> [Item]
    /// Throws `RepositoryError.recordNotFound` when absent.
    ///
    /// - Parameter id: The item's id.
    /// - Returns: The item.
    /// - Throws: `RepositoryError.recordNotFound`; the source's errors.
    func getById(_ id: String) async throws -> Item
    /// Throws `RepositoryError.alreadyExists` when the id is taken.
    ///
    /// - Parameter item: The new item.
    /// - Throws: `RepositoryError.alreadyExists`; the source's errors.
    func insert(_ item: Item) async throws
    /// Throws `RepositoryError.recordNotFound` when absent.
    ///
    /// - Parameter item: The item, replacing the one with its id.
    /// - Throws: `RepositoryError.recordNotFound`; the source's errors.
    func update(_ item: Item) async throws
    /// Removes every item.
    ///
    /// - Throws: The source's errors.
    func clean() async throws
    /// Throws `RepositoryError.recordNotFound` when absent.
    ///
    /// - Parameter id: The item's id.
    /// - Throws: `RepositoryError.recordNotFound`; the source's errors.
    func deleteById(_ id: String) async throws
}

extension DataSource {
    /// Inserts, or updates when the id exists: how caches are filled.
    ///
    /// - Parameter item: The item to store.
    /// - Throws: The source's errors other than `RepositoryError.recordNotFound`.
    public func upsert(_ item: Item) async throws {
        do { try await update(item) } catch RepositoryError.recordNotFound { try await insert(item) }
    }
}

/// A data source on any `CRUDRepository`: on Strata, this is the disk source.
public struct RepositoryDataSource<Item: Identifiable & Codable & Sendable>: DataSource where Item.ID == String {
    /// The repository read and written.
    public let repository: any CRUDRepository
    /// The name errors use for this source.
    public let name: String

    /// A data source on `repository`.
    ///
    /// - Parameters:
    ///   - repository: The repository holding the items.
    ///   - name: The source's name in errors.
    public init(_ repository: any CRUDRepository, name: String = "disk") {
        self.repository = repository
        self.name = name
    }

    /// Every item this source holds.
    ///
    /// - Returns: The items, in id order.
    /// - Throws: The source's errors.
    public func getAll() async throws -> [Item] { try await repository.read(ids: try await repository.list()) }
    /// The item with this id.
    /// - Throws: `RepositoryError.recordNotFound` when this source does not hold it.
    /// - Parameter id: The item's id.
    /// - Returns: The item.
    public func getById(_ id: String) async throws -> Item { try await repository.read(id: id) }
    /// Adds the item to this source.
    /// - Throws: `RepositoryError.alreadyExists` when it holds the id already.
    /// - Parameter item: The new item.
    public func insert(_ item: Item) async throws { try await repository.create(id: item.id, item: item) }
    /// Replaces the item in this source.
    /// - Throws: `RepositoryError.recordNotFound` when it does not hold the id.
    /// - Parameter item: The item, replacing the one with its id.
    public func update(_ item: Item) async throws { try await repository.update(id: item.id, item: item) }
    /// Removes every item from this source.
    ///
    /// - Throws: The source's errors.
    public func clean() async throws { try await repository.delete(ids: try await repository.list()) }
    /// Removes the item with this id.
    /// - Throws: `RepositoryError.recordNotFound` when this source does not hold it.
    /// - Parameter id: The id of the item to remove.
    public func deleteById(_ id: String) async throws { try await repository.delete(id: id) }
}
