import Foundation
import Strata
import StrataEngine
import StrataMacros
import Testing

/// Version 1 of an app's note: a plain `Codable` model.
struct NoteV1: Model, Equatable {
    var id: Int64
    var text: String
    var due: Date?
    var priority: Int
    static let collectionName = "notes"
    static let schema = Schema<NoteV1>(primaryKey: \.id, indexes: [.index(\.text, name: "byText")])
}

/// Version 2: the same fields through `@StoredModel`, `text` renamed `body`.
@StoredModel
struct Note: Equatable {
    var id: Int64
    @Field(originalName: "text") var body: String
    var due: Date?
    var priority: Int
    var summary: String { String(body.prefix(3)) }
    static let collectionName = "notes"
    static let schema = Schema<Note>(primaryKey: \.id, indexes: [.index(\.body, name: "byText")])
}

/// The macro's twin of a plain `Codable` type, field for field.
@StoredModel
struct Described: Equatable {
    var id: Int64
    var name: String
    var tags: [String]
    var score: Double?
    var created: Date
    static let collectionName = "twins"
    static let schema = Schema<Described>(primaryKey: \.id)
}

struct Synthesized: Model, Equatable {
    var id: Int64
    var name: String
    var tags: [String]
    var score: Double?
    var created: Date
    static let collectionName = "twins"
    static let schema = Schema<Synthesized>(primaryKey: \.id)
}

/// A later version that made `priority` a String: a type conflict the declaration shows.
@StoredModel
struct NoteWithTextPriority {
    var id: Int64
    var body: String
    var priority: String
    static let collectionName = "notes"
    static let schema = Schema<NoteWithTextPriority>(primaryKey: \.id)
}

func temporaryPath() -> String { NSTemporaryDirectory() + "strata-macro-" + UUID().uuidString + ".strata" }

/// Runs `body` with the path of a new file, removed afterwards.
func withFile(_ body: (String) throws -> Void) throws {
    let path = temporaryPath()
    defer { try? FileManager.default.removeItem(atPath: path) }
    try body(path)
}

/// The stored bytes of each record of `collection`, by primary key.
func storedRecords(_ path: String, _ collection: String) throws -> [[UInt8]: [UInt8]] {
    let database = try Database(path: path, options: .init(readOnly: true))
    defer { try? database.close() }
    var records: [[UInt8]: [UInt8]] = [:]
    try database.snapshot().scan("c:" + collection) { key, value in
        records[Array(key)] = Array(value)
        return true
    }
    return records
}

@Suite("@StoredModel")
struct StoredModelTests {
    let day = Date(timeIntervalSince1970: 1_700_000_000)

    @Test("storedFields lists the stored properties, not the computed or static ones")
    func describesStoredProperties() {
        #expect(Note.storedFields.map(\.name) == ["id", "body", "due", "priority"])
        #expect(Note.storedFields[1].originalNames == ["text"])
        #expect(Note.storedFields.map(\.storedType) == [.integer, .string, .date, .integer])
        #expect(Note.schema.description.name(of: \Note.body) == "body")
    }

    @Test("a @StoredModel stores the values the synthesized Codable conformance stores, its number-like fields first")
    func storesNumbersFirst() throws {
        let values = [(1, "Ada", ["x", "y"], 2.5), (2, "Grace", [], nil)] as [(Int64, String, [String], Double?)]
        /// The stored record's top-level fields, in stored order.
        func storedFields(_ value: some Model) throws -> [RecordValue.Field] {
            var fields = FieldTable()
            let bytes = try RecordEncoder.encode(value, fields: &fields, collection: "twins")
            guard case .object(let entries) = try RecordValue.decode(bytes, fields: fields, collection: "twins") else { return [] }
            return entries
        }
        for (id, name, tags, score) in values {
            let macro = try storedFields(Described(id: id, name: name, tags: tags, score: score, created: day))
            let codable = try storedFields(Synthesized(id: id, name: name, tags: tags, score: score, created: day))
            // A nil optional is left out by both.
            #expect(macro.map(\.name) == ["id", "score", "created", "name", "tags"].filter { score != nil || $0 != "score" })
            #expect(codable.map(\.name) == ["id", "name", "tags", "score", "created"].filter { score != nil || $0 != "score" })
            #expect(macro.sorted { $0.name < $1.name } == codable.sorted { $0.name < $1.name })
        }
        let fast = Described(id: 3, name: "Lin", tags: ["a"], score: nil, created: day)
        #expect(try RecordCodableConformance.check(fast))
    }

    @Test("each model reads what the other wrote")
    func readsAcrossCodings() throws {
        try withFile { path in
            let storage = try StrataStorage(path: path)
            try storage.persist(Synthesized(id: 1, name: "Ada", tags: ["x"], score: 1, created: day))
            try storage.persist(Described(id: 2, name: "Lin", tags: [], score: nil, created: day))
            #expect(try storage.read(Described.query()).map(\.name) == ["Ada", "Lin"])
            #expect(try storage.read(Synthesized.query()).map(\.name) == ["Ada", "Lin"])
            try storage.close()
        }
    }

    @Test("conditions on declared fields give the same answers as on undeclared ones")
    func declaredFieldsAnswerQueries() throws {
        try withFile { path in
            let storage = try StrataStorage(path: path)
            try storage.persist((1 ... 50).map { Note(id: $0, body: "note \($0)", due: $0 % 2 == 0 ? day : nil, priority: Int($0 % 5)) })
            #expect(try storage.read(Note.filter(\.priority >= 3)).map(\.id) == (1 ... 50).filter { $0 % 5 >= 3 })
            #expect(try storage.read(Note.filter(\.priority == 0)).count == 10)
            #expect(try storage.read(Note.filter(\.due < day.addingTimeInterval(1))).count == 25)
            try storage.close()
        }
    }

    @Test("a declared rename moves every record's value, keeps the index, and reads the same values")
    func declaredRenameMovesValues() throws {
        try withFile { path in
            var storage = try StrataStorage(path: path)
            try storage.persist((1 ... 30).map { NoteV1(id: $0, text: "note \($0)", due: nil, priority: 1) })
            try storage.close()

            storage = try StrataStorage(path: path)
            // Read before any write: the record still says `text`, the model reads it as `body`.
            #expect(try storage.read(Note.query()).map(\.body) == (1 ... 30).map { "note \($0)" })
            try storage.persist(Note(id: 31, body: "note 31", due: nil, priority: 2))
            #expect(try storage.read(Note.filter(\.body == "note 7")).map(\.id) == [7])
            #expect(try storage.explain(Note.filter(\.body == "note 7")).access == .indexPoints(index: "byText", count: 1))
            let collection = try CollectionInspector(snapshot: storage.database.snapshot()).collection("notes")
            #expect(collection.storedTypes?["body"] == "string")
            #expect(collection.storedTypes?["text"] == nil)
            #expect(collection.indexes.map(\.fields) == [["body"]])
            #expect(collection.unreadFields.isEmpty)
            try storage.close()

            // Every stored record now holds `body`, none `text`.
            storage = try StrataStorage(path: path)
            let inspector = try CollectionInspector(snapshot: storage.database.snapshot())
            var names: [[String]] = []
            try inspector.records(in: "notes") { record in
                if case .object(let fields) = record.value { names.append(fields.map(\.name)) }
                return true
            }
            #expect(names.count == 31)
            #expect(names.allSatisfy { $0.contains("body") && !$0.contains("text") })
            try storage.close()
        }
    }

    @Test("a field whose declared type conflicts with the stored one is refused before anything is written")
    func declaredTypeConflictIsRefusedUpFront() throws {
        try withFile { path in
            var storage = try StrataStorage(path: path)
            try storage.persist(Note(id: 1, body: "one", due: nil, priority: 1))
            try storage.close()
            let before = try Data(contentsOf: URL(fileURLWithPath: path))

            storage = try StrataStorage(path: path)
            #expect {
                try storage.persist(NoteWithTextPriority(id: 2, body: "two", priority: "high"))
            } throws: { error in
                guard case StorageError.schemaMismatch(let collection, let reason) = error else { return false }
                return collection == "notes" && reason.contains("field 'priority' is stored as integer, but NoteWithTextPriority writes string")
            }
            try storage.close()
            #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
        }
    }

    @Test("a field renamed without declaring it is reported as unread")
    func undeclaredRenameIsReported() throws {
        try withFile { path in
            let storage = try StrataStorage(path: path)
            try storage.persist(NoteV1(id: 1, text: "one", due: nil, priority: 1))
            try storage.persist(CarelessNote(id: 2, body: "two", priority: 1))
            let collection = try CollectionInspector(snapshot: storage.database.snapshot()).collection("notes")
            #expect(collection.readers?[String(reflecting: CarelessNote.self)] == ["id", "body", "priority"])
            #expect(collection.unreadFields == ["text"])
            try storage.close()
        }
    }
}

/// `text` renamed `body` without declaring it: every old note's text is no longer read.
@StoredModel
struct CarelessNote {
    var id: Int64
    var body: String
    var priority: Int
    static let collectionName = "notes"
    static let schema = Schema<CarelessNote>(primaryKey: \.id)
}
