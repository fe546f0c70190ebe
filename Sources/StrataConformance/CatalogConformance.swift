import Foundation
import Strata

/// The catalog rules every backend keeps (the "Models and schema changes" article, Strata.docc): a collection's
/// field types and indexes are the truth, whichever model type writes to it.
extension StorageConformance {
    /// The catalog's rules: a field's type is kept, compatible changes need no migration,
    /// and an index declared by any model stays enforced.
    public static let catalogChecks: [Check] = [
        Check(name: "a field whose type changed is refused, naming the collection and field, and nothing is written") { storage in
            try storage.persist(CatalogMember(id: 1, name: "Ada", email: "ada@x.org", age: 36))
            do {
                try storage.persist(CatalogMemberWithTextAge(id: 2, name: "Lin", email: "lin@x.org", age: "forty"))
                throw ConformanceFailure(check: "type change", message: "a String written over an integer field was accepted")
            } catch StorageError.schemaMismatch(let collection, let reason) {
                try expect(collection == CatalogMember.collectionName, "names the collection: \(collection)")
                try expect(reason.contains("field 'age' is stored as integer") && reason.contains("writes string"), "names the field and both types: \(reason)")
            }
            try expect(try storage.readAll(CatalogMember.self).map(\.id) == [1], "nothing was written")
        },
        Check(name: "compatible changes need no migration: a field added, removed, made optional, another integer width") { storage in
            try storage.persist(CatalogMember(id: 1, name: "Ada", email: "ada@x.org", age: 36))
            try storage.persist(CatalogMemberLater(id: 2, email: nil, age: 41, nickname: "Lin"))
            let later = try storage.readAll(CatalogMemberLater.self)
            try expect(later == [CatalogMemberLater(id: 1, email: "ada@x.org", age: 36, nickname: nil), CatalogMemberLater(id: 2, email: nil, age: 41, nickname: "Lin")], "read by the later model: \(later)")
            let earlier = try storage.readAll(CatalogMember.self)
            try expect(earlier.map(\.age) == [36, 41] && earlier[1].name == "" && earlier[1].email == "", "read by the earlier model: \(earlier)")
        },
        Check(name: "a model that declares no indexes keeps another model's unique index enforced") { storage in
            try storage.persist(CatalogMember(id: 1, name: "Ada", email: "ada@x.org", age: 36))
            try expectThrows(StorageError.uniqueViolation(collection: CatalogMember.collectionName, index: "email", value: "(\"ada@x.org\")")) {
                try storage.persist(CatalogPlainMember(id: 2, name: "Copy", email: "ada@x.org", age: 1))
            }
            try storage.persist(CatalogPlainMember(id: 3, name: "Lin", email: "lin@x.org", age: 41))
            try expect(try storage.read(CatalogMember.filter(\.email == "lin@x.org")).map(\.id) == [3], "the index holds the other model's record")
            try storage.persist(CatalogPlainMember(id: 3, name: "Lin", email: "lin@y.org", age: 42))
            try expect(try storage.read(CatalogMember.filter(\.email == "lin@x.org")).isEmpty, "an update moves the entry away")
            try expect(try storage.read(CatalogMember.filter(\.age == 42)).map(\.id) == [3], "to the new value")
        },
        Check(name: "a changed index definition is refused until the index is dropped explicitly") { storage in
            try storage.persist(CatalogMember(id: 1, name: "Ada", email: "ada@x.org", age: 36))
            do {
                try storage.persist(CatalogMemberWithSharedEmail(id: 2, name: "Lin", email: "ada@x.org", age: 41))
                throw ConformanceFailure(check: "changed index", message: "a non-unique 'email' index replaced the unique one silently")
            } catch StorageError.schemaMismatch(_, let reason) {
                try expect(reason.contains("index 'email'") && reason.contains("dropIndex"), "says how to proceed: \(reason)")
            }
            try storage.dropIndex("email", from: CatalogMember.collectionName)
            try expectThrows(StorageError.indexNotFound(collection: CatalogMember.collectionName, index: "email", existing: ["age"])) {
                try storage.dropIndex("email", from: CatalogMember.collectionName)
            }
            try storage.persist(CatalogMemberWithSharedEmail(id: 2, name: "Lin", email: "ada@x.org", age: 41))
            try expect(try storage.read(CatalogMemberWithSharedEmail.filter(\.email == "ada@x.org")).count == 2, "the new definition holds both")
        },
        Check(name: "a declared rename reads old records under the new name, before and after a write") { storage in
            try storage.persist([CatalogMember(id: 1, name: "Ada", email: "ada@x.org", age: 36), CatalogMember(id: 2, name: "Lin", email: "lin@x.org", age: 41)])
            try expect(try storage.readAll(CatalogRenamedMember.self).map(\.fullName) == ["Ada", "Lin"], "read before any write")
            try storage.persist(CatalogRenamedMember(id: 3, fullName: "Kay", email: "kay@x.org", age: 50))
            try expect(try storage.readAll(CatalogRenamedMember.self).map(\.fullName) == ["Ada", "Lin", "Kay"], "read after a write")
            try expect(try storage.read(CatalogRenamedMember.filter(\.fullName == "Lin")).map(\.id) == [2], "queried by the new name")
        },
        Check(name: "a projection decodes left-out fields with no zero value from the stored value") { storage in
            let event = CatalogEvent(id: 1, title: "launch", at: Date(timeIntervalSince1970: 1_700_000_000), token: UUID(uuidString: "00000000-0000-4000-8000-000000000001")!)
            try storage.persist(event)
            let read = try storage.read(CatalogEvent.query().only(["title"]))
            try expect(read.map(\.title) == ["launch"] && read.map(\.at) == [event.at] && read.map(\.token) == [event.token], "got \(read)")
        },
    ]
}

struct CatalogMember: Model, Equatable {
    var id: Int64
    var name: String
    var email: String
    var age: Int
    static let collectionName = "conformance.members"
    static let schema = Schema<CatalogMember>(primaryKey: \.id, indexes: [.unique(\.email), .index(\.age)])
}

/// `age` became a String.
struct CatalogMemberWithTextAge: Model {
    var id: Int64
    var name: String
    var email: String
    var age: String
    static let collectionName = "conformance.members"
    static let schema = Schema<CatalogMemberWithTextAge>(primaryKey: \.id)
}

/// `name` removed, `email` made optional, `age` narrower, `nickname` added.
struct CatalogMemberLater: Model, Equatable {
    var id: Int64
    var email: String?
    var age: Int32
    var nickname: String?
    static let collectionName = "conformance.members"
    static let schema = Schema<CatalogMemberLater>(primaryKey: \.id, indexes: [.index(\.age)])
}

/// Declares no indexes.
struct CatalogPlainMember: Model {
    var id: Int64
    var name: String
    var email: String
    var age: Int
    static let collectionName = "conformance.members"
    static let schema = Schema<CatalogPlainMember>(primaryKey: \.id)
}

/// Declares `email` not unique, under the unique index's name.
struct CatalogMemberWithSharedEmail: Model {
    var id: Int64
    var name: String
    var email: String
    var age: Int
    static let collectionName = "conformance.members"
    static let schema = Schema<CatalogMemberWithSharedEmail>(primaryKey: \.id, indexes: [.index(\.email), .index(\.age)])
}

/// `name` renamed `fullName`, declared.
struct CatalogRenamedMember: Model {
    var id: Int64
    var fullName: String
    var email: String
    var age: Int
    static let collectionName = "conformance.members"
    static let storedFields: [StoredField<CatalogRenamedMember>] = [.field(\.fullName, originalName: "name")]
    static let schema = Schema<CatalogRenamedMember>(primaryKey: \.id, indexes: [.unique(\.email), .index(\.age)])
}

/// Fields without a zero value.
struct CatalogEvent: Model {
    var id: Int64
    var title: String
    var at: Date
    var token: UUID
    static let collectionName = "conformance.events"
    static let schema = Schema<CatalogEvent>(primaryKey: \.id)
}
