import Foundation
import Strata
import StrataRepository
import Testing

struct UserEntity: Entity, Equatable {
    var id: Int64 = 0
    var created = Date(timeIntervalSince1970: 0)
    var modified = Date(timeIntervalSince1970: 0)
    var name = ""
    static let schema = Schema<UserEntity>.autoIncrementing(\.id, indexes: [.index(\.name)])
}

/// The article's per-entity accessor: the generic accessor, extended for one entity.
typealias UserAccessor = Accessor<UserEntity>
extension Accessor<UserEntity> {
    func named(_ name: String) throws -> [UserEntity] { try storage.read(UserEntity.filter(\.name == name)) }
}

/// The article's static holder: an accessor in a `static let`, with no `try!` and no
/// `@unchecked Sendable` (it compiles in Swift 6 mode only because the accessor is Sendable).
enum AccessorHolder {
    static let storage = MemoryStorage.shared
    static let users = UserAccessor(storage: storage)
}

extension MemoryStorage {
    /// One in-memory storage for the holder above.
    static let shared: MemoryStorage = {
        do { return try MemoryStorage() } catch { preconditionFailure("MemoryStorage() cannot fail: \(error)") }
    }()
}

@Suite("Accessor and Entity")
struct AccessorTests {
    func withPath(_ body: (String) throws -> Void) throws {
        let path = NSTemporaryDirectory() + "strata-accessor-" + UUID().uuidString + ".strata"
        defer { try? FileManager.default.removeItem(atPath: path) }
        try body(path)
    }

    @Test("create assigns the id and both times; an extension adds the entity's own queries")
    func create() throws {
        try withPath { path in
            let users = UserAccessor(storage: try StrataStorage(path: path))
            let before = Date()
            let ada = try users.create { $0.name = "Ada" }
            #expect(ada.id == 1 && ada.created == ada.modified && ada.created >= before)
            #expect(try users.create { $0.name = "Grace" }.id == 2)
            #expect(try users.named("Ada") == [ada])
            #expect(try users.find(1) == ada)
        }
    }

    @Test("save updates modified and keeps created; an entity never created cannot be saved")
    func save() throws {
        try withPath { path in
            let users = UserAccessor(storage: try StrataStorage(path: path))
            var ada = try users.create { $0.name = "Ada" }
            ada.name = "Ada Lovelace"
            ada.created = .distantPast  // ignored: created belongs to the accessor
            let saved = try users.save(ada)
            let stored = try #require(try users.find(1))
            #expect(saved.modified > saved.created && saved.created == stored.created)
            #expect(try users.find(1)?.name == "Ada Lovelace")
            #expect(throws: RepositoryError.self) { try users.save(UserEntity(id: 99, name: "ghost")) }
        }
    }

    @Test("ids stay unique and increasing across reopen and after deleting the newest")
    func autoIncrementAcrossReopen() throws {
        try withPath { path in
            let storage = try StrataStorage(path: path)
            var users = UserAccessor(storage: storage)
            for name in ["a", "b", "c"] { try users.create { $0.name = name } }
            #expect(try users.delete(users.find(3)!))
            try storage.close()
            users = UserAccessor(storage: try StrataStorage(path: path))
            #expect(try users.create { $0.name = "d" }.id == 4)
            #expect(try users.all().map(\.id) == [1, 2, 4])
        }
    }

    struct PlainIDEntity: Entity {
        var id: Int64 = 0
        var created = Date()
        var modified = Date()
        static let schema = Schema<PlainIDEntity>(primaryKey: \.id)
    }

    @Test("an entity whose schema does not auto-increment is refused when the accessor creates or saves")
    func schemaMustAutoIncrement() throws {
        let accessor = Accessor<PlainIDEntity>(storage: try MemoryStorage())
        #expect(throws: StorageError.self) { try accessor.create() }
        #expect(throws: StorageError.self) { try accessor.save(PlainIDEntity()) }
    }

    @Test("an accessor in a static let creates entities (the article's holder)")
    func staticHolder() throws {
        let ada = try AccessorHolder.users.create { $0.name = "Ada" }
        #expect(try AccessorHolder.users.find(ada.id)?.name == "Ada")
    }
}
