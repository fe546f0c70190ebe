import Foundation
import Strata
import StrataEngine
import Testing

struct Person: Model, Equatable {
    var id: Int64
    var name: String
    var email: String
    var age: Int
    var score: Double
    var city: String

    static let collectionName = "people"
    static let schema = Schema<Person>(primaryKey: \.id, indexes: [.index(\.age), .unique(\.email), .index(\.city, \.age)])

    static func sample(_ i: Int) -> Person {
        Person(id: Int64(i), name: "p\(i % 37)", email: "p\(i)@example.com", age: 18 + (i * 7) % 60,
               score: Double((i * 13) % 100) / 10, city: ["Paris", "Oslo", "Lima", "Kyiv"][i % 4])
    }
}

func withStorage(_ count: Int = 300, _ body: (StrataStorage) throws -> Void) throws {
    try withStorage(holding: (0 ..< count).map(Person.sample), body)
}

/// A new file holding `models`, closed and removed after `body`.
func withStorage<M: Model>(holding models: [M], _ body: (StrataStorage) throws -> Void) throws {
    let directory = NSTemporaryDirectory() + "strata-typed-" + UUID().uuidString
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let storage = try StrataStorage(path: directory + "/t.strata")
    try storage.persist(models)
    try body(storage)
    try storage.close()
}

@Suite("Query planner")
struct QueryPlannerTests {
    let people = (0 ..< 300).map(Person.sample)

    func check(_ storage: StrataStorage, _ query: Query<Person>, _ expected: (Person) -> Bool, access: QueryPlan.Access, residual: Bool) throws {
        let plan = try storage.explain(query)
        #expect(plan.access == access, "\(plan)")
        #expect(plan.residualFilter == residual, "\(plan)")
        #expect(try storage.read(query).map(\.id) == people.filter(expected).map(\.id), "\(plan)")
    }

    @Test("equality and ranges on the primary key become primary-key lookups and range scans")
    func primaryKey() throws {
        try withStorage { s in
            try check(s, Person.filter(\.id == 5), { $0.id == 5 }, access: .primaryKeyPoints(count: 1), residual: false)
            try check(s, Person.filter(.in(\.id, [7, 3, 3])), { [3, 7].contains($0.id) }, access: .primaryKeyPoints(count: 2), residual: false)
            try check(s, Person.filter(\.id > 250), { $0.id > 250 }, access: .primaryKeyRange, residual: false)
            try check(s, Person.filter(#Predicate { $0.id >= 10 && $0.id < 20 }), { $0.id >= 10 && $0.id < 20 }, access: .primaryKeyRange, residual: false)
            #expect(try s.explain(Person.filter(\.id > 250)).range == "((250) … +∞)")
        }
    }

    @Test("conditions on an indexed field use the index; IN becomes point lookups")
    func indexes() throws {
        try withStorage { s in
            try check(s, Person.filter(\.age > 74), { $0.age > 74 }, access: .indexRange(index: "age"), residual: false)
            try check(s, Person.filter(.between(\.age, 20 ... 22)), { (20 ... 22).contains($0.age) }, access: .indexRange(index: "age"), residual: false)
            try check(s, Person.filter(.in(\.age, [20, 30])), { [20, 30].contains($0.age) }, access: .indexPoints(index: "age", count: 2), residual: false)
            try check(s, Person.filter(\.email == "p42@example.com"), { $0.id == 42 }, access: .indexPoints(index: "email", count: 1), residual: false)
            try check(s, Person.filter(#Predicate { $0.age <= 19 }), { $0.age <= 19 }, access: .indexRange(index: "age"), residual: false)
        }
    }

    @Test("an unsorted query through an index returns its page in primary-key order, residual conditions and offset applied")
    func unsortedIndexPagesInPrimaryKeyOrder() throws {
        try withStorage { s in
            // (With a limit the planner rightly prefers a full scan that stops early here.)
            let query = Person.filter(.between(\.age, 20 ... 22) && \.score > 3).offset(2)
            let plan = try s.explain(query)
            #expect(plan.access == .indexRange(index: "age"), "\(plan)")
            let expected = people.filter { (20 ... 22).contains($0.age) && $0.score > 3 }.dropFirst(2)
            #expect(try s.read(query).map(\.id) == expected.map(\.id))
            #expect(try s.count(Person.filter(.in(\.age, [21, 22, 57]))) == people.filter { [21, 22, 57].contains($0.age) }.count)
            try check(s, Person.filter(.in(\.age, [57, 21])), { [21, 57].contains($0.age) }, access: .indexPoints(index: "age", count: 2), residual: false)
        }
    }

    @Test("the first page of a narrow condition reads the index's keys, then fetches in primary-key order until the page is full")
    func narrowPageThroughIndex() throws {
        try withStorage(2000) { s in
            let all = (0 ..< 2000).map(Person.sample)
            let query = Person.filter(\.age == 25).offset(2).limit(5)
            let plan = try s.explain(query)
            #expect(plan.access == .indexPoints(index: "age", count: 1) && plan.fetchesInPrimaryKeyOrder && !plan.sortsInMemory, "\(plan)")
            #expect(plan.stopsAfter == 7 && plan.estimatedRows == 7, "\(plan)")
            #expect(plan.description.contains("fetched in primary-key order"), "\(plan)")
            // A full scan would pass ~60 records per match (the index counted the matches).
            #expect(plan.alternatives.contains { $0.access == .fullScan && $0.estimatedRows > 300 }, "\(plan)")
            #expect(try s.read(query).map(\.id) == all.filter { $0.age == 25 }.dropFirst(2).prefix(5).map(\.id))
        }
    }

    @Test("a composite index serves conditions on its first field")
    func compositeIndex() throws {
        try withStorage { s in
            try check(s, Person.filter(\.city == "Oslo"), { $0.city == "Oslo" }, access: .indexPoints(index: "city+age", count: 1), residual: false)
            try check(s, Person.filter(.hasPrefix(\.city, "K")), { $0.city.hasPrefix("K") }, access: .indexRange(index: "city+age"), residual: false)
        }
    }

    @Test("an AND of pushable and other terms reads the index and filters the rest")
    func residual() throws {
        try withStorage { s in
            try check(s, Person.filter(\.age > 72 && .contains(\.name, "1")), { $0.age > 72 && $0.name.contains("1") }, access: .indexRange(index: "age"), residual: true)
            try check(s, Person.filter(#Predicate { $0.age == 25 && $0.score > 5 }), { $0.age == 25 && $0.score > 5 }, access: .indexPoints(index: "age", count: 1), residual: true)
            try check(s, Person.filter(\.id == 9 && \.age == 25), { $0.id == 9 && $0.age == 25 }, access: .primaryKeyPoints(count: 1), residual: true)
        }
    }

    @Test("conditions the planner cannot push down still work, by full scan")
    func fullScan() throws {
        try withStorage { s in
            try check(s, Person.filter(\.score < 1 || \.score > 9), { $0.score < 1 || $0.score > 9 }, access: .fullScan, residual: true)
            try check(s, Person.filter(\.score > 9), { $0.score > 9 }, access: .fullScan, residual: true)
            try check(s, Person.filter(#Predicate { $0.age + 1 == 30 }), { $0.age + 1 == 30 }, access: .fullScan, residual: true)
        }
    }

    @Test("an OR of equalities on one field is an IN: point lookups, on the primary key or an index")
    func orOfEqualities() throws {
        try withStorage { s in
            try check(s, Person.filter(\.id == 7 || \.id == 3 || \.id == 7), { [3, 7].contains($0.id) }, access: .primaryKeyPoints(count: 2), residual: false)
            try check(s, Person.filter(#Predicate { $0.email == "p4@example.com" || $0.email == "p9@example.com" }), { [4, 9].contains($0.id) },
                      access: .indexPoints(index: "email", count: 2), residual: false)
            try check(s, Person.filter(\.id == 3 || \.age == 20), { $0.id == 3 || $0.age == 20 },
                      access: .union([.primaryKeyPoints(count: 1), .indexPoints(index: "age", count: 1)]), residual: true)
        }
    }

    @Test("a sort on an indexed field with a limit walks the index and stops early")
    func indexOrder() throws {
        try withStorage { s in
            let youngest = Person.query().sorted(by: \.age).limit(5)
            let plan = try s.explain(youngest)
            #expect(plan.access == .indexOrder(index: "age", descending: false))
            #expect(plan.stopsAfter == 5 && !plan.sortsInMemory)
            #expect(try s.read(youngest).map(\.age) == Array(people.map(\.age).sorted().prefix(5)))
            let oldest = Person.query().sorted(by: \.age, ascending: false).offset(2).limit(3)
            #expect(try s.explain(oldest).access == .indexOrder(index: "age", descending: true))
            #expect(try s.read(oldest).map(\.age) == Array(people.map(\.age).sorted(by: >).dropFirst(2).prefix(3)))
        }
    }

    @Test("a range on an indexed field sorted by that field reads in index order, without sorting")
    func rangeInOrder() throws {
        try withStorage { s in
            for ascending in [true, false] {
                let query = Person.filter(\.age > 50).sorted(by: \.age, ascending: ascending).limit(7)
                let plan = try s.explain(query)
                #expect(plan.access == .indexRange(index: "age") && !plan.sortsInMemory && plan.stopsAfter == 7, "\(plan)")
                let expected = people.filter { $0.age > 50 }.sorted { ascending ? ($0.age, $0.id) < ($1.age, $1.id) : $0.age > $1.age || $0.age == $1.age && $0.id < $1.id }
                #expect(try s.read(query).map(\.id) == expected.prefix(7).map(\.id))
            }
            let points = Person.filter(.in(\.age, [60, 20, 40])).sorted(by: \.age, ascending: false)
            #expect(try s.read(points).map(\.age) == people.filter { [20, 40, 60].contains($0.age) }.map(\.age).sorted(by: >))
        }
    }

    @Test("an index walk fetches its records in growing batches: limits inside and across batches, both directions, give the model's rows")
    func indexWalkBatches() throws {
        try withStorage { s in
            for ascending in [true, false] {
                // Batches of 8, 16, 32, then 64: limits in the first, on its edges, in the
                // fourth. (Past ~60 rows of 300 the planner scans and sorts instead.)
                for limit in [1, 7, 8, 9, 24, 25, 57] {
                    let query = Person.query().sorted(by: \.age, ascending: ascending).limit(limit)
                    let access = try s.explain(query).access
                    #expect(access == .indexOrder(index: "age", descending: !ascending))
                    let expected = people.sorted { ascending ? ($0.age, $0.id) < ($1.age, $1.id) : $0.age > $1.age || $0.age == $1.age && $0.id < $1.id }
                    #expect(try s.read(query).map(\.id) == expected.prefix(limit).map(\.id), "limit \(limit)")
                }
            }
        }
    }

    @Test("an index entry naming a record that is gone is a corruption error, wherever it falls in a batch")
    func indexWalkMissingRecord() throws {
        try withStorage { s in
            // The record of the 30th-youngest person removed behind the index's back.
            let gone = people.sorted { ($0.age, $0.id) < ($1.age, $1.id) }[29]
            try s.database.write { tx in _ = try tx.delete(Key(gone.id).bytes, in: "c:people") }
            #expect(try s.read(Person.query().sorted(by: \.age).limit(29)).count == 29)
            #expect(throws: RecordError.self) { try s.read(Person.query().sorted(by: \.age).limit(30)) }
        }
    }

    @Test("contradictory conditions read nothing")
    func contradiction() throws {
        try withStorage { s in
            let query = Person.filter(\.age > 50 && \.age < 20)
            let plan = try s.explain(query), results = try s.read(query)
            #expect(plan.access == .primaryKeyPoints(count: 0))
            #expect(results.isEmpty)
        }
    }
}

/// Optional fields through an index: nil is one key (below every value), comparisons never
/// match it, and the index walks in nil-first order.
@Suite("Optional fields and the planner")
struct OptionalFieldPlannerTests {
    struct Chore: Model, Equatable {
        var id: Int64
        var due: Date?
        static let collectionName = "chores"
        static let schema = Schema<Chore>(primaryKey: \.id, indexes: [.index(\.due)])
    }

    static let now = Date(timeIntervalSinceReferenceDate: 800_000_000)
    static let chores: [Chore] = (1 ... 40).map { (i: Int) -> Chore in
        let due: Date? = i % 3 == 0 ? nil : now.addingTimeInterval(Double(i - 20) * 3600)
        return Chore(id: Int64(i), due: due)
    }

    /// A storage holding `chores`, in a file removed when the storage is released.
    final class ChoreFile {
        let path = NSTemporaryDirectory() + "strata-optional-" + UUID().uuidString + ".strata"
        let storage: StrataStorage
        init() throws {
            storage = try StrataStorage(path: path)
            try storage.persist(OptionalFieldPlannerTests.chores)
        }
        deinit {
            try? storage.close()
            try? FileManager.default.removeItem(atPath: path)
        }
    }

    struct Event: Model, Equatable {
        var id: Int64
        var at: Date
        static let collectionName = "events"
        static let schema = Schema<Event>(primaryKey: \.id, indexes: [.index(\.at)])
    }

    @Test("an index on a date reads its range, yet a record whose date only shares the bound's key is neither returned nor counted")
    func dateIndexKeysDoNotDecide() throws {
        // Dates one Double step apart since 2001 share a key: keys hold seconds since 1970.
        let exact = Date(timeIntervalSinceReferenceDate: 700_000_000)
        let close = Date(timeIntervalSinceReferenceDate: 700_000_000.0.nextUp)
        #expect(exact != close && Key(exact).bytes == Key(close).bytes, "the two dates should share a key")
        try withStorage(0) { storage in
            try storage.persist([Event(id: 1, at: exact), Event(id: 2, at: close), Event(id: 3, at: exact.addingTimeInterval(1))])
            let equal = Event.filter(\.at == exact)
            #expect(try storage.explain(equal).access == .indexPoints(index: "at", count: 1))
            #expect(try storage.read(equal).map(\.id) == [1])
            #expect(try storage.count(equal) == 1)
            let after = Event.filter(\.at > exact)
            #expect(try storage.read(after).map(\.id) == [2, 3])
            #expect(try storage.count(after) == 2)
            #expect(try storage.count(Event.filter(\.at <= exact)) == 1)
            #expect(try storage.read(Event.filter(\.at < close)).map(\.id) == [1])
            #expect(try storage.read(Event.filter(.between(\.at, exact ..< close))).map(\.id) == [1])
            #expect(try storage.read(Event.filter(#Predicate { $0.at > exact })).map(\.id) == [2, 3])
        }
    }

    @Test("isNil and isNotNil are answered by the index on the field")
    func nilThroughIndex() throws {
        let file = try ChoreFile()
        let storage = file.storage
        do {
            #expect(try storage.explain(Chore.filter(.isNil(\.due))).access == .indexPoints(index: "due", count: 1))
            #expect(try storage.explain(Chore.filter(.isNotNil(\.due))).access == .indexRange(index: "due"))
            let nils: [Int64] = Self.chores.filter { (task: Chore) -> Bool in task.due == nil }.map(\.id)
            #expect(try storage.read(Chore.filter(.isNil(\.due))).map(\.id) == nils)
            #expect(try storage.count(Chore.filter(.isNotNil(\.due))) == Self.chores.count - nils.count)
        }
    }

    @Test("comparing an optional field uses its index and never matches nil")
    func optionalComparison() throws {
        let file = try ChoreFile()
        let storage = file.storage
        do {
            let overdue = Chore.filter(\.due < Self.now)
            #expect(try storage.explain(overdue).access == .indexRange(index: "due"))
            let expected: [Int64] = Self.chores.filter { (task: Chore) -> Bool in
                guard let due = task.due else { return false }
                return due < Self.now
            }.map(\.id)
            #expect(try storage.read(overdue).map(\.id) == expected)
            #expect(try storage.count(overdue) == expected.count)
        }
    }

    @Test("sorting by an optional indexed field with a limit walks the index, nil first")
    func sortedByOptional() throws {
        let file = try ChoreFile()
        let storage = file.storage
        do {
            let firstFive = Chore.query().sorted(by: \.due).limit(5)
            #expect(try storage.explain(firstFive).access == .indexOrder(index: "due", descending: false))
            #expect(try storage.read(firstFive).map(\.due) == [nil, nil, nil, nil, nil])
            let latest = try storage.read(Chore.query().sorted(by: \.due, ascending: false).limit(1))
            #expect(latest.first?.id == 40)
        }
    }
}

/// Compound indexes used beyond their first field, reads in index order, bounded top-k and
/// the choice by estimated rows.
@Suite("Query planner: compound indexes, order, top-k and cost")
struct PlannerCostTests {
    let people = (0 ..< 300).map(Person.sample)

    @Test("equality on a compound index's first field and a range on the next read one key range, no filter")
    func compoundPrefixAndRange() throws {
        try withStorage { s in
            let query = Person.filter(\.city == "Oslo" && \.age >= 30 && \.age < 40)
            let plan = try s.explain(query)
            #expect(plan.access == .indexRange(index: "city+age") && !plan.residualFilter, "\(plan)")
            #expect(plan.range == "[(\"Oslo\", 30) … (\"Oslo\", 40))", "\(plan)")
            #expect(try s.read(query).map(\.id) == people.filter { $0.city == "Oslo" && (30 ..< 40).contains($0.age) }.map(\.id))
            #expect(try s.count(query) == people.filter { $0.city == "Oslo" && (30 ..< 40).contains($0.age) }.count)
        }
    }

    @Test("a page of one compound prefix in the next field's order reads only the page, in either direction")
    func compoundPrefixInOrder() throws {
        try withStorage { s in
            for ascending in [true, false] {
                let page = Person.filter(\.city == "Lima").sorted(by: \.age, ascending: ascending).offset(3).limit(5)
                let plan = try s.explain(page)
                #expect(plan.access == .indexPoints(index: "city+age", count: 1) && !plan.sortsInMemory && plan.stopsAfter == 8, "\(plan)")
                #expect(plan.estimatedRows == 8, "a limited read in order reads only the rows it needs: \(plan)")
                let expected = people.filter { $0.city == "Lima" }
                    .sorted { ascending ? ($0.age, $0.id) < ($1.age, $1.id) : $0.age > $1.age || $0.age == $1.age && $0.id < $1.id }
                #expect(try s.read(page).map(\.id) == expected.dropFirst(3).prefix(5).map(\.id))
            }
        }
    }

    @Test("IN on a compound index's first field, sorted by it, reads its ranges in order")
    func compoundInListInOrder() throws {
        try withStorage { s in
            let query = Person.filter(.in(\.city, ["Oslo", "Kyiv"]) && \.age > 70).sorted(by: \.city, ascending: false).limit(4)
            let plan = try s.explain(query)
            #expect(plan.access == .indexRange(index: "city+age") && !plan.residualFilter, "\(plan)")
            let expected = people.filter { ["Oslo", "Kyiv"].contains($0.city) && $0.age > 70 }
                .sorted { $0.city > $1.city || $0.city == $1.city && $0.id < $1.id }
            // Sorted by city only: equal cities come in primary-key order, which the index
            // (city, age) does not give, so these are sorted after reading.
            #expect(try s.read(query).map(\.id) == expected.prefix(4).map(\.id))
        }
    }

    @Test("a sort with a limit and no index for it keeps only the top rows while reading")
    func boundedTopK() throws {
        try withStorage(2000) { s in
            let all = (0 ..< 2000).map(Person.sample)
            let query = Person.query().sorted(by: \.score, ascending: false).sorted(by: \.name).offset(10).limit(50)
            let plan = try s.explain(query)
            #expect(plan.access == .fullScan && plan.sortsInMemory && plan.keepsTop == 60, "\(plan)")
            let expected = all.sorted { ($1.score, $0.name, $0.id) < ($0.score, $1.name, $1.id) }
            #expect(try s.read(query).map(\.id) == expected.dropFirst(10).prefix(50).map(\.id))
            #expect(try s.read(Person.filter(\.city == "Oslo").sorted(by: \.score).limit(7)).map(\.id)
                == all.filter { $0.city == "Oslo" }.sorted { ($0.score, $0.id) < ($1.score, $1.id) }.prefix(7).map(\.id))
        }
    }

    @Test("between competing indexes the planner takes the one that reads fewer rows, and explain lists the others")
    func costChoosesBetweenIndexes() throws {
        try withStorage(2000) { s in
            let all = (0 ..< 2000).map(Person.sample)
            // city == "Oslo" matches 500 records; age == 25 about 33.
            let query = Person.filter(\.city == "Oslo" && \.age == 25)
            let plan = try s.explain(query)
            #expect(plan.access == .indexPoints(index: "city+age", count: 1) && !plan.residualFilter, "both fields in one key: \(plan)")
            let narrower = Person.filter(\.name == "p3" && \.age == 25 && \.city != "Lima")
            #expect(try s.explain(narrower).access == .indexPoints(index: "age", count: 1))
            let competing = Person.filter(.hasPrefix(\.city, "O") && \.age == 25)
            let chosen = try s.explain(competing)
            #expect(chosen.access == .indexPoints(index: "age", count: 1), "\(chosen)")
            #expect(chosen.estimatedRows == all.filter { $0.age == 25 }.count)
            #expect(chosen.alternatives.contains { $0.access == .indexRange(index: "city+age") && $0.estimatedRows > chosen.estimatedRows! }, "\(chosen)")
            #expect(chosen.description.contains("considered: "), "\(chosen)")
            #expect(try s.read(competing).map(\.id) == all.filter { $0.city.hasPrefix("O") && $0.age == 25 }.map(\.id))
        }
    }

    @Test("a condition most records meet is read by a full scan, not through its index")
    func wideRangeScans() throws {
        try withStorage(2000) { s in
            let all = (0 ..< 2000).map(Person.sample)
            let query = Person.filter(\.age > 20)
            let plan = try s.explain(query)
            #expect(plan.access == .fullScan, "\(plan)")
            #expect(plan.alternatives.contains { $0.access == .indexRange(index: "age") }, "\(plan)")
            #expect(try s.read(query).map(\.id) == all.filter { $0.age > 20 }.map(\.id))
        }
    }
}
