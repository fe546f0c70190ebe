import Foundation
import Strata
import StrataRecord
import StrataTestBackends
import Testing

@Suite("ActiveRecord: CRUD, timestamps, ignored fields")
struct CRUDTests {
    @Test("save inserts with id and timestamps; find, all, count, update, delete, deleteAll", arguments: RecordBackend.available)
    func crud(_ backend: RecordBackend) throws {
        try withDatabase(backend) { db, _ in
            var ada = User(name: "Ada", email: "ada@example.com", age: 36)
            #expect(ada.isNew)
            try ada.save(on: db)
            #expect(ada.id == 1 && !ada.isNew && ada.createdAt == ada.updatedAt)
            var grace = User(name: "Grace", email: "grace@example.com", age: 85)
            try grace.save(on: db)
            #expect(try User.find(1, on: db) == ada)
            #expect(try User.all(on: db).map(\.name) == ["Ada", "Grace"])
            #expect(try User.count(on: db) == 2)
            ada.age = 37
            try ada.update(on: db)
            #expect(ada.updatedAt > ada.createdAt)
            #expect(try User.find(1, on: db)?.age == 37)
            #expect(try grace.delete(on: db))
            #expect(try User.find(2, on: db) == nil)
            try User.deleteAll(on: db)
            #expect(try User.count(on: db) == 0)
        }
    }

    @Test("an ignored field is never stored and reads back empty", arguments: RecordBackend.available)
    func ignoredField(_ backend: RecordBackend) throws {
        try withDatabase(backend) { db, _ in
            var user = User(name: "Ada", email: "ada@example.com")
            user.sessionToken = "secret"
            try user.save(on: db)
            #expect(try User.find(user.id, on: db)?.sessionToken == "")
            #expect(!user.changedFields.contains("sessionToken") && !user.changedFields.contains("_sessionToken"))
        }
    }

    @Test("update and delete of a record never saved are clear errors", arguments: RecordBackend.available)
    func unsavedRecord(_ backend: RecordBackend) throws {
        try withDatabase(backend) { db, _ in
            var user = User(name: "Ada", email: "ada@example.com")
            #expect(throws: RecordDatabaseError.notSaved(model: "User")) { try user.update(on: db) }
            #expect(throws: RecordDatabaseError.notSaved(model: "User")) { try user.delete(on: db) }
        }
    }

    // Serialized: its cases set and clear the one process-wide default database.
    @Test("records work without a global database, and with the optional default", .serialized, arguments: RecordBackend.available)
    func defaultDatabase(_ backend: RecordBackend) throws {
        try withDatabase(backend) { db, _ in
            RecordDatabase.default = db
            defer { RecordDatabase.default = nil }
            var user = User(name: "Ada", email: "ada@example.com")
            try user.save()
            #expect(try User.count() == 1)
        }
        var orphan = User(name: "Ada", email: "ada@example.com")
        #expect(throws: RecordDatabaseError.noDefaultDatabase) { try orphan.save() }
    }

    @Test("async save and fetch")
    func async() async throws {
        let path = NSTemporaryDirectory() + "strata-record-" + UUID().uuidString + ".strata"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let db = try RecordDatabase(path: path)
        var user = User(name: "Ada", email: "ada@example.com")
        try await user.save(on: db)
        #expect(try await User.find(user.id, on: db)?.name == "Ada")
        #expect(try await User.all(on: db).count == 1)
    }

    /// A view model's state, as SwiftUI apps hold it: a record in a main-actor property.
    @MainActor final class ProfileModel {
        var user: User
        let db: RecordDatabase
        init(user: User, db: RecordDatabase) { (self.user, self.db) = (user, db) }

        func rename(to name: String) async throws {
            user.name = name
            // `try await user.save(on: db)` does not compile here: a main-actor property
            // cannot be passed inout to an async call.
            user = try await user.saved(on: db)
        }
    }

    @Test("a record held by a @MainActor view model saves with saved(), which returns the saved copy")
    @MainActor
    func savedFromMainActorState() async throws {
        let path = NSTemporaryDirectory() + "strata-record-" + UUID().uuidString + ".strata"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let db = try RecordDatabase(path: path)
        let model = ProfileModel(user: User(name: "Ada", email: "ada@example.com"), db: db)
        try await model.rename(to: "Ada Lovelace")
        #expect(model.user.id != 0 && !model.user.hasChanges)
        #expect(try await User.find(model.user.id, on: db)?.name == "Ada Lovelace")
        try await model.rename(to: "Countess of Lovelace")
        #expect(try await User.all(on: db).map(\.name) == ["Countess of Lovelace"])
    }

    @Test("saved() leaves the value it was called on as it was")
    func savedReturnsACopy() throws {
        let path = NSTemporaryDirectory() + "strata-record-" + UUID().uuidString + ".strata"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let db = try RecordDatabase(path: path)
        let draft = User(name: "Ada", email: "ada@example.com")
        let stored = try draft.saved(on: db)
        #expect(draft.isNew && !stored.isNew && stored.name == "Ada")
    }
}
