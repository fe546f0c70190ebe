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

/// The article's per-entity accessor: the generic base, extended for one entity.
final class UserAccessor: Accessor<UserEntity>, @unchecked Sendable {
    func named(_ name: String) throws -> [UserEntity] { try storage.read(UserEntity.filter(\.name == name)) }
}

@Suite("Accessor and Entity")
struct AccessorTests {
    func withPath(_ body: (String) throws -> Void) throws {
        let path = NSTemporaryDirectory() + "strata-accessor-" + UUID().uuidString + ".strata"
        defer { try? FileManager.default.removeItem(atPath: path) }
        try body(path)
    }

    @Test("create assigns the id and both times; a subclass adds its own queries")
    func create() throws {
        try withPath { path in
            let users = try UserAccessor(storage: StrataStorage(path: path))
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
            let users = try UserAccessor(storage: StrataStorage(path: path))
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
            var users = try UserAccessor(storage: storage)
            for name in ["a", "b", "c"] { try users.create { $0.name = name } }
            #expect(try users.delete(users.find(3)!))
            try storage.close()
            users = try UserAccessor(storage: StrataStorage(path: path))
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

    @Test("an entity whose schema does not auto-increment is refused")
    func schemaMustAutoIncrement() {
        #expect(throws: StorageError.self) { try Accessor<PlainIDEntity>(storage: try MemoryStorage()) }
    }
}
