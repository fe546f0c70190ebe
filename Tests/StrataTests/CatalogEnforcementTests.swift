import Foundation
import Strata
import StrataEngine
import Testing

/// The catalog is the truth for a collection: what each model type writes is checked
/// against it, and nothing a model does not mention is dropped or left stale.
@Suite("Catalog enforcement")
struct CatalogEnforcementTests {
    struct Member: Model, Equatable {
        var id: Int64
        var name: String
        var email: String
        var age: Int
        static let collectionName = "members"
        static let schema = Schema<Member>(primaryKey: \.id, indexes: [.unique(\.email), .index(\.age)])
    }

    /// `age` became a String.
    struct MemberWithTextAge: Model {
        var id: Int64
        var name: String
        var email: String
        var age: String
        static let collectionName = "members"
        static let schema = Schema<MemberWithTextAge>(primaryKey: \.id)
    }

    /// Declares no indexes at all.
    struct PlainMember: Model {
        var id: Int64
        var name: String
        var email: String
        var age: Int
        static let collectionName = "members"
        static let schema = Schema<PlainMember>(primaryKey: \.id)
    }

    /// Compatible changes: a field removed (`name`), one added (`nickname`, optional), an
    /// integer of another width (`age`), a field made optional (`email`).
    struct EvolvedMember: Model, Equatable {
        var id: Int64
        var email: String?
        var age: Int32
        var nickname: String?
        static let collectionName = "members"
        static let schema = Schema<EvolvedMember>(primaryKey: \.id, indexes: [.unique(\.email), .index(\.age)])
    }

    /// The `email` index declared again, no longer unique.
    struct MemberWithLooseEmail: Model {
        var id: Int64
        var name: String
        var email: String
        var age: Int
        static let collectionName = "members"
        static let schema = Schema<MemberWithLooseEmail>(primaryKey: \.id, indexes: [.index(\.email, name: "email")])
    }

    struct Person: Model {
        var id: Int64
        var first: String
        var last: String
        var fullName: String { first + " " + last }
        static let collectionName = "persons"
        static let schema = Schema<Person>(primaryKey: \.id, indexes: [.index(\.fullName, name: "fullName")])
    }

    struct UnnamedComputedIndex: Model {
        var id: Int64
        var first: String
        var initial: String { String(first.prefix(1)) }
        static let collectionName = "unnamed"
        static let schema = Schema<UnnamedComputedIndex>(primaryKey: \.id, indexes: [.index(\.initial)])
    }

    static func withStorage(_ body: (StrataStorage, String) throws -> Void) throws {
        let path = NSTemporaryDirectory() + "strata-catalog-" + UUID().uuidString + ".strata"
        defer { try? FileManager.default.removeItem(atPath: path) }
        var options = Database.Options()
        options.checkpointOnClose = false
        let storage = try StrataStorage(path: path, options: options)
        try storage.persist((1 ... 5).map { Member(id: $0, name: "m\($0)", email: "m\($0)@x.org", age: 20 + Int($0)) })
        try body(storage, path)
        try storage.close()
    }

    static func fileBytes(_ path: String) throws -> Data { try Data(contentsOf: URL(fileURLWithPath: path)) }

    @Test("a field whose type changed is refused, naming the collection, the field and both types, and the file is unchanged")
    func typeChangeIsRefused() throws {
        try Self.withStorage { storage, path in
            let before = try Self.fileBytes(path)
            #expect {
                try storage.persist(MemberWithTextAge(id: 6, name: "six", email: "six@x.org", age: "forty"))
            } throws: { error in
                guard case StorageError.schemaMismatch("members", let reason) = error else { return false }
                return reason.contains("'age'") && reason.contains("stored as integer") && reason.contains("writes string")
            }
            #expect(try Self.fileBytes(path) == before)
            #expect(try storage.count(Member.filter(\.age > 0)) == 5)
        }
    }

    @Test("adding, removing and making a field optional, and another integer width, are accepted")
    func compatibleChanges() throws {
        try Self.withStorage { storage, _ in
            try storage.persist(EvolvedMember(id: 7, email: nil, age: 44, nickname: "seven"))
            try storage.persist(EvolvedMember(id: 8, email: "eight@x.org", age: 45, nickname: nil))
            #expect(try storage.read(EvolvedMember.self, primaryKey: Int64(7)) == EvolvedMember(id: 7, email: nil, age: 44, nickname: "seven"))
            #expect(try storage.read(EvolvedMember.self, primaryKey: Int64(1))?.age == 21)
            #expect(try storage.count(Member.filter(\.age >= 44)) == 2)
        }
    }

    @Test("a model that declares no indexes keeps the other model's unique index: a duplicate is refused")
    func undeclaredUniqueIndexIsEnforced() throws {
        try Self.withStorage { storage, _ in
            #expect(throws: StorageError.uniqueViolation(collection: "members", index: "email", value: "(\"m1@x.org\")")) {
                try storage.persist(PlainMember(id: 9, name: "copy", email: "m1@x.org", age: 1))
            }
            try storage.persist(PlainMember(id: 10, name: "ten", email: "ten@x.org", age: 77))
            // Written by a model that does not declare the indexes, found through them.
            #expect(try storage.read(Member.filter(\.age == 77)).map(\.id) == [10])
            #expect(try storage.read(Member.filter(\.email == "ten@x.org")).map(\.id) == [10])
            try storage.persist(PlainMember(id: 10, name: "ten", email: "ten@y.org", age: 78))
            #expect(try storage.read(Member.filter(\.email == "ten@x.org")).isEmpty)
            #expect(try storage.read(Member.filter(\.age == 78)).map(\.id) == [10])
        }
    }

    @Test("a changed index definition is refused until the old one is dropped")
    func changedIndexDefinition() throws {
        try Self.withStorage { storage, _ in
            #expect {
                try storage.persist(MemberWithLooseEmail(id: 11, name: "e", email: "m1@x.org", age: 1))
            } throws: { error in
                guard case StorageError.schemaMismatch("members", let reason) = error else { return false }
                return reason.contains("index 'email' is stored as unique (email)") && reason.contains("dropIndex")
            }
            try storage.dropIndex("email", from: "members")
            try storage.persist(MemberWithLooseEmail(id: 11, name: "e", email: "m1@x.org", age: 1))
            #expect(try storage.read(Member.filter(\.email == "m1@x.org")).map(\.id) == [1, 11])
        }
    }

    @Test("an index on a computed property is stored under its explicit name, the same on every launch")
    func computedIndexHasStableName() throws {
        try Self.withStorage { storage, path in
            try storage.persist(Person(id: 1, first: "Ada", last: "Lovelace"))
            let catalog = try CollectionInspector(snapshot: storage.database.snapshot()).collections().first { $0.name == "persons" }
            #expect(catalog?.indexes.map(\.fields) == [["@fullName"]])
            let before = try Self.fileBytes(path)
            // Preparing the collection again (a new transaction, as on the next launch) changes nothing.
            try storage.write { writer in _ = try writer.explain(Person.filter(\.fullName == "Ada Lovelace")) }
            #expect(try storage.read(Person.filter(\.fullName == "Ada Lovelace")).count == 1)
            #expect(try Self.fileBytes(path) == before)
            _ = path
        }
    }

    @Test("another program with its own model type finds the computed index under the same name, writes through it, and rebuilds nothing")
    func computedIndexAcrossProcesses() throws {
        try Self.withStorage { storage, path in
            try storage.persist(Person(id: 1, first: "Ada", last: "Lovelace"))
            try storage.close()
            func child(_ arguments: String...) throws -> String {
                let process = Process()
                process.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent().appendingPathComponent("StrataModelChild")
                process.arguments = arguments
                let pipe = Pipe()
                process.standardOutput = pipe
                try process.run()
                let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
                process.waitUntilExit()
                #expect(process.terminationStatus == 0, "StrataModelChild \(arguments)")
                return output.trimmingCharacters(in: .whitespacesAndNewlines)
            }
            #expect(try child("find", path, "Ada Lovelace") == "1 via indexPoints(index: \"fullName\", count: 1)")
            // A write prepares the collection: a definition that differed would be refused.
            _ = try child("add", path, "2", "Grace", "Hopper")
            let reopened = try StrataStorage(path: path)
            #expect(try reopened.read(Person.filter(\.fullName == "Grace Hopper")).map(\.id) == [2])
            let entry = try CollectionInspector(snapshot: reopened.database.snapshot()).collection("persons")
            #expect(entry.indexes.map(\.fields) == [["@fullName"]] && entry.indexes.first?.entries == 2)
            try reopened.close()
        }
    }

    @Test("an index on a computed property without a name is refused with the fix")
    func unnamedComputedIndexIsRefused() throws {
        try Self.withStorage { storage, _ in
            #expect {
                try storage.persist(UnnamedComputedIndex(id: 1, first: "Ada"))
            } throws: { error in
                guard case StorageError.schemaMismatch("unnamed", let reason) = error else { return false }
                return reason.contains("computed property") && reason.contains("name:")
            }
        }
    }

    @Test("a file whose catalog predates field types learns them from a stored record")
    func olderCatalogLearnsTypes() throws {
        try Self.withStorage { storage, _ in
            // Rewrite the catalog entry as an older Strata wrote it: no "types".
            try storage.database.write { tx in
                let key = Key("members").bytes
                var json = try JSONSerialization.jsonObject(with: Data(try tx.get(key, in: "strata.catalog")!)) as! [String: Any]
                json["types"] = nil
                try tx.put(Array(try JSONSerialization.data(withJSONObject: json)), forKey: key, in: "strata.catalog")
            }
            let reopened = StrataStorage(database: storage.database)
            #expect(throws: StorageError.self) { try reopened.persist(MemberWithTextAge(id: 6, name: "six", email: "six@x.org", age: "forty")) }
            try reopened.persist(Member(id: 6, name: "six", email: "six@x.org", age: 26))
        }
    }

    /// `name` was stored as `fullName` before: a plain `Codable` model declares the rename.
    struct RenamedMember: Model, Equatable {
        var id: Int64
        var fullName: String
        var email: String
        var age: Int
        static let collectionName = "members"
        static let storedFields: [StoredField<RenamedMember>] = [.field(\.fullName, originalName: "name")]
        static let schema = Schema<RenamedMember>(primaryKey: \.id, indexes: [.unique(\.email), .index(\.age)])
    }

    @Test("a declared rename reads old records under the new name before any write, and the first write moves them")
    func declaredRenameOfACodableModel() throws {
        try Self.withStorage { storage, _ in
            let fresh = StrataStorage(database: storage.database)
            #expect(try fresh.read(RenamedMember.query()).map(\.fullName) == (1 ... 5).map { "m\($0)" })
            #expect(try fresh.read(RenamedMember.filter(\.fullName == "m3")).map(\.id) == [3])
            try fresh.persist(RenamedMember(id: 6, fullName: "m6", email: "m6@x.org", age: 26))
            let collection = try CollectionInspector(snapshot: storage.database.snapshot()).collection("members")
            #expect(collection.storedTypes?["fullName"] == "string")
            #expect(collection.storedTypes?["name"] == nil)
            #expect(try fresh.read(RenamedMember.query()).map(\.fullName) == (1 ... 6).map { "m\($0)" })
        }
    }

    /// Declares `name` as the original name of a field while still storing a `name`.
    struct ClashingRename: Model {
        var id: Int64
        var name: String
        var alias: String
        static let collectionName = "members"
        static let storedFields: [StoredField<ClashingRename>] = [.field(\.alias, originalName: "name")]
        static let schema = Schema<ClashingRename>(primaryKey: \.id)
    }

    @Test("a rename from a name a field still uses is refused, and the file is unchanged")
    func renameFromAFieldInUseIsRefused() throws {
        try Self.withStorage { storage, path in
            try storage.database.checkpoint()
            let before = try Self.fileBytes(path)
            #expect {
                try storage.persist(ClashingRename(id: 9, name: "n", alias: "a"))
            } throws: { error in
                guard case StorageError.schemaMismatch(_, let reason) = error else { return false }
                return reason.contains("'alias' declares the original name 'name', which a current field still uses")
            }
            #expect(try Self.fileBytes(path) == before)
        }
    }
}
