import Foundation
import Strata

/// The behaviour every `Storage` must have, as a list of checks a backend's tests run.
///
/// With Swift Testing, in the backend's test target:
///
/// ```swift
/// import StrataConformance
/// import Testing
///
/// @Test(arguments: StorageConformance.checks)
/// func conforms(_ check: StorageConformance.Check) throws {
///     try check.run(on: MyStorage())        // a fresh, empty storage per check
/// }
/// ```
///
/// A failed check throws `ConformanceFailure` naming the check and what differed.
public enum StorageConformance {
    /// One behaviour, checked on a fresh storage.
    public struct Check: Sendable, CustomStringConvertible {
        /// What it checks.
        public let name: String
        let body: @Sendable (any Storage) throws -> Void

        /// Runs the check.
        /// - Throws: `ConformanceFailure` naming what differed.
        /// - Parameter storage: A new, empty storage of the backend under test.
        public func run(on storage: any Storage) throws {
            do {
                try body(storage)
            } catch let failure as ConformanceFailure {
                throw failure
            } catch {
                throw ConformanceFailure(check: name, message: "unexpected error: \(error)")
            }
        }

        public var description: String { name }
    }

    /// Every check: the core behaviour, then the catalog rules (`catalogChecks`).
    public static var checks: [Check] { coreChecks + catalogChecks }

    /// Persistence, queries, sorting, paging, indexes, transactions and errors.
    public static let coreChecks: [Check] = [
        Check(name: "create, then read by primary key") { storage in
            let user = Fixtures.users[0]
            try expect(try storage.create(user) == user, "create returns the model")
            try expect(try storage.read(ConformanceUser.self, primaryKey: user.id) == user, "read returns what was created")
            try expect(try storage.read(ConformanceUser.self, primaryKey: Int64(999)) == nil, "a missing key reads as nil")
        },
        Check(name: "create with a taken primary key fails and changes nothing") { storage in
            try storage.create(Fixtures.users[0])
            var other = Fixtures.users[1]
            other.id = Fixtures.users[0].id
            try expectThrows(StorageError.duplicateKey(collection: ConformanceUser.collectionName, key: "(\(other.id))")) { try storage.create(other) }
            try expect(try storage.read(ConformanceUser.self, primaryKey: other.id) == Fixtures.users[0], "the first record stays")
        },
        Check(name: "persist inserts, then replaces") { storage in
            var user = Fixtures.users[0]
            try storage.persist(user)
            user.name = "Renamed"
            user.age = 77
            try storage.persist(user)
            try expect(try storage.readAll(ConformanceUser.self) == [user], "one record, replaced")
            try expect(try storage.read(ConformanceUser.filter(\.age == 77)) == [user], "indexes follow the replacement")
            try expect(try storage.read(ConformanceUser.filter(\.age == Fixtures.users[0].age)).isEmpty, "the old index entry is gone")
        },
        Check(name: "persist of many is one atomic write") { storage in
            try storage.persist(Fixtures.users)
            try expect(try storage.count(ConformanceUser.self) == Fixtures.users.count, "all stored")
            var clash = Fixtures.users[3]
            clash.id = 1000
            try expectThrowsAny { try storage.persist([Fixtures.user(1001), clash]) }
            try expect(try storage.read(ConformanceUser.self, primaryKey: Int64(1001)) == nil, "nothing of a failed batch is stored")
        },
        Check(name: "read by primary keys returns the found models in the order asked") { storage in
            try storage.persist(Fixtures.users)
            let found = try storage.read(ConformanceUser.self, primaryKeys: [Int64(5), 999, 2])
            try expect(found.map(\.id) == [5, 2], "got \(found.map(\.id))")
        },
        Check(name: "unsorted results come in primary-key order") { storage in
            for user in Fixtures.users.reversed() { try storage.create(user) }
            try expect(try storage.readAll(ConformanceUser.self).map(\.id) == Fixtures.users.map(\.id).sorted(), "primary-key order")
        },
        Check(name: "key-path filters match what the same condition selects from an array") { storage in
            try storage.persist(Fixtures.users)
            let cases: [(String, Filter<ConformanceUser>, (ConformanceUser) -> Bool)] = [
                ("==", \.age == 30, { $0.age == 30 }),
                ("!=", \.age != 30, { $0.age != 30 }),
                ("<", \.age < 30, { $0.age < 30 }),
                ("<=", \.age <= 30, { $0.age <= 30 }),
                (">", \.age > 30, { $0.age > 30 }),
                (">=", \.age >= 30, { $0.age >= 30 }),
                ("id range", \.id > 3 && \.id <= 8, { $0.id > 3 && $0.id <= 8 }),
                ("in", .in(\.age, [22, 30, 41]), { [22, 30, 41].contains($0.age) }),
                ("not in", .notIn(\.age, [22, 30]), { ![22, 30].contains($0.age) }),
                ("between", .between(\.age, 25 ... 35), { (25 ... 35).contains($0.age) }),
                ("half-open between", .between(\.score, 1.5 ..< 3.0), { (1.5 ..< 3.0).contains($0.score) }),
                ("prefix", .hasPrefix(\.name, "A"), { $0.name.hasPrefix("A") }),
                ("contains", .contains(\.email, "example"), { $0.email.contains("example") }),
                ("nil", .isNil(\.nickname), { $0.nickname == nil }),
                ("not nil", .isNotNil(\.nickname), { $0.nickname != nil }),
                ("or", \.age < 25 || \.age > 40, { $0.age < 25 || $0.age > 40 }),
                ("or across fields", \.id == 3 || \.age == 30, { $0.id == 3 || $0.age == 30 }),
                ("or across indexes", \.email == "user4@example.com" || \.age > 40 || \.id < 2, { $0.email == "user4@example.com" || $0.age > 40 || $0.id < 2 }),
                ("or with a contradicting branch", (\.id == 1 && \.id == 2) || \.age == 30, { $0.age == 30 }),
                ("!= on an optional field, nil included", \.nickname != "n5", { $0.nickname != "n5" }),
                ("or beside and", \.age >= 30 && (\.id == 4 || .hasPrefix(\.name, "C")), { $0.age >= 30 && ($0.id == 4 || $0.name.hasPrefix("C")) }),
                ("not", !(\.age == 30), { $0.age != 30 }),
                ("and of index and other", \.age >= 30 && .hasPrefix(\.name, "B"), { $0.age >= 30 && $0.name.hasPrefix("B") }),
            ]
            for (label, filter, test) in cases {
                let got = try storage.read(ConformanceUser.filter(filter)).map(\.id)
                let want = Fixtures.users.filter(test).map(\.id).sorted()
                try expect(got == want, "filter \(label): got \(got), expected \(want)")
                try expect(try storage.count(ConformanceUser.filter(filter)) == want.count, "count \(label)")
            }
        },
        Check(name: "a write inside a write on the same thread throws nestedTransaction and rolls back") { storage in
            try expectThrows(StorageError.nestedTransaction) {
                try storage.write { writer in
                    try writer.create(Fixtures.users[0])
                    try storage.write { try $0.create(Fixtures.users[1]) }
                }
            }
            try expect(try storage.count(ConformanceUser.self) == 0, "the outer transaction rolled back")
            try storage.create(Fixtures.users[2])
            try expect(try storage.count(ConformanceUser.self) == 1, "the storage takes writes again")
        },
        Check(name: "count equals read().count and an array filter, over NaN, ±0, ±∞, empty and non-ASCII strings, nil") { storage in
            var rng = ConformanceRandom(seed: 0x5EED)
            let measures = (1 ... 300).map { ConformanceMeasure.random(id: Int64($0), using: &rng) }
            try storage.persist(measures)
            for round in 0 ..< 400 {
                let (label, filter, test) = ConformanceMeasure.randomFilter(using: &rng)
                let want = measures.filter(test).map(\.id)
                let read = try storage.read(ConformanceMeasure.filter(filter)).map(\.id)
                let counted = try storage.count(ConformanceMeasure.filter(filter))
                try expect(read == want, "round \(round), \(label): read \(read.count) records, the array filter \(want.count)")
                try expect(counted == want.count, "round \(round), \(label): count \(counted), the array filter \(want.count)")
            }
        },
        Check(name: "a sorted page (offset, limit) of random filters equals the array's, whatever path answers it") { storage in
            var rng = ConformanceRandom(seed: 0x50F7)
            let measures = (1 ... 300).map { ConformanceMeasure.random(id: Int64($0), using: &rng) }
            try storage.persist(measures)
            /// By rank, nil first ascending and last descending; ties by id.
            func ordered(_ a: ConformanceMeasure, _ b: ConformanceMeasure, ascending: Bool) -> Bool {
                switch (a.rank, b.rank) {
                case (nil, nil): a.id < b.id
                case (nil, _): ascending
                case (_, nil): !ascending
                case let (x?, y?): x == y ? a.id < b.id : (x < y) == ascending
                }
            }
            for round in 0 ..< 200 {
                let (label, filter, test) = ConformanceMeasure.randomFilter(using: &rng)
                let ascending = rng.next() % 2 == 0
                let offset = Int(rng.next() % 20), limit = Int(rng.next() % 40)
                let want = measures.filter(test).sorted { ordered($0, $1, ascending: ascending) }.dropFirst(offset).prefix(limit).map(\.id)
                let query = ConformanceMeasure.filter(filter).sorted(by: \.rank, ascending: ascending).offset(offset).limit(limit)
                let read = try storage.read(query).map(\.id)
                try expect(read == Array(want), "round \(round), \(label), rank \(ascending ? "ascending" : "descending"), offset \(offset), limit \(limit): read \(read), want \(Array(want))")
            }
        },
        Check(name: "sorting by an optional field puts nil first ascending and last descending, like SQLite and SwiftData") { storage in
            try storage.persist(Fixtures.users)
            /// Nicknames in order, nil first ascending and last descending; ties by id.
            func expected(ascending: Bool) -> [Int64] {
                Fixtures.users.sorted { a, b in
                    switch (a.nickname, b.nickname) {
                    case (nil, nil): a.id < b.id
                    case (nil, _): ascending
                    case (_, nil): !ascending
                    case let (x?, y?): x == y ? a.id < b.id : (x < y) == ascending
                    }
                }.map(\.id)
            }
            let ascending = try storage.read(ConformanceUser.query().sorted(by: \.nickname).sorted(by: \.id)).map(\.id)
            try expect(ascending == expected(ascending: true), "ascending: \(ascending)")
            let descending = try storage.read(ConformanceUser.query().sorted(by: \.nickname, ascending: false).sorted(by: \.id)).map(\.id)
            try expect(descending == expected(ascending: false), "descending: \(descending)")
            let firstTwo = try storage.read(ConformanceUser.query().sorted(by: \.nickname).limit(2)).map(\.nickname)
            try expect(firstTwo == [nil, nil], "a limit keeps the nils first: \(firstTwo)")
        },
        Check(name: "#Predicate queries match what the predicate selects from an array") { storage in
            try storage.persist(Fixtures.users)
            let predicates: [Predicate<ConformanceUser>] = [
                #Predicate { $0.age > 30 },
                #Predicate { 30 >= $0.age },
                #Predicate { $0.age == 41 && $0.score > 1.0 },
                #Predicate { $0.id >= 4 && $0.id < 9 },
                #Predicate { [22, 41].contains($0.age) },
                #Predicate { $0.name.starts(with: "C") },
                #Predicate { $0.age < 25 || $0.name == "Dana" },
                #Predicate { $0.nickname == nil },
            ]
            for predicate in predicates {
                let got = try storage.read(ConformanceUser.filter(predicate)).map(\.id)
                let want = try Fixtures.users.filter { try predicate.evaluate($0) }.map(\.id).sorted()
                try expect(got == want, "predicate: got \(got), expected \(want)")
            }
        },
        Check(name: "sort by several keys, ascending and descending, with limit and offset") { storage in
            try storage.persist(Fixtures.users)
            let byAgeThenName = Fixtures.users.sorted { ($0.age, $1.name) > ($1.age, $0.name) }
            let query = ConformanceUser.query().sorted(by: \.age, ascending: false).sorted(by: \.name)
            try expect(try storage.read(query).map(\.id) == byAgeThenName.map(\.id), "age descending, then name")
            try expect(try storage.read(query.offset(2).limit(3)).map(\.id) == Array(byAgeThenName.dropFirst(2).prefix(3)).map(\.id), "window")
            try expect(try storage.read(query.offset(100)).isEmpty, "offset past the end")
            let descriptor = try storage.read(ConformanceUser.query().sorted(by: SortDescriptor(\.name, order: .reverse)))
            try expect(descriptor.map(\.name) == Fixtures.users.map(\.name).sorted(by: >), "SortDescriptor")
            let limited = try storage.read(ConformanceUser.query().sorted(by: \.age).limit(2))
            try expect(limited.map(\.age) == Array(Fixtures.users.map(\.age).sorted().prefix(2)), "sorted by an indexed field with a limit")
        },
        Check(name: "count, first and exists") { storage in
            try storage.persist(Fixtures.users)
            try expect(try storage.count(ConformanceUser.self) == Fixtures.users.count, "count all")
            try expect(try storage.count(ConformanceUser.query().offset(3).limit(4)) == 4, "count respects the window")
            try expect(try storage.first(ConformanceUser.query().sorted(by: \.score))?.score == Fixtures.users.map(\.score).min(), "first")
            try expect(try storage.exists(ConformanceUser.filter(\.age == 41)), "exists")
            try expect(try !storage.exists(ConformanceUser.filter(\.age == 1000)), "not exists")
        },
        Check(name: "erase by primary key, by keys, by query, and all") { storage in
            try storage.persist(Fixtures.users)
            try expect(try storage.erase(ConformanceUser.self, primaryKey: Int64(1)), "erase existing")
            try expect(try !storage.erase(ConformanceUser.self, primaryKey: Int64(1)), "erase missing")
            try expect(try storage.erase(ConformanceUser.self, primaryKeys: [Int64(2), 3, 999]) == 2, "erase keys")
            let over40 = Fixtures.users.filter { $0.id > 3 && $0.age > 40 }.count
            try expect(try storage.erase(ConformanceUser.filter(\.age > 40)) == over40, "erase by query")
            try expect(try storage.read(ConformanceUser.filter(\.age > 40)).isEmpty, "index entries gone too")
            try storage.eraseAll(ConformanceUser.self)
            try expect(try storage.count(ConformanceUser.self) == 0, "erase all")
            try storage.create(Fixtures.users[0])
            try expect(try storage.read(ConformanceUser.filter(\.email == Fixtures.users[0].email)).count == 1, "usable after erase all")
        },
        Check(name: "a write whose body throws leaves nothing behind") { storage in
            try storage.create(Fixtures.users[0])
            struct Abort: Error {}
            do {
                try storage.write { tx in
                    try tx.create(Fixtures.users[1])
                    try tx.erase(ConformanceUser.self, primaryKey: Fixtures.users[0].id)
                    throw Abort()
                }
            } catch is Abort {}
            try expect(try storage.readAll(ConformanceUser.self) == [Fixtures.users[0]], "rolled back")
        },
        Check(name: "a unique violation fails with the index and value and rolls back the transaction") { storage in
            try storage.create(Fixtures.users[0])
            var duplicate = Fixtures.users[1]
            duplicate.email = Fixtures.users[0].email
            try expectThrows(StorageError.uniqueViolation(collection: ConformanceUser.collectionName, index: "email", value: "(\"\(duplicate.email)\")")) {
                try storage.write { tx in
                    try tx.create(Fixtures.users[2])
                    try tx.create(duplicate)
                }
            }
            try expect(try storage.count(ConformanceUser.self) == 1, "the whole transaction is rolled back")
            do {
                try storage.write { tx in
                    try tx.create(Fixtures.users[2])
                    _ = try? tx.create(duplicate)       // swallowing the error does not save the transaction
                }
                throw ConformanceFailure(check: "unique", message: "a transaction with a unique violation committed")
            } catch is StorageError {}
            try expect(try storage.count(ConformanceUser.self) == 1, "still rolled back")
        },
        Check(name: "a transaction reads its own writes; a snapshot does not see later commits") { storage in
            try storage.create(Fixtures.users[0])
            try storage.write { tx in
                try tx.create(Fixtures.users[1])
                try expect(try tx.count(ConformanceUser.query()) == 2, "own write visible")
                try expect(try tx.read(ConformanceUser.filter(\.age == Fixtures.users[1].age)).contains(Fixtures.users[1]), "own index entries visible")
            }
            try storage.read { snapshot in
                try storage.create(Fixtures.users[2])
                try expect(try snapshot.count(ConformanceUser.query()) == 2, "snapshot unchanged")
            }
            try expect(try storage.count(ConformanceUser.self) == 3, "later read sees the commit")
        },
        Check(name: "auto-increment ids are assigned in order and never reused") { storage in
            let first = try storage.create(ConformanceNote(text: "a"))
            let second = try storage.create(ConformanceNote(text: "b"))
            try expect(first.id == 1 && second.id == 2, "ids \(first.id), \(second.id)")
            try storage.erase(ConformanceNote.self, primaryKey: second.id)
            let third = try storage.create(ConformanceNote(text: "c"))
            try expect(third.id == 3, "id after delete: \(third.id)")
            try storage.create(ConformanceNote(id: 10, text: "explicit"))
            try expect(try storage.create(ConformanceNote(text: "d")).id == 11, "ids continue after an explicit one")
        },
        Check(name: "IN on the primary key returns the records it names, absent values skipped, in primary-key order") { storage in
            let users = (1 ... 300).map { Fixtures.user(Int64($0)) }
            try storage.persist(users)
            // More values than one batch of lookups, unsorted, repeated, some naming no record.
            let asked: [Int64] = (0 ..< 160).map { Int64(($0 * 37) % 400) } + [7, 7, 999, -1]
            let expected = users.filter { asked.contains($0.id) }
            try expect(try storage.read(ConformanceUser.filter(.in(\.id, asked))).map(\.id) == expected.map(\.id), "ascending")
            let descending = ConformanceUser.filter(.in(\.id, asked)).sorted(by: \.id, ascending: false)
            try expect(try storage.read(descending).map(\.id) == expected.map(\.id).reversed(), "descending")
            try expect(try storage.read(descending.offset(70).limit(9)).map(\.id) == Array(expected.map(\.id).reversed().dropFirst(70).prefix(9)),
                       "a window across batches")
            let older = ConformanceUser.filter(.in(\.id, asked) && \.age > 35)
            try expect(try storage.read(older).map(\.id) == expected.filter { $0.age > 35 }.map(\.id), "with a condition on another field")
            try expect(try storage.count(ConformanceUser.filter(.in(\.id, asked))) == expected.count, "count")
            try expect(try storage.read(ConformanceUser.filter(.in(\.id, [Int64(999), 1000]))).isEmpty, "only absent values")
        },
        Check(name: "IN on the primary key in a transaction sees the transaction's own writes and erasures") { storage in
            try storage.persist(Fixtures.users)
            try storage.write { tx in
                try tx.create(Fixtures.user(40))
                _ = try tx.erase(ConformanceUser.self, primaryKey: Int64(3))
                let found = try tx.read(ConformanceUser.filter(.in(\.id, [Int64(40), 3, 2, 41])))
                try expect(found.map(\.id) == [2, 40], "got \(found.map(\.id))")
            }
        },
        Check(name: "IN on a unique index returns the records it names, absent values skipped, in either order") { storage in
            let users = (1 ... 300).map { Fixtures.user(Int64($0)) }
            try storage.persist(users)
            // More values than one batch; some name no record (an id never stored, an address
            // no one has), one is repeated.
            func email(_ i: Int) -> String { i % 10 == 0 ? "nobody\(i)@example.org" : Fixtures.user(Int64((i * 53) % 400)).email }
            var emails: [String] = (0 ..< 130).map(email)
            emails += [Fixtures.user(7).email, Fixtures.user(7).email]
            let expected = users.filter { emails.contains($0.email) }
            try expect(try storage.read(ConformanceUser.filter(.in(\.email, emails))).map(\.id) == expected.map(\.id), "primary-key order")
            let byEmail = ConformanceUser.filter(.in(\.email, emails)).sorted(by: \.email, ascending: false)
            let descending = expected.map(\.email).sorted(by: >)
            try expect(try storage.read(byEmail).map(\.email) == descending, "index order, descending")
            try expect(try storage.read(byEmail.offset(40).limit(6)).map(\.email) == Array(descending.dropFirst(40).prefix(6)), "a window")
            try expect(try storage.count(ConformanceUser.filter(.in(\.email, emails))) == expected.count, "count")
            let either = ConformanceUser.filter(.in(\.email, Array(emails.prefix(12))) || .in(\.id, [Int64(299), 1000]))
            let eitherExpected = users.filter { emails.prefix(12).contains($0.email) || $0.id == 299 }
            try expect(try storage.read(either).map(\.id) == eitherExpected.map(\.id), "OR with the primary key")
        },
        Check(name: "IN on a composite primary key's first field reads every record under each value") { storage in
            for group in ["a", "b", "c"] { for n in 0 ..< 3 { try storage.create(ConformancePair(group: group, number: n, value: "\(group)\(n)")) } }
            let found = try storage.read(ConformancePair.filter(.in(\.group, ["c", "z", "a"])))
            try expect(found.map(\.value) == ["a0", "a1", "a2", "c0", "c1", "c2"], "got \(found.map(\.value))")
        },
        Check(name: "composite primary keys read by tuple and scan by their first field") { storage in
            for group in ["a", "b"] { for n in 0 ..< 3 { try storage.create(ConformancePair(group: group, number: n, value: "\(group)\(n)")) } }
            try expect(try storage.read(ConformancePair.self, primaryKey: Key("b", 1))?.value == "b1", "tuple lookup")
            try expect(try storage.read(ConformancePair.filter(\.group == "a")).map(\.number) == [0, 1, 2], "first-field filter")
            try expectThrows(StorageError.duplicateKey(collection: ConformancePair.collectionName, key: "(\"a\", 0)")) {
                try storage.create(ConformancePair(group: "a", number: 0, value: "again"))
            }
        },
    ]
}

/// A failed conformance check.
public struct ConformanceFailure: Error, DescribedError {
    /// The check that failed.
    public let check: String
    /// What differed.
    public let message: String
    public var description: String { "\(check): \(message)" }
}

func expect(_ condition: Bool, _ message: @autoclosure () -> String) throws {
    if !condition { throw ConformanceFailure(check: "expectation", message: message()) }
}

func expectThrows<E: Error & Equatable>(_ expected: E, _ body: () throws -> Void) throws {
    do {
        try body()
    } catch let error as E {
        try expect(error == expected, "threw \(error), expected \(expected)")
        return
    } catch {
        throw ConformanceFailure(check: "expectation", message: "threw \(error), expected \(expected)")
    }
    throw ConformanceFailure(check: "expectation", message: "nothing thrown, expected \(expected)")
}

func expectThrowsAny(_ body: () throws -> Void) throws {
    do { try body() } catch { return }
    throw ConformanceFailure(check: "expectation", message: "nothing thrown")
}

struct ConformanceUser: Model, Equatable {
    var id: Int64
    var name: String
    var email: String
    var age: Int
    var score: Double
    var nickname: String?
    var tags: [String]

    static let collectionName = "conformance.users"
    static let schema = Schema<ConformanceUser>(primaryKey: \.id, indexes: [.index(\.age), .unique(\.email)])
}

struct ConformanceNote: Model, Equatable {
    var id: Int64 = 0
    var text: String
    static let collectionName = "conformance.notes"
    static let schema = Schema<ConformanceNote>.autoIncrementing(\.id)
}

struct ConformancePair: Model, Equatable {
    var group: String
    var number: Int
    var value: String
    static let collectionName = "conformance.pairs"
    static let schema = Schema<ConformancePair>(primaryKey: \.group, \.number)
}

/// Values that break naive comparisons: NaN (no order), -0.0 (== 0.0), infinities, empty
/// and non-ASCII strings, nil.
struct ConformanceMeasure: Model, Equatable {
    var id: Int64
    var value: Double
    var unindexed: Double
    var label: String
    var rank: Int?

    static let collectionName = "conformance.measures"
    static let schema = Schema<ConformanceMeasure>(primaryKey: \.id, indexes: [.index(\.value), .index(\.label), .index(\.rank)])

    static let doubles: [Double] = [.nan, -.nan, 0, -0.0, 1, -1, 0.5, .infinity, -.infinity, .greatestFiniteMagnitude, -.leastNonzeroMagnitude, 1e-300]
    static let labels = ["", "a", "A", "é", "e\u{301}", "日本", "😀", "a\u{0}b", "zz", "Z"]

    static func random(id: Int64, using rng: inout ConformanceRandom) -> ConformanceMeasure {
        ConformanceMeasure(
            id: id, value: rng.pick(doubles), unindexed: rng.pick(doubles), label: rng.pick(labels),
            rank: rng.next() % 3 == 0 ? nil : Int(rng.next() % 5) - 2)
    }

    static func randomFilter(using rng: inout ConformanceRandom) -> (String, Filter<ConformanceMeasure>, (ConformanceMeasure) -> Bool) {
        let d = rng.pick(doubles), e = rng.pick(doubles), s = rng.pick(labels), k = Int(rng.next() % 5) - 2
        let choices: [(String, Filter<ConformanceMeasure>, (ConformanceMeasure) -> Bool)] = [
            ("value == \(d)", \.value == d, { $0.value == d }),
            ("value < \(d)", \.value < d, { $0.value < d }),
            ("value <= \(d)", \.value <= d, { $0.value <= d }),
            ("value > \(d)", \.value > d, { $0.value > d }),
            ("value >= \(d)", \.value >= d, { $0.value >= d }),
            ("value != \(d)", \.value != d, { $0.value != d }),
            ("unindexed > \(d)", \.unindexed > d, { $0.unindexed > d }),
            ("unindexed <= \(d)", \.unindexed <= d, { $0.unindexed <= d }),
            ("value > \(d) && value <= \(e)", \.value > d && \.value <= e, { $0.value > d && $0.value <= e }),
            ("value in [\(d), \(e)]", .in(\.value, [d, e]), { [d, e].contains($0.value) }),
            ("value not in [\(d), \(e)]", .notIn(\.value, [d, e]), { ![d, e].contains($0.value) }),
            ("label == \(s.debugDescription)", \.label == s, { $0.label == s }),
            ("label < \(s.debugDescription)", \.label < s, { $0.label < s }),
            ("label >= \(s.debugDescription)", \.label >= s, { $0.label >= s }),
            ("label prefix \(s.debugDescription)", .hasPrefix(\.label, s), { $0.label.hasPrefix(s) }),
            ("rank is nil", .isNil(\.rank), { $0.rank == nil }),
            ("rank is not nil", .isNotNil(\.rank), { $0.rank != nil }),
            ("rank < \(k)", \.rank < k, { $0.rank.map { $0 < k } ?? false }),
            ("rank <= \(k)", \.rank <= k, { $0.rank.map { $0 <= k } ?? false }),
            ("rank > \(k)", \.rank > k, { $0.rank.map { $0 > k } ?? false }),
            ("rank >= \(k) && value < \(d)", \.rank >= k && \.value < d, { ($0.rank.map { $0 >= k } ?? false) && $0.value < d }),
            ("rank == nil", \.rank == nil, { $0.rank == nil }),
            ("rank is not nil && value >= \(d)", .isNotNil(\.rank) && \.value >= d, { $0.rank != nil && $0.value >= d }),
        ]
        return rng.pick(choices)
    }
}

/// SplitMix64, so a failing round can be replayed.
struct ConformanceRandom {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    mutating func pick<T>(_ options: [T]) -> T { options[Int(next() % UInt64(options.count))] }
}

enum Fixtures {
    static let names = ["Ada", "Alan", "Barbara", "Brian", "Claude", "Dana", "Edsger", "Grace", "Ken", "Linus", "Margaret", "Niklaus"]

    static func user(_ id: Int64) -> ConformanceUser {
        let i = Int(id)
        return ConformanceUser(
            id: id, name: names[i % names.count] + (i >= names.count ? "\(i)" : ""), email: "user\(i)@\(i % 3 == 0 ? "example.com" : "mail.org")",
            age: [22, 30, 30, 41, 35, 28, 41, 19, 52, 30, 24, 60][i % 12], score: Double(i % 5) * 0.75,
            nickname: i % 4 == 0 ? nil : "n\(i)", tags: (0 ..< i % 3).map { "t\($0)" })
    }

    static let users: [ConformanceUser] = (1 ... 12).map { user(Int64($0)) }
}
