import Foundation
import Strata
import StrataEngine
import Testing

@Suite("Query projections: only some fields are decoded")
struct ProjectionTests {
    struct Person: Model, Equatable {
        var id: Int64
        var name: String
        var bio: String
        var age: Int
        static let collectionName = "people"
        static let schema = Schema<Person>(primaryKey: \.id)
    }

    /// The same collection with `bio` stored as a number: decoding it as Person fails.
    struct OddPerson: Model {
        var id: Int64
        var name: String
        var bio: Int
        var age: Int
        static let collectionName = "people"
        static let schema = Schema<OddPerson>(primaryKey: \.id)
    }

    func withPeople(_ body: (StrataStorage) throws -> Void) throws {
        let path = NSTemporaryDirectory() + "strata-projection-" + UUID().uuidString + ".strata"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let storage = try StrataStorage(path: path)
        try storage.persist((0 ..< 20).map { Person(id: Int64($0), name: "p\($0)", bio: String(repeating: "x", count: 1_000), age: $0) })
        try body(storage)
        try storage.close()
    }

    @Test("only and except leave the other fields at their zero values")
    func zeroes() throws {
        try withPeople { storage in
            let slim = try storage.read(Person.query().only(["id", "name"]))
            #expect(slim.count == 20 && slim.allSatisfy { $0.bio.isEmpty && $0.age == 0 } && slim[3].name == "p3")
            let noBio = try storage.read(Person.query().except(["bio"]))
            #expect(noBio[5] == Person(id: 5, name: "p5", bio: "", age: 5))
        }
    }

    @Test("fields left out are never decoded: a field that would not decode does not fail")
    func notDecoded() throws {
        try withPeople { storage in
            try plantRecord(OddPerson(id: 99, name: "odd", bio: 7, age: 1), primaryKey: Key(Int64(99)), in: storage,
                            collection: "people", fieldNames: ["id", "name", "bio", "age"])
            #expect(throws: RecordError.self) { try storage.read(Person.query()) }
            #expect(try storage.read(Person.query().only(["id", "name"])).last?.name == "odd")
        }
    }

    @Test("conditions and order on a left-out field still see its value")
    func conditionsSeeLeftOutFields() throws {
        try withPeople { storage in
            let old = try storage.read(Person.filter(\.age >= 15).sorted(by: \.age, ascending: false).only(["name"]))
            #expect(old.map(\.name) == ["p19", "p18", "p17", "p16", "p15"])
            let opaque = try storage.read(Person.filter(.matching { $0.age == 3 }).only(["name"]))
            #expect(opaque.map(\.name) == ["p3"])
        }
    }
}

@Suite("Counting through a tree")
struct CountTests {
    struct Item: Model {
        var id: Int64
        var group: Int
        var note: String
        static let collectionName = "items"
        static let schema = Schema<Item>(primaryKey: \.id, indexes: [.index(\.group)])
    }

    /// The same collection with `note` stored as a number: decoding an Item from it fails.
    struct OddItem: Model {
        var id: Int64
        var group: Int
        var note: Int
        static let collectionName = "items"
        static let schema = Schema<OddItem>(primaryKey: \.id, indexes: [.index(\.group)])
    }

    @Test("a count the index or key range answers reads no records, and agrees with reading")
    func countWithoutDecoding() throws {
        let path = NSTemporaryDirectory() + "strata-count-" + UUID().uuidString + ".strata"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let storage = try StrataStorage(path: path)
        let items = (0 ..< 100).map { Item(id: Int64($0), group: $0 % 7, note: "n\($0)") }
        try storage.persist(items)
        for query in [Item.filter(\.group == 3), Item.filter(.between(\.group, 2 ... 4)), Item.filter(.in(\.group, [1, 5])),
                      Item.filter(\.id >= 90), Item.filter(\.group == 3).offset(5).limit(4)] {
            #expect(try storage.count(query) == storage.read(query).count)
        }
        try plantRecord(OddItem(id: 500, group: 3, note: 1), primaryKey: Key(Int64(500)), in: storage, collection: "items", fieldNames: ["id", "group", "note"])
        try storage.database.write { tx in try tx.put(Key(Int64(500)).bytes, forKey: Key(3).bytes + Key(Int64(500)).bytes, in: "i:items:group") }
        #expect(throws: RecordError.self) { try storage.read(Item.filter(\.group == 3)) }
        #expect(try storage.count(Item.filter(\.group == 3)) == 15)        // 14 items + the odd one, none decoded
        #expect(throws: RecordError.self) { try storage.count(Item.filter(\.group == 3 && \.note != "x")) }  // a residual needs records
        try storage.close()
    }
}

/// Projections of models whose fields have no zero value (issue 14).
@Suite("Projections of fields without a zero value")
struct ProjectionWithoutZeroValueTests {
    enum Status: String, Codable { case open, done }

    struct Ticket: Model, Equatable {
        var id: Int64
        var title: String
        var opened: Date
        var owner: UUID
        var link: URL
        var status: Status
        var notes: String
        static let collectionName = "tickets"
        static let schema = Schema<Ticket>(primaryKey: \.id)
    }

    static let tickets = (1 ... 5).map {
        Ticket(id: Int64($0), title: "t\($0)", opened: Date(timeIntervalSinceReferenceDate: Double($0) * 1000), owner: UUID(),
               link: URL(string: "https://example.com/\($0)")!, status: $0 % 2 == 0 ? .done : .open, notes: String(repeating: "n", count: 500))
    }

    @Test("only() leaves out what has a zero value and decodes the stored value of what has none")
    func onlyWithDatesUUIDsURLsAndEnums() throws {
        let path = NSTemporaryDirectory() + "strata-projection-zero-" + UUID().uuidString + ".strata"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let storage = try StrataStorage(path: path)
        try storage.persist(Self.tickets)
        let slim = try storage.read(Ticket.query().only(["id", "title"]))
        #expect(slim.map(\.title) == Self.tickets.map(\.title))
        #expect(slim.allSatisfy { $0.notes.isEmpty }, "a field with a zero value is left out")
        #expect(slim.map(\.opened) == Self.tickets.map(\.opened), "fields without one read their stored values")
        #expect(slim.map(\.owner) == Self.tickets.map(\.owner) && slim.map(\.status) == Self.tickets.map(\.status))
        let noNotes = try storage.read(Ticket.query().except(["notes", "opened"]))
        #expect(noNotes.map(\.opened) == Self.tickets.map(\.opened) && noNotes.allSatisfy { $0.notes.isEmpty })
        try storage.close()
    }
}
