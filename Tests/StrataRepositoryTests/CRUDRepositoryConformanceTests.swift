import Foundation
import Strata
import StrataRepository
import Synchronization
import StrataTestBackends
import Testing

/// UserDefaults suites the tests created, removed when the test process exits.
let testSuites: Mutex<[String]> = {
    atexit { testSuites.withLock { for suite in $0 { UserDefaults.standard.removePersistentDomain(forName: suite) } } }
    return Mutex([])
}()

func testDefaults(_ place: String) -> UserDefaults {
    let suite = "strata-tests-" + place
    testSuites.withLock { $0.append(suite) }
    return UserDefaults(suiteName: suite)!
}

struct Client: Codable, Sendable, Equatable {
    var name: String
}

/// Each backend, freshly created, with a way to remove what it left behind.
enum Backend: String, CaseIterable, CustomTestStringConvertible {
    case strata, memoryStorage, sqlite, postgres, fileSystem, inMemory, userDefaults

    /// Every backend, without PostgreSQL where no server answers outside CI (`StorageBackend`).
    static var available: [Backend] { allCases.filter { $0 != .postgres || StorageBackend.available.contains(.postgres) } }

    /// The `MemoryStorage` of each place: making a repository again at the same place
    /// reopens it, as a file would be.
    static let memoryStorages = Mutex<[String: MemoryStorage]>([:])

    var testDescription: String { rawValue }

    func make(transformer: any DataTransformer = JSONDataTransformer(), place: String = UUID().uuidString) throws -> any CRUDRepository {
        let root = NSTemporaryDirectory() + "strata-repo-" + place
        switch self {
        case .strata: return try StrataCRUDRepository(path: root + ".strata", table: "clients", transformer: transformer)
        case .memoryStorage:
            let storage = try Self.memoryStorages.withLock { storages in
                if let known = storages[place] { return known }
                let made = try MemoryStorage()
                storages[place] = made
                return made
            }
            return StrataCRUDRepository(storage: storage, table: "clients", transformer: transformer)
        case .sqlite: return StrataCRUDRepository(storage: try StorageBackend.sqlite.make(place: place), table: "clients", transformer: transformer)
        case .postgres: return StrataCRUDRepository(storage: try StorageBackend.postgres.make(place: place), table: "clients", transformer: transformer)
        case .fileSystem: return try FileSystemRepository(directory: root, transformer: transformer)
        case .inMemory: return InMemoryRepository(transformer: transformer)
        case .userDefaults:
            return UserDefaultsRepository(tableName: "clients", defaults: testDefaults(place), dataTransformer: transformer)
        }
    }
}

/// The behaviour every CRUDRepository backend must have: one suite, run on each.
@Suite("CRUDRepository: shared behaviour of every backend")
struct CRUDRepositoryConformanceTests {
    @Test("the article's client code: create, read, update, delete, then reading the deleted item throws", arguments: Backend.available)
    func articleClientCode(_ backend: Backend) async throws {
        let clientRecordIdentifier = "client"
        let clientOne = Client(name: "Chill Client")
        let repository = try backend.make()
        try await repository.create(id: clientRecordIdentifier, item: clientOne)
        var clientRecord: Client = try await repository.read(id: clientRecordIdentifier)
        #expect(clientRecord.name == "Chill Client")
        clientRecord.name = "Busy Client"
        try await repository.update(id: clientRecordIdentifier, item: clientRecord)
        let updatedClient: Client = try await repository.read(id: clientRecordIdentifier)
        #expect(updatedClient.name == "Busy Client")
        try await repository.delete(id: clientRecordIdentifier)
        await #expect(throws: RepositoryError.self) { let _: Client = try await repository.read(id: clientRecordIdentifier) }
    }

    @Test("the article's array access: an array is one item", arguments: Backend.available)
    func articleArrayAccess(_ backend: Backend) async throws {
        let repository = try backend.make()
        let array = [Client(name: "Chill Client"), Client(name: "Other")]
        try await repository.create(id: "clientArray", item: array)
        let savedArray: [Client] = try await repository.read(id: "clientArray")
        #expect(savedArray == array)
    }

    @Test("create refuses a taken id and leaves the stored item", arguments: Backend.available)
    func createRefusesTakenID(_ backend: Backend) async throws {
        let repository = try backend.make()
        try await repository.create(id: "a", item: Client(name: "first"))
        await #expect { try await repository.create(id: "a", item: Client(name: "second")) } throws: { error in
            if case RepositoryError.alreadyExists(id: "a") = error { return true }
            return false
        }
        #expect(try await repository.read(Client.self, id: "a") == Client(name: "first"))
    }

    @Test("read, update and delete of a missing id throw recordNotFound naming it", arguments: Backend.available)
    func missingIDs(_ backend: Backend) async throws {
        let repository = try backend.make()
        func isNotFound(_ error: any Error) -> Bool {
            if case RepositoryError.recordNotFound(id: "ghost") = error { return true }
            return false
        }
        await #expect { let _: Client = try await repository.read(id: "ghost") } throws: { isNotFound($0) }
        await #expect { try await repository.update(id: "ghost", item: Client(name: "x")) } throws: { isNotFound($0) }
        await #expect { try await repository.delete(id: "ghost") } throws: { isNotFound($0) }
        #expect(try await repository.exists(id: "ghost") == false)
    }

    @Test("list returns ids with a prefix in byte order, up to a limit", arguments: Backend.available)
    func listing(_ backend: Backend) async throws {
        let repository = try backend.make()
        for id in ["user/3", "user/1", "admin/1", "user/2", "user/10"] { try await repository.create(id: id, item: Client(name: id)) }
        #expect(try await repository.list(prefix: "user/", limit: nil) == ["user/1", "user/10", "user/2", "user/3"])
        #expect(try await repository.list(prefix: "user/", limit: 2) == ["user/1", "user/10"])
        #expect(try await repository.list() == ["admin/1", "user/1", "user/10", "user/2", "user/3"])
        #expect(try await repository.exists(id: "admin/1"))
    }

    @Test("batch create is all or nothing; batch read keeps order; batch delete is all or nothing", arguments: Backend.available)
    func batches(_ backend: Backend) async throws {
        let repository = try backend.make()
        let items = (0 ..< 5).map { (id: "c\($0)", item: Client(name: "client \($0)")) }
        try await repository.create(items)
        await #expect(throws: RepositoryError.self) {
            try await repository.create([(id: "new", item: Client(name: "new")), (id: "c3", item: Client(name: "dup"))])
        }
        #expect(try await repository.exists(id: "new") == false)
        let read: [Client] = try await repository.read(ids: ["c4", "c0", "c2"])
        #expect(read.map(\.name) == ["client 4", "client 0", "client 2"])
        await #expect(throws: RepositoryError.self) { try await repository.delete(ids: ["c1", "missing"]) }
        #expect(try await repository.exists(id: "c1"))
        try await repository.delete(ids: ["c1", "c2"])
        #expect(try await repository.list() == ["c0", "c3", "c4"])
    }

    @Test("every transformer round-trips an item on every backend", arguments: Backend.available)
    func transformers(_ backend: Backend) async throws {
        let transformers: [any DataTransformer] = [JSONDataTransformer(), PropertyListDataTransformer(format: .xml),
                                                   PropertyListDataTransformer(format: .binary), RecordDataTransformer()]
        for transformer in transformers {
            let repository = try backend.make(transformer: transformer)
            let item = [Client(name: "Ada"), Client(name: "Grace")]
            try await repository.create(id: "team", item: item)
            #expect(try await repository.read([Client].self, id: "team") == item, "\(transformer.name)")
        }
    }

    @Test("a transformer that suspends (sealing through an actor) round-trips on every backend, and its bytes are sealed", arguments: Backend.available)
    func asyncTransformer(_ backend: Backend) async throws {
        let vault = KeyVault()
        let repository = try backend.make(transformer: SealedTransformer(vault: vault))
        try await repository.create(id: "ada", item: Client(name: "Ada"))
        #expect(try await repository.read(Client.self, id: "ada") == Client(name: "Ada"))
        #expect(await vault.uses == 2, "one seal, one open")
    }

    @Test("reading with another transformer than the writer's is a clear error", arguments: Backend.available)
    func transformerMismatch(_ backend: Backend) async throws {
        guard backend != .inMemory else { return }  // a memory repository cannot be reopened
        let place = UUID().uuidString
        try await backend.make(transformer: JSONDataTransformer(), place: place).create(id: "c", item: Client(name: "x"))
        let reader = try backend.make(transformer: PropertyListDataTransformer(format: .xml), place: place)
        await #expect { let _: Client = try await reader.read(id: "c") } throws: { error in
            guard case RepositoryError.transformerMismatch(id: "c", stored: "json", reading: "plist-xml") = error else { return false }
            return "\(error)".contains("open the repository with the json transformer")
        }
    }

    @Test("a decoding failure names the id and the transformer", arguments: Backend.available)
    func decodingFailureNamesItem(_ backend: Backend) async throws {
        let repository = try backend.make()
        try await repository.create(id: "n", item: 42)
        await #expect { let _: Client = try await repository.read(id: "n") } throws: { error in
            guard case RepositoryError.decodingFailed(id: "n", transformer: "json", _) = error else { return false }
            return true
        }
    }
}

/// Holds a key and counts its uses: a transformer that must suspend to reach it.
actor KeyVault {
    private(set) var uses = 0
    private let key: UInt8 = 0x5A

    func seal(_ data: Data) -> Data {
        uses += 1
        return Data(data.map { $0 ^ key })
    }

    func open(_ data: Data) -> Data { seal(data) }
}

/// JSON sealed by the vault: an asynchronous `DataTransformer`.
struct SealedTransformer: DataTransformer {
    let name = "sealed-json"
    let vault: KeyVault

    func encode<T: Encodable & Sendable>(_ item: T) async throws -> Data {
        let sealed = await vault.seal(try JSONEncoder().encode(item))
        // What is stored is not the JSON.
        guard (try? JSONSerialization.jsonObject(with: sealed)) == nil else { throw CocoaError(.coderInvalidValue) }
        return sealed
    }

    func decode<T: Decodable & Sendable>(_ type: T.Type, from data: Data) async throws -> T {
        try JSONDecoder().decode(type, from: await vault.open(data))
    }
}
