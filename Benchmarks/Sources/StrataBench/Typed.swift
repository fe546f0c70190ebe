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
    }

    func reopen() throws {
        try storage.close()
        storage = try Self.open(path)
    }

    func compact() throws -> Bool {
        try storage.database.compact()
        return true
    }
}

final class TypedW1: W1Engine {
    let database: TypedDatabase
    /// After `createAgeIndex` writes go through `UserByAge`, whose schema keeps the index.
    private var indexed = false

    init(directory: String) throws { database = try TypedDatabase(directory: directory) }

    func insert(_ users: [User], transactionSize: Int, progress: Progress) throws {
        try database.inTransactions(count: users.count, transactionSize: transactionSize, progress: progress) { writer, i in
            if indexed { _ = try writer.create(UserByAge(users[i])) } else { _ = try writer.create(users[i]) }
        }
    }

    func get(_ ids: [Int64], progress: Progress) throws -> Checksum {
        try database.storage.read { reader in
            try lookUp(ids, progress: progress) { try reader.read(User.self, primaryKey: $0)?.digest }
        }
    }

    func scanFilter(ages: ClosedRange<Int>) throws -> Checksum {
        let query = User.filter(.between(\.age, ages))
        return try database.storage.read { reader in
            guard try reader.explain(query).access == .fullScan else { throw BenchError("scan.filter should be a full scan") }
            var sum = Checksum()
            try reader.forEach(query) { sum.add($0); return true }
            return sum
        }
    }

    func createAgeIndex() throws {
        // Declaring the index on the model is all it takes: the first write transaction that
        // opens the collection through UserByAge builds it from the existing records.
        let plan = try database.storage.write { try $0.explain(UserByAge.filter(.between(\.age, 30 ... 40))) }
        guard plan.access == .indexRange(index: "age") else { throw BenchError("the age index was not built: \(plan)") }
        indexed = true
    }

    func queryAgeIndex(ages: ClosedRange<Int>) throws -> Checksum {
        try database.storage.read { reader in
            var sum = Checksum()
            try reader.forEach(UserByAge.filter(.between(\.age, ages))) { sum.add($0.user); return true }
            return sum
        }
    }

    func update(_ updates: [(id: Int64, score: Double)], transactionSize: Int, progress: Progress) throws {
        try database.inTransactions(count: updates.count, transactionSize: transactionSize, progress: progress) { writer, i in
            guard var user = try writer.read(UserByAge.self, primaryKey: updates[i].id) else { throw BenchError("id \(updates[i].id) not found") }
            user.score = updates[i].score
            _ = try writer.persist(user)
        }
    }

    func scanAll() throws -> Checksum {
        try database.storage.read { reader in
            var sum = Checksum()
            try reader.forEach(Query<User>()) { sum.add($0); return true }
            return sum
        }
    }

    func reopen() throws { try database.reopen() }
    func compact() throws -> Bool { try database.compact() }
    func close() throws { try database.storage.close() }
}

final class TypedW2: W2Engine {
    let database: TypedDatabase

    init(directory: String) throws { database = try TypedDatabase(directory: directory) }

    func insert(_ documents: [Document], transactionSize: Int, progress: Progress) throws {
        try database.inTransactions(count: documents.count, transactionSize: transactionSize, progress: progress) { writer, i in
            _ = try writer.create(documents[i])
        }
    }

    func get(_ ids: [Int64], progress: Progress) throws -> Checksum {
        try database.storage.read { reader in
            try lookUp(ids, progress: progress) { try reader.read(Document.self, primaryKey: $0)?.digest }
        }
    }

    func scanFilter(tag: String) throws -> Checksum {
        try database.storage.read { reader in
            var sum = Checksum()
            try reader.forEach(Document.filter(#Predicate { $0.tags.contains(tag) })) { sum.add(UInt64($0.id)); return true }
            return sum
        }
    }

    func compact() throws -> Bool { try database.compact() }
    func close() throws { try database.storage.close() }
}
