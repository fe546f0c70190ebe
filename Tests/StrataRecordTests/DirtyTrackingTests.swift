import Foundation
import Strata
import StrataRecord
import StrataTestBackends
import Testing

@Suite("ActiveRecord: dirty tracking")
struct DirtyTrackingTests {
    @Test("changedFields lists what changed since loading; saving clears it", arguments: RecordBackend.available)
    func changedFields(_ backend: RecordBackend) throws {
        try withDatabase(backend) { db, _ in
            var user = User(name: "Ada", email: "ada@example.com", age: 36)
            try user.save(on: db)
            #expect(!user.hasChanges)
            user.age = 37
            user.name = "Ada L"
            #expect(Set(user.changedFields) == ["age", "name"])
            try user.save(on: db)
            #expect(!user.hasChanges)
            var loaded = try #require(try User.find(user.id, on: db))
            #expect(!loaded.hasChanges)
            loaded.email = "ada@lovelace.org"
            #expect(loaded.changedFields == ["email"])
        }
    }

    @Test("saving without changes writes nothing (no commit)")
    func noChangesNoWrite() throws {
        try withDatabase { db, _ in
            var user = User(name: "Ada", email: "ada@example.com")
            try user.save(on: db)
            let file = try #require(db.storage as? StrataStorage)
            let before = try file.database.statistics().commitSequence
            try user.save(on: db)
            #expect(try file.database.statistics().commitSequence == before)
        }
    }

    @Test("two copies of one row changing different fields both keep their change", arguments: RecordBackend.available)
    func concurrentEditsMerge(_ backend: RecordBackend) throws {
        try withDatabase(backend) { db, _ in
            var user = User(name: "Ada", email: "ada@example.com", age: 36)
            try user.save(on: db)
            var first = try #require(try User.find(user.id, on: db))
            var second = try #require(try User.find(user.id, on: db))
            first.age = 40
            second.name = "Augusta Ada"
            try first.save(on: db)
            try second.save(on: db)
            let stored = try #require(try User.find(user.id, on: db))
            #expect(stored.age == 40 && stored.name == "Augusta Ada")
        }
    }
}
