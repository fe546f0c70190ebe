import Foundation
import Strata
import StrataEngine
import Testing

@Suite("StrataStorage: indexes, schema, transactions")
struct StrataStorageTests {
    func indexEntries(_ storage: StrataStorage, _ index: String) throws -> [[UInt8]] {
        try storage.database.read { snapshot in
            var keys: [[UInt8]] = []
            try snapshot.scan("i:people:" + index) { key, _ in keys.append(Array(key)); return true }
            return keys
        }
    }

    @Test("index entries follow inserts, updates and deletes in the same transaction")
    func indexMaintenance() throws {
        try withStorage(0) { s in
            try s.persist((0 ..< 50).map(Person.sample))
            #expect(try indexEntries(s, "age").count == 50)
            var moved = Person.sample(7)
            moved.age = 99
            try s.persist(moved)
            #expect(try indexEntries(s, "age").count == 50)
            #expect(try s.read(Person.filter(\.age == 99)) == [moved])
            #expect(try s.read(Person.filter(\.age == Person.sample(7).age)).allSatisfy { $0.id != 7 })
            try s.erase(Person.self, primaryKey: Int64(7))
            #expect(try indexEntries(s, "age").count == 49)
            #expect(try indexEntries(s, "email").count == 49)
            #expect(try s.read(Person.filter(\.age == 99)).isEmpty)
        }
    }

    struct PersonWithoutIndexes: Model {
        var id: Int64
        var name: String
        var email: String
        var age: Int
        var score: Double
        var city: String
        static let collectionName = "people"
        static let schema = Schema<PersonWithoutIndexes>(primaryKey: \.id)
    }

    @Test("adding an index to a collection with data builds it; a model without it keeps it up to date; dropIndex drops it")
    func indexBuildAndDrop() throws {
        let directory = NSTemporaryDirectory() + "strata-index-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let storage = try StrataStorage(path: directory + "/i.strata")
        try storage.persist((0 ..< 100).map { i in
            let p = Person.sample(i)
            return PersonWithoutIndexes(id: p.id, name: p.name, email: p.email, age: p.age, score: p.score, city: p.city)
        })
        #expect(try storage.explain(Person.filter(\.age == 30)).access == .fullScan)
        try storage.persist(Person.sample(100))          // first write with the indexed model builds its indexes
        #expect(try storage.explain(Person.filter(\.age == 30)).access == .indexPoints(index: "age", count: 1))
        #expect(try indexEntries(storage, "age").count == 101)
        #expect(try storage.read(Person.filter(\.age == 30)).map(\.id) == (0 ... 100).map(Person.sample).filter { $0.age == 30 }.map(\.id))
        // A model that does not declare the index neither drops it nor lets it go stale.
        try storage.persist(PersonWithoutIndexes(id: 500, name: "x", email: "x", age: 1, score: 0, city: "y"))
        #expect(try storage.database.snapshot().hasTree("i:people:age"))
        #expect(try storage.read(Person.filter(\.age == 1)).map(\.id) == [500])
        try storage.erase(PersonWithoutIndexes.self, primaryKey: Int64(500))
        #expect(try storage.read(Person.filter(\.age == 1)).isEmpty)
        #expect(try indexEntries(storage, "age").count == 101)
        try storage.dropIndex("age", from: "people")
        #expect(try !storage.database.snapshot().hasTree("i:people:age"))
        #expect(throws: StorageError.indexNotFound(collection: "people", index: "age", existing: ["email", "city+age"])) { try storage.dropIndex("age", from: "people") }
        try storage.close()
    }

    struct DuplicateEmails: Model {
        var id: Int64
        var email: String
        static let collectionName = "dupes"
        static let schema = Schema<DuplicateEmails>(primaryKey: \.id)
    }

    struct UniqueEmails: Model {
        var id: Int64
        var email: String
        static let collectionName = "dupes"
        static let schema = Schema<UniqueEmails>(primaryKey: \.id, indexes: [.unique(\.email)])
    }

    @Test("building a unique index over duplicate values fails and changes nothing")
    func uniqueIndexBuildFails() throws {
        let storage = try StrataStorage(path: NSTemporaryDirectory() + "strata-dupes-" + UUID().uuidString + ".strata")
        defer { try? FileManager.default.removeItem(atPath: storage.database.path) }
        try storage.persist([DuplicateEmails(id: 1, email: "a"), DuplicateEmails(id: 2, email: "a")])
        #expect(throws: StorageError.uniqueViolation(collection: "dupes", index: "email", value: "(\"a\")")) {
            try storage.persist(UniqueEmails(id: 3, email: "b"))
        }
        #expect(try storage.count(DuplicateEmails.self) == 2)
        #expect(try !storage.database.snapshot().hasTree("i:dupes:email"))
    }

    struct NoteV1: Model, Equatable {
        var id: Int64
        var text: String
        var obsolete: Int
        static let collectionName = "notes"
        static let schema = Schema<NoteV1>(primaryKey: \.id)
    }

    struct NoteV2: Model, Equatable {
        var id: Int64
        var text: String
        var pinned: Bool
        var color: String?
        static let collectionName = "notes"
        static let schema = Schema<NoteV2>(primaryKey: \.id)
    }

    struct NoteV3: Model {
        var id: Int64
        var text: Double
        static let collectionName = "notes"
        static let schema = Schema<NoteV3>(primaryKey: \.id)
    }

    struct NoteByText: Model {
        var id: Int64
        var text: String
        static let collectionName = "notes"
        static let schema = Schema<NoteByText>(primaryKey: \.text)
    }

    @Test("the model can change without a migration step; incompatible changes are named errors")
    func schemaEvolutionThroughStorage() throws {
        let path = NSTemporaryDirectory() + "strata-evolve-" + UUID().uuidString + ".strata"
        defer { try? FileManager.default.removeItem(atPath: path) }
        var storage = try StrataStorage(path: path)
        try storage.create(NoteV1(id: 1, text: "hello", obsolete: 5))
        try storage.close()
        storage = try StrataStorage(path: path)
        #expect(try storage.read(NoteV2.self, primaryKey: Int64(1)) == NoteV2(id: 1, text: "hello", pinned: false, color: nil))
        try storage.create(NoteV2(id: 2, text: "new", pinned: true, color: "red"))
        #expect(try storage.read(NoteV1.self, primaryKey: Int64(2)) == NoteV1(id: 2, text: "new", obsolete: 0))
        #expect(throws: RecordError.typeMismatch(collection: "notes", field: "text", stored: "String", expected: "Double")) {
            try storage.read(NoteV3.self, primaryKey: Int64(1))
        }
        #expect(throws: StorageError.self) { try storage.create(NoteByText(id: 3, text: "x")) }
        try storage.close()
    }

    @Test("collections, indexes and auto-increment counters survive reopening")
    func reopen() throws {
        let path = NSTemporaryDirectory() + "strata-reopen-" + UUID().uuidString + ".strata"
        defer { try? FileManager.default.removeItem(atPath: path) }
        struct Ticket: Model { var id: Int64 = 0; var title: String; static let schema = Schema<Ticket>.autoIncrementing(\.id) }
        var storage = try StrataStorage(path: path)
        try storage.persist((0 ..< 20).map(Person.sample))
        #expect(try storage.create(Ticket(title: "a")).id == 1)
        try storage.close()
        storage = try StrataStorage(path: path)
        #expect(try storage.explain(Person.filter(\.age == 30)).access == .indexPoints(index: "age", count: 1))
        #expect(try storage.count(Person.self) == 20)
        #expect(try storage.create(Ticket(title: "b")).id == 2)
        try storage.close()
    }

    struct Account: Model, Equatable {
        var id: String
        var balance: Int
        static let schema = Schema<Account>(primaryKey: \.id)
    }

    @Test("one transaction spans several collections atomically")
    func multiCollection() throws {
        try withStorage(5) { s in
            try s.persist([Account(id: "a", balance: 10), Account(id: "b", balance: 0)])
            struct Insufficient: Error {}
            #expect(throws: Insufficient.self) {
                try s.write { tx in
                    try tx.persist(Account(id: "a", balance: 0))
                    try tx.erase(Person.self, primaryKey: Int64(1))
                    throw Insufficient()
                }
            }
            #expect(try s.read(Account.self, primaryKey: "a")?.balance == 10)
            #expect(try s.read(Person.self, primaryKey: Int64(1)) != nil)
        }
    }

    @Test("async reads and writes run off the cooperative pool")
    func asyncAPI() async throws {
        let path = NSTemporaryDirectory() + "strata-async-" + UUID().uuidString + ".strata"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let storage = try StrataStorage(path: path)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for i in 0 ..< 20 {
                group.addTask {
                    let stored: Person = try await storage.write { @Sendable tx in try tx.persist(Person.sample(i)) }
                    #expect(stored.id == Int64(i))
                }
            }
            try await group.waitForAll()
        }
        let count = try await storage.read { try $0.count(Person.query()) }
        #expect(count == 20)
        try storage.close()
    }

    @Test("random queries return what the same query returns on a plain array", arguments: [11, 12] as [UInt64])
    func randomQueries(seed: UInt64) throws {
        var rng = SeededRandom(seed: seed)
        let people = (0 ..< 400).map { i -> Person in
            var p = Person.sample(i)
            p.age = Int.random(in: 18 ... 40, using: &rng)
            p.score = Double(Int.random(in: 0 ... 20, using: &rng))
            return p
        }
        let memory = try MemoryStorage()
        try memory.persist(people)
        try withStorage(0) { s in
            try s.persist(people)
            for _ in 0 ..< 300 {
                var query = Person.query()
                for _ in 0 ..< Int.random(in: 0 ... 2, using: &rng) {
                    let v = Int.random(in: 16 ... 42, using: &rng)
                    let filters: [Filter<Person>] = [\.age == v, \.age > v, \.age <= v, .in(\.age, [v, v + 3]), \.id < Int64(v * 10),
                                                     .between(\.age, v ... v + 4), \.score >= Double(v % 20), .hasPrefix(\.city, "L"),
                                                     \.age < v || \.score > 15, !(\.age >= v)]
                    query = query.filter(filters.randomElement(using: &rng)!)
                }
                if Bool.random(using: &rng) { query = query.sorted(by: \.age, ascending: Bool.random(using: &rng)) }
                if Bool.random(using: &rng) { query = query.sorted(by: \.score) }
                if Bool.random(using: &rng) { query = query.limit(Int.random(in: 0 ... 30, using: &rng)) }
                if Bool.random(using: &rng) { query = query.offset(Int.random(in: 0 ... 30, using: &rng)) }
                let expected = try memory.read(query).map(\.id)
                let got = try s.read(query).map(\.id)
                let plan = try s.explain(query)
                #expect(got == expected, "\(plan)")
                #expect(try s.count(query) == expected.count)
            }
        }
    }
}

/// SplitMix64, seeded.
struct SeededRandom: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
