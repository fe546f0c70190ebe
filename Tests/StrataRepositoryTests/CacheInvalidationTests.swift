import Foundation
import Strata
import StrataRepository
import Testing

/// A repository's caches follow the storage behind them when it has a `CacheInvalidation`.
@Suite("Repository caches invalidated by observation")
struct CacheInvalidationTests {
    /// A memory cache in front of a Strata storage's "books" table, read cache-through.
    static func books(on storage: any Storage, invalidation: CacheInvalidation?) -> (Repository<Book>, MemoryDataSource<Book>) {
        let cache = MemoryDataSource<Book>(capacity: 100)
        let disk = RepositoryDataSource<Book>(StrataCRUDRepository(backend: StorageBackend(storage: storage, table: "books")))
        return (Repository(sources: [cache, disk], strategy: .cacheThrough, invalidation: invalidation), cache)
    }

    /// Another part of the app (or another process) changing the book behind the repository.
    static func retitle(_ storage: any Storage, _ id: String, _ title: String) async throws {
        try await RepositoryDataSource<Book>(StrataCRUDRepository(backend: StorageBackend(storage: storage, table: "books")))
            .update(Book(id: id, title: title))
    }

    @Test("without invalidation the cache keeps serving an item changed behind it")
    func staleWithoutInvalidation() async throws {
        let storage = try MemoryStorage()
        let (books, _) = Self.books(on: storage, invalidation: nil)
        try await books.insert(Book(id: "b1", title: "Draft"))
        #expect(try await books.getById("b1").title == "Draft")
        try await Self.retitle(storage, "b1", "Final")
        #expect(try await books.getById("b1").title == "Draft", "the cache answers first")
    }

    @Test("a commit to the storage empties the cache before the next read")
    func commitInvalidatesTheCache() async throws {
        let storage = try MemoryStorage()
        let (books, cache) = Self.books(on: storage, invalidation: CacheInvalidation(observing: storage))
        try await books.insert(Book(id: "b1", title: "Draft"))
        #expect(try await books.getById("b1").title == "Draft")
        #expect(try await cache.getById("b1").title == "Draft", "the read filled the cache")
        try await Self.retitle(storage, "b1", "Final")
        #expect(try await books.getById("b1").title == "Final")
        #expect(try await cache.getById("b1").title == "Final", "and filled it again with the new item")
        #expect(try await books.getAll().map(\.title) == ["Final"])
    }

    @Test("commits to other collections leave the cache alone")
    func otherCollectionsDoNotInvalidate() async throws {
        struct Note: Model {
            var id: Int64
            static let schema = Schema<Note>(primaryKey: \.id)
        }
        let storage = try MemoryStorage()
        let (books, cache) = Self.books(on: storage, invalidation: CacheInvalidation(observing: storage))
        try await books.insert(Book(id: "b1", title: "Draft"))
        _ = try await books.getById("b1")
        try storage.persist(Note(id: 1))
        _ = try await books.getById("b1")
        #expect(try await cache.getById("b1").title == "Draft")
    }

    @Test("a read-only repository over a file sees another handle's change through its cache")
    func readOnlyFileFollowsAnotherHandle() async throws {
        let path = NSTemporaryDirectory() + "strata-cache-" + UUID().uuidString + ".strata"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let writer = try StrataStorage(path: path)
        let (writerBooks, _) = Self.books(on: writer, invalidation: nil)
        try await writerBooks.insert(Book(id: "b1", title: "Draft"))
        let reader = try StrataStorage(path: path, options: .init(readOnly: true))
        let (books, _) = Self.books(on: reader, invalidation: CacheInvalidation(observing: reader))
        #expect(try await books.getById("b1").title == "Draft")
        // The reader follows the file while observed; wait until it has seen the commit (its
        // observers are told in the order they registered: the invalidation first).
        let (commits, seen) = AsyncStream<Void>.makeStream()
        let observation = reader.observeCommits { if case .committed = $0 { seen.yield() } }
        defer { observation.cancel() }
        try await Self.retitle(writer, "b1", "Final")
        var iterator = commits.makeAsyncIterator()
        await iterator.next()
        #expect(try await books.getById("b1").title == "Final")
        try writer.close()
    }
}
