// Strata through its typed Codable layer (StrataStorage): what app developers use.
import BenchmarkSupport
import Foundation
import Strata
import StrataEngine

/// A StrataStorage with full durability, reopened in place.
final class TypedDatabase {
    let path: String
    private(set) var storage: StrataStorage

    init(directory: String) throws {
        path = directory + "/bench.strata"
        storage = try Self.open(path)
    }

    private static func open(_ path: String) throws -> StrataStorage {
        try StrataStorage(path: path, options: StrataKV.options())
    }

    func inTransactions(count: Int, transactionSize: Int, progress: Progress, _ write: (any StorageWriter, Int) throws -> Void) throws {
        try inBatches(count: count, of: transactionSize, progress: progress) { range in
            try storage.write { writer in for i in range { try write(writer, i) } }
        }
        // The phase pays for the checkpoints it started in the background, and none runs
        // beside the next phase's measurement (`KeyValueStore.waitForBackgroundWork`).
        storage.database.waitForBackgroundCheckpoint()
    }

    func reopen() throws {
        try storage.close()
        storage = try Self.open(path)
    }

    func compact() throws -> Bool {
        try storage.database.compact()
        return true
    }

    func settle() throws -> Bool {
        storage.database.waitForBackgroundCompaction()
        return true
    }

    var longestBackgroundHold: (pause: Duration, parts: String)? { storage.database.longestBackgroundHold }
}

/// W1 through the typed layer. `Row` is the model inserts use before the age index exists,
/// `Indexed` the same collection declaring it: `FastUser`/`FastUserByAge` (what
/// `@StoredModel` generates) for strata-typed, `User`/`UserByAge` (plain `Codable`) for
/// strata-typed-codable.
///
/// The hot methods are specialized for the strata-typed models (`@_specialize`), as an app's
/// own code is for its concrete types: unspecialized, this harness spent about 10% of a typed
/// get on its own generic overhead (an `Optional<Row>` metadata lookup, value witnesses to
/// copy and destroy each record), which no app pays.
final class TypedW1<Row: W1Row, Indexed: W1Row>: W1Engine {
    let database: TypedDatabase
    /// After `createAgeIndex` writes go through `Indexed`, whose schema keeps the index.
    private var indexed = false
    private let id: KeyPath<Row, Int64>, age: KeyPath<Row, Int>, indexedAge: KeyPath<Indexed, Int>

    init(directory: String, id: KeyPath<Row, Int64>, age: KeyPath<Row, Int>, indexedAge: KeyPath<Indexed, Int>) throws {
        database = try TypedDatabase(directory: directory)
        (self.id, self.age, self.indexedAge) = (id, age, indexedAge)
    }

    @_specialize(exported: false, where Row == FastUser, Indexed == FastUserByAge)
    func insert(_ users: [User], transactionSize: Int, progress: Progress) throws {
        try database.inTransactions(count: users.count, transactionSize: transactionSize, progress: progress) { writer, i in
            if indexed { _ = try writer.create(Indexed(users[i])) } else { _ = try writer.create(Row(users[i])) }
        }
    }

    @_specialize(exported: false, where Row == FastUser, Indexed == FastUserByAge)
    func get(_ ids: [Int64], progress: Progress) throws -> Checksum {
        try database.storage.read { reader in
            try lookUp(ids, progress: progress) { try reader.read(Row.self, primaryKey: $0)?.digest }
        }
    }

    /// `get.in`: `inListSize` ids per query, `.in(\.id, ids)`.
    var getVariants: [(op: String, run: ([Int64], Progress) throws -> Checksum)] {
        [("get.in", { [self] ids, progress in try getInLists(ids, progress: progress) })]
    }

    @_specialize(exported: false, where Row == FastUser, Indexed == FastUserByAge)
    private func getInLists(_ ids: [Int64], progress: Progress) throws -> Checksum {
        try database.storage.read { reader in
            try lookUpInLists(ids, progress: progress) { list, found in
                try reader.forEach(Row.filter(.in(id, list))) { found($0[keyPath: id], $0.digest); return true }
            }
        }
    }

    @_specialize(exported: false, where Row == FastUser, Indexed == FastUserByAge)
    func scanFilter(ages: ClosedRange<Int>) throws -> Checksum {
        let query = Row.filter(.between(age, ages))
        return try database.storage.read { reader in
            guard try reader.explain(query).access == .fullScan else { throw BenchError("scan.filter should be a full scan") }
            var sum = Checksum()
            try reader.forEach(query) { sum.add($0.digest); return true }
            return sum
        }
    }

    func createAgeIndex() throws {
        // Declaring the index on the model is all it takes: the first write transaction that
        // opens the collection through `Indexed` builds it from the existing records.
        let plan = try database.storage.write { try $0.explain(Indexed.filter(.between(indexedAge, 30 ... 40))) }
        guard plan.access == .indexRange(index: "age") else { throw BenchError("the age index was not built: \(plan)") }
        indexed = true
    }

    @_specialize(exported: false, where Row == FastUser, Indexed == FastUserByAge)
    func queryAgeIndex(ages: ClosedRange<Int>) throws -> Checksum {
        try database.storage.read { reader in
            var sum = Checksum()
            try reader.forEach(Indexed.filter(.between(indexedAge, ages))) { sum.add($0.digest); return true }
            return sum
        }
    }

    @_specialize(exported: false, where Row == FastUser, Indexed == FastUserByAge)
    func update(_ updates: [(id: Int64, score: Double)], transactionSize: Int, progress: Progress) throws {
        try database.inTransactions(count: updates.count, transactionSize: transactionSize, progress: progress) { writer, i in
            guard var user = try writer.read(Indexed.self, primaryKey: updates[i].id) else { throw BenchError("id \(updates[i].id) not found") }
            user.score = updates[i].score
            _ = try writer.persist(user)
        }
    }

    @_specialize(exported: false, where Row == FastUser, Indexed == FastUserByAge)
    func scanAll() throws -> Checksum {
        try database.storage.read { reader in
            var sum = Checksum()
            try reader.forEach(Query<Row>()) { sum.add($0.digest); return true }
            return sum
        }
    }

    func reopen() throws { try database.reopen() }
    func compact() throws -> Bool { try database.compact() }
    func settle() throws -> Bool { try database.settle() }
    var longestBackgroundHold: (pause: Duration, parts: String)? { database.longestBackgroundHold }
    func close() throws { try database.storage.close() }
}

/// W2 through the typed layer: `FastDocument` for strata-typed, `Document` for strata-typed-codable.
final class TypedW2<Row: W2Row>: W2Engine {
    let database: TypedDatabase

    init(directory: String) throws { database = try TypedDatabase(directory: directory) }

    @_specialize(exported: false, where Row == FastDocument)
    func insert(_ documents: [Document], transactionSize: Int, progress: Progress) throws {
        try database.inTransactions(count: documents.count, transactionSize: transactionSize, progress: progress) { writer, i in
            _ = try writer.create(Row(documents[i]))
        }
    }

    @_specialize(exported: false, where Row == FastDocument)
    func get(_ ids: [Int64], progress: Progress) throws -> Checksum {
        try database.storage.read { reader in
            try lookUp(ids, progress: progress) { try reader.read(Row.self, primaryKey: $0)?.digest }
        }
    }

    @_specialize(exported: false, where Row == FastDocument)
    func scanFilter(tag: String) throws -> Checksum {
        try database.storage.read { reader in
            var sum = Checksum()
            try reader.forEach(Row.filter(.contains(Row.tagsField, tag))) { sum.add(UInt64($0.id)); return true }
            return sum
        }
    }

    func compact() throws -> Bool { try database.compact() }
    func close() throws { try database.storage.close() }
}
