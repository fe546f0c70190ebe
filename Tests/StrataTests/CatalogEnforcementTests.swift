import Foundation
import Strata
import StrataEngine
import Testing

/// The catalog is the truth for a collection: what each model type writes is checked
/// against it, and nothing a model does not mention is dropped or left stale. The rules
/// every backend keeps are in the shared conformance suite (`StorageConformance.catalogChecks`);
/// these are the file's own: bytes unchanged after a refusal, other processes, older files.
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
