import Foundation
import Strata
import StrataRecord
import StrataTestBackends
import Testing

@Suite("ActiveRecord: migrations")
struct MigrationTests {
    struct PersonV1: Model {
        var id: Int64
        var fullName: String
        static let collectionName = "people"
        static let schema = Schema<PersonV1>(primaryKey: \.id)
    }

    struct Person: ActiveRecord {
        var id: Int64 = 0
        var createdAt = Date()
        var updatedAt = Date()
        var recordState = RecordState()
        var name = ""
        var nickname: String?          // added without a migration: old records read nil
        static let collectionName = "people"
        static let schema = Schema<Person>.autoIncrementing(\.id)
    }

    static func migrator() -> RecordMigrator {
        var migrator = RecordMigrator()
        migrator.register("rename fullName to name") { writer in
            // Old records cannot be read as Person (no createdAt): replace each one.
            for old in try writer.readAll(PersonV1.self) {
                try writer.erase(PersonV1.self, primaryKey: old.id)
                try writer.create(Person(id: old.id, name: old.fullName))
            }
        }
        migrator.register("backfill nicknames") { writer in
            for var person in try writer.readAll(Person.self) where person.nickname == nil {
                person.nickname = String(person.name.prefix(3))
                try writer.persist(person)
            }
        }
        return migrator
    }

    @Test("named migrations run in order, once per file, across reopening")
    func runOnce() throws {
        try withDatabase { db, path in
            try db.storage.persist([PersonV1(id: 1, fullName: "Ada Lovelace"), PersonV1(id: 2, fullName: "Alan Turing")])
            #expect(try Self.migrator().migrate(db) == ["rename fullName to name", "backfill nicknames"])
            #expect(try Person.all(on: db).map(\.name) == ["Ada Lovelace", "Alan Turing"])
            #expect(try Person.all(on: db).map(\.nickname) == ["Ada", "Ala"])
            try db.close()
            let reopened = try RecordDatabase(path: path)
            #expect(try Self.migrator().migrate(reopened) == [])
            #expect(try Self.migrator().appliedMigrations(in: reopened) == ["rename fullName to name", "backfill nicknames"])
            try reopened.close()
        }
    }

    @Test("a migration that throws leaves neither its changes nor its record")
    func failingMigration() throws {
        try withDatabase { (db: RecordDatabase, _: String) throws in
            struct Broken: Error {}
            var migrator = RecordMigrator()
            migrator.register("half done") { writer in
                try writer.persist(Person(id: 7, name: "written then undone"))
                throw Broken()
            }
            #expect(throws: Broken.self) { try migrator.migrate(db) }
            #expect(try Person.count(on: db) == 0)
            #expect(try migrator.appliedMigrations(in: db) == [])
        }
    }

    @Test("checkRecords names a model that no longer matches the file", arguments: RecordBackend.available)
    func recordCheck(_ backend: RecordBackend) throws {
        try withDatabase(backend) { db, _ in
            struct Wrong: ActiveRecord {
                var id: Int64 = 0
                var createdAt = Date()
                var updatedAt = Date()
                var recordState = RecordState()
                var name = 0
                static let collectionName = "people"
                static let schema = Schema<Wrong>.autoIncrementing(\.id)
            }
            var person = Person(name: "Ada")
            try person.save(on: db)
            try db.checkRecords([Person.self])
            #expect(throws: RecordError.typeMismatch(collection: "people", field: "name", stored: "String", expected: "Int")) {
                try db.checkRecords([Person.self, Wrong.self])
            }
        }
    }
}

extension String {
    func leftPadded() -> String { count >= 2 ? self : "0" + self }
}
