import Foundation
import StrataRepository
import Testing

struct Book: Identifiable, Codable, Sendable, Equatable {
    var id: String
    var title: String
}

/// The data source implementations, each freshly made; HTTP ones against a server of their own.
enum SourceKind: String, CaseIterable, CustomTestStringConvertible {
    case memory, disk, http
    var testDescription: String { rawValue }

    func make() throws -> (source: any DataSource<Book>, server: TestHTTPServer?) {
        switch self {
        case .memory: return (MemoryDataSource<Book>(capacity: 100), nil)
        case .disk:
            let path = NSTemporaryDirectory() + "strata-ds-" + UUID().uuidString + ".strata"
            return (RepositoryDataSource<Book>(try StrataCRUDRepository(path: path, table: "books")), nil)
        case .http:
            let endpoint = ItemsEndpoint()
            let server = try TestHTTPServer(handler: endpoint.handle)
            return (HTTPDataSource<Book>(baseURL: server.baseURL.appendingPathComponent("items"), timeout: 5), server)
        }
    }
}

func isNotFound(_ error: any Error) -> Bool {
    if case RepositoryError.recordNotFound = error { return true }
    return false
}

@Suite("DataSource: shared behaviour of memory, disk (Strata) and HTTP")
struct DataSourceConformanceTests {
    @Test("insert, getById, update, deleteById, getAll and clean", arguments: SourceKind.allCases)
    func crud(_ kind: SourceKind) async throws {
        let (source, server) = try kind.make()
        defer { server?.stop() }
        try await source.insert(Book(id: "b2", title: "Two"))
        try await source.insert(Book(id: "b1", title: "One"))
        try await source.insert(Book(id: "a/b ?", title: "Odd id"))
        #expect(try await source.getById("b1") == Book(id: "b1", title: "One"))
        #expect(try await source.getById("a/b ?").title == "Odd id")
        try await source.update(Book(id: "b1", title: "One, revised"))
        #expect(try await source.getById("b1").title == "One, revised")
        #expect(try await source.getAll().map(\.id) == ["a/b ?", "b1", "b2"])
        try await source.deleteById("b2")
        await #expect { try await source.getById("b2") } throws: { isNotFound($0) }
        try await source.clean()
        #expect(try await source.getAll().isEmpty)
    }

    @Test("missing ids and taken ids are typed errors", arguments: SourceKind.allCases)
    func typedErrors(_ kind: SourceKind) async throws {
        let (source, server) = try kind.make()
        defer { server?.stop() }
        await #expect { try await source.getById("none") } throws: { isNotFound($0) }
        await #expect { try await source.update(Book(id: "none", title: "")) } throws: { isNotFound($0) }
        await #expect { try await source.deleteById("none") } throws: { isNotFound($0) }
        try await source.insert(Book(id: "x", title: "X"))
        await #expect { try await source.insert(Book(id: "x", title: "again")) } throws: { error in
            if case RepositoryError.alreadyExists(id: "x") = error { return true }
            return false
        }
    }
}

@Suite("MemoryDataSource: a bounded cache")
struct MemoryDataSourceTests {
    @Test("least recently used: a read keeps an item, the coldest one is evicted")
    func lru() async throws {
        let cache = MemoryDataSource<Book>(capacity: 2, eviction: .leastRecentlyUsed)
        try await cache.insert(Book(id: "a", title: "A"))
        try await cache.insert(Book(id: "b", title: "B"))
        _ = try await cache.getById("a")
        try await cache.insert(Book(id: "c", title: "C"))
        #expect(try await cache.getAll().map(\.id) == ["a", "c"])
    }

    @Test("first in, first out: reads do not protect an item")
    func fifo() async throws {
        let cache = MemoryDataSource<Book>(capacity: 2, eviction: .firstInFirstOut)
        try await cache.insert(Book(id: "a", title: "A"))
        try await cache.insert(Book(id: "b", title: "B"))
        _ = try await cache.getById("a")
        try await cache.insert(Book(id: "c", title: "C"))
        #expect(try await cache.getAll().map(\.id) == ["b", "c"])
        #expect(cache.count == 2)
    }
}

@Suite("HTTPDataSource: timeouts and server errors")
struct HTTPDataSourceTests {
    @Test("a server that answers too late is a timeout naming the URL")
    func timeout() async throws {
        let endpoint = ItemsEndpoint()
        endpoint.delay.withLock { $0 = 3 }
        let server = try TestHTTPServer(handler: endpoint.handle)
        defer { server.stop() }
        let source = HTTPDataSource<Book>(baseURL: server.baseURL.appendingPathComponent("items"), timeout: 0.5)
        await #expect { try await source.getAll() } throws: { error in
            guard case RepositoryError.timeout(let url, 0.5) = error else { return false }
            return url.hasSuffix("/items")
        }
    }

    @Test("a 500 is an httpStatus error with the status and the body")
    func serverError() async throws {
        let endpoint = ItemsEndpoint()
        endpoint.failWith.withLock { $0 = 500 }
        let server = try TestHTTPServer(handler: endpoint.handle)
        defer { server.stop() }
        let source = HTTPDataSource<Book>(baseURL: server.baseURL.appendingPathComponent("items"))
        await #expect { try await source.getById("b1") } throws: { error in
            guard case RepositoryError.httpStatus(_, "GET", 500, let body) = error else { return false }
            return body.contains("down")
        }
    }

    @Test("a server that is not there is a storage error with the cause")
    func unreachable() async throws {
        let server = try TestHTTPServer(handler: { _ in .init(status: 200) })
        let url = server.baseURL.appendingPathComponent("items")
        server.stop()
        let source = HTTPDataSource<Book>(baseURL: url, timeout: 2)
        await #expect { try await source.getAll() } throws: { error in
            guard case RepositoryError.storage = error else { return false }
            return true
        }
    }
}
