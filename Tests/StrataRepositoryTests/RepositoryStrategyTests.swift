import Foundation
import StrataRepository
import Synchronization
import Testing

/// A memory source that fails the operations it is told to, and counts what it was asked.
final class FlakySource: DataSource, Sendable {
    typealias Item = Book
    let base: MemoryDataSource<Book>
    let name: String
    let failing = Mutex<Set<String>>([])
    let calls = Mutex<[String]>([])

    init(_ name: String) {
        self.name = name
        base = MemoryDataSource(capacity: 100, name: name)
    }

    struct Down: Error {}

    private func call(_ operation: String) throws {
        calls.withLock { $0.append(operation) }
        if failing.withLock({ $0.contains(operation) }) { throw Down() }
    }

    func getAll() async throws -> [Book] { try call("getAll"); return try await base.getAll() }
    func getById(_ id: String) async throws -> Book { try call("getById"); return try await base.getById(id) }
    func insert(_ item: Book) async throws { try call("insert"); try await base.insert(item) }
    func update(_ item: Book) async throws { try call("update"); try await base.update(item) }
    func clean() async throws { try call("clean"); try await base.clean() }
    func deleteById(_ id: String) async throws { try call("deleteById"); try await base.deleteById(id) }
}

@Suite("Repository strategies over several sources")
struct RepositoryStrategyTests {
    let memory = FlakySource("memory"), disk = FlakySource("disk"), network = FlakySource("network")
    var sources: [any DataSource<Book>] { [memory, disk, network] }

    @Test("first match: reads from the first source that has the item, skipping failing ones")
    func firstMatch() async throws {
        try await network.base.insert(Book(id: "b", title: "from network"))
        disk.failing.withLock { _ = $0.insert("getById") }
        let repository = Repository<Book>(sources: sources, strategy: .firstMatch)
        #expect(try await repository.getById("b").title == "from network")
        #expect(try await memory.base.getAll().isEmpty)  // first match fills nothing
        await #expect { try await repository.getById("nowhere") } throws: { isNotFound($0) }
    }

    @Test("cache-through: a read found further down fills the faster sources")
    func cacheThroughFills() async throws {
        try await network.base.insert(Book(id: "b", title: "from network"))
        let repository = Repository<Book>(sources: sources, strategy: .cacheThrough)
        #expect(try await repository.getById("b").title == "from network")
        #expect(try await memory.base.getById("b").title == "from network")
        #expect(try await disk.base.getById("b").title == "from network")
        memory.calls.withLock { $0.removeAll() }
        network.calls.withLock { $0.removeAll() }
        _ = try await repository.getById("b")
        #expect(network.calls.withLock { $0 }.isEmpty)  // served by memory now
    }

    @Test("cache-through: writes reach the source of truth; a cache that refuses drops its copy")
    func cacheThroughWrites() async throws {
        let repository = Repository<Book>(sources: sources, strategy: .cacheThrough)
        try await repository.insert(Book(id: "b", title: "v1"))
        memory.failing.withLock { _ = $0.insert("update") }
        try await repository.update(Book(id: "b", title: "v2"))
        #expect(try await network.base.getById("b").title == "v2")
        await #expect { try await memory.base.getById("b") } throws: { isNotFound($0) }
        #expect(try await repository.getById("b").title == "v2")
    }

    @Test("write-through: a failing source undoes the write on the sources before it, and says so")
    func writeThroughCompensates() async throws {
        let repository = Repository<Book>(sources: sources, strategy: .writeThrough)
        try await repository.insert(Book(id: "b", title: "v1"))
        network.failing.withLock { _ = $0.insert("update") }
        await #expect { try await repository.update(Book(id: "b", title: "v2")) } throws: { error in
            guard case RepositoryError.writeFailed(source: "network", _, let compensated, let failures) = error else { return false }
            return compensated == ["disk", "memory"] && failures.isEmpty
        }
        for source in [memory, disk, network] { #expect(try await source.base.getById("b").title == "v1") }
        network.failing.withLock { $0 = ["insert"] }
        await #expect(throws: RepositoryError.self) { try await repository.insert(Book(id: "c", title: "new")) }
        for source in [memory, disk] { await #expect { try await source.base.getById("c") } throws: { isNotFound($0) } }
    }

    @Test("network only: every operation goes to the last source, never the caches")
    func networkOnly() async throws {
        let repository = Repository<Book>(sources: sources, strategy: .networkOnly)
        try await repository.insert(Book(id: "session", title: "token"))
        #expect(try await repository.getById("session").title == "token")
        #expect(memory.calls.withLock { $0 }.isEmpty && disk.calls.withLock { $0 }.isEmpty)
        network.failing.withLock { _ = $0.insert("getById") }
        await #expect(throws: FlakySource.Down.self) { try await repository.getById("session") }
    }

    @Test("a strategy is a value the app can write itself")
    func customStrategy() async throws {
        /// Reads only from caches (offline mode); refuses writes.
        struct Offline: RepositoryStrategy {
            struct ReadOnly: Error {}
            func read<Item, Value>(_ sources: [any DataSource<Item>], _ operation: ReadOperation<Item, Value>) async throws -> Value {
                try await operation.perform(sources[0])
            }
            func write<Item>(_ sources: [any DataSource<Item>], _ operation: WriteOperation<Item>) async throws { throw ReadOnly() }
        }
        try await memory.base.insert(Book(id: "b", title: "cached"))
        let repository = Repository<Book>(sources: sources, strategy: Offline())
        #expect(try await repository.getById("b").title == "cached")
        await #expect(throws: Offline.ReadOnly.self) { try await repository.insert(Book(id: "c", title: "")) }
    }
}
