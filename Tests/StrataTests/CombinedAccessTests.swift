import Foundation
import Strata
import Testing

/// A model with an index on each of three fields, for conditions no one index answers.
struct Ticket: Model, Equatable {
    var id: Int64
    var done: Bool
    var priority: Int
    var owner: Int
    var title: String
    var assignee: Int?

    static let collectionName = "tickets"
    static let schema = Schema<Ticket>(primaryKey: \.id, indexes: [.index(\.done), .index(\.priority), .index(\.owner), .index(\.assignee)])

    /// A quarter are done, a fifth have each priority, a tenth each owner; all but one in
    /// twenty are assigned to 3 (one in forty to nobody, one in forty to 7).
    static func sample(_ i: Int) -> Ticket {
        Ticket(id: Int64(i), done: i % 4 == 0, priority: i % 5, owner: (i * 7) % 10, title: "ticket \(i)",
               assignee: i % 40 == 1 ? nil : i % 40 == 2 ? 7 : 3)
    }
}

/// A model keyed by text of many lengths: keys that are prefixes of others, and keys that
/// agree on their first eight bytes or more and differ after.
struct Slugged: Model, Equatable {
    var slug: String
    var color: Int
    var size: Int

    static let collectionName = "slugged"
    static let schema = Schema<Slugged>(primaryKey: \.slug, indexes: [.index(\.color), .index(\.size)])

    static func sample(_ i: Int) -> Slugged {
        let stems = ["a", "ab", "abcdefghij", "abcdefghijk", "abcdefgh", "b", "zz"]
        let slug = stems[i % stems.count] + (i % 3 == 0 ? "" : String(repeating: "x", count: i % 11)) + "\(i)"
        return Slugged(slug: slug, color: i % 20, size: i % 25)
    }
}

@Suite("Query planner: unions and intersections")
struct CombinedAccessTests {
    static let count = 4000
    let tickets = (0 ..< CombinedAccessTests.count).map(Ticket.sample)
    let people = (0 ..< 2000).map(Person.sample)

    func withTickets(_ body: (StrataStorage) throws -> Void) throws {
        try withStorage(holding: tickets, body)
    }

    @Test("an OR across fields reads the union of each branch's access, in primary-key order, each record once")
    func unionAcrossFields() throws {
        try withStorage(2000) { s throws in
            // Record 3 meets both branches: it is read once.
            let query = Person.filter(\.id == 3 || \.age == Person.sample(3).age)
            let plan = try s.explain(query)
            #expect(plan.access == .union([.primaryKeyPoints(count: 1), .indexPoints(index: "age", count: 1)]) && plan.residualFilter, "\(plan)")
            let expected = people.filter { $0.id == 3 || $0.age == Person.sample(3).age }
            #expect(try s.read(query).map(\.id) == expected.map(\.id))
            #expect(try s.count(query) == expected.count)
            #expect(plan.estimatedRows == 1 + people.filter { $0.age == Person.sample(3).age }.count, "keys read, record 3's twice: \(plan)")
        }
    }

    @Test("keys of many lengths and long shared beginnings, gathered from two indexes, are read in primary-key order, each record once")
    func textKeysFromTwoIndexes() throws {
        let all = (0 ..< 700).map(Slugged.sample)
        func inKeyOrder(_ models: [Slugged]) -> [String] {
            models.map(\.slug).sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        }
        try withStorage(holding: all) { s throws in
            let union = Slugged.filter(\.color == 1 || \.size == 2)
            #expect(try s.explain(union).access == .union([.indexPoints(index: "color", count: 1), .indexPoints(index: "size", count: 1)]))
            #expect(try s.read(union).map(\.slug) == inKeyOrder(all.filter { $0.color == 1 || $0.size == 2 }))
            #expect(try s.count(union) == all.filter { $0.color == 1 || $0.size == 2 }.count)
            let both = Slugged.filter(\.color == 2 && \.size == 1)
            #expect(try s.read(both).map(\.slug) == inKeyOrder(all.filter { $0.color == 2 && $0.size == 1 }))
        }
    }

    @Test("a #Predicate OR across fields is a union, and its residual conditions still apply")
    func unionFromPredicate() throws {
        try withStorage(2000) { s throws in
            let predicate = #Predicate<Person> { person in
                person.email == "p42@example.com" || (person.age == 20 && person.score > 5)
            }
            let query = Person.filter(predicate)
            let plan = try s.explain(query)
            #expect(plan.access == .union([.indexPoints(index: "email", count: 1), .indexPoints(index: "age", count: 1)]), "\(plan)")
            let expected = people.filter { $0.email == "p42@example.com" || ($0.age == 20 && $0.score > 5) }
            #expect(try s.read(query).map(\.id) == expected.map(\.id))
            #expect(try s.count(query) == expected.count)
        }
    }

    @Test("a union sorted with a limit keeps the top rows; with an offset it pages")
    func unionSortedAndPaged() throws {
        try withStorage(2000) { s throws in
            let query = Person.filter(\.age == 19 || \.email == "p7@example.com").sorted(by: \.score, ascending: false).offset(3).limit(5)
            let plan = try s.explain(query)
            #expect(plan.sortsInMemory && plan.keepsTop == 8, "\(plan)")
            let expected = people.filter { $0.age == 19 || $0.email == "p7@example.com" }.sorted { ($1.score, $0.id) < ($0.score, $1.id) }
            #expect(try s.read(query).map(\.id) == expected.dropFirst(3).prefix(5).map(\.id))
            let page = try s.read(Person.filter(\.age == 19 || \.email == "p7@example.com").offset(4).limit(3)).map(\.id)
            #expect(page == people.filter { $0.age == 19 || $0.email == "p7@example.com" }.dropFirst(4).prefix(3).map(\.id))
        }
    }

    @Test("an OR with a branch no tree narrows is read by a full scan")
    func unionNeedsEveryBranch() throws {
        try withStorage(2000) { s throws in
            let query = Person.filter(\.id == 3 || \.score > 9)
            let plan = try s.explain(query)
            #expect(plan.access == .fullScan && plan.residualFilter, "\(plan)")
            #expect(try s.read(query).map(\.id) == people.filter { $0.id == 3 || $0.score > 9 }.map(\.id))
        }
    }

    @Test("an OR whose every branch contradicts itself reads nothing")
    func unionOfContradictions() throws {
        try withStorage(2000) { s throws in
            let query = Person.filter((\.id == 3 && \.id == 4) || (\.age > 70 && \.age < 30))
            #expect(try s.explain(query).access == .union([]))
            #expect(try s.read(query).isEmpty)
            #expect(try s.count(query) == 0)
        }
    }

    @Test("an OR AND-ed with other conditions: the cheaper of the union and the other conditions' access")
    func unionBesideConditions() throws {
        try withStorage(2000) { s throws in
            let narrow = Person.filter(\.email == "p11@example.com" && (\.age == 20 || \.age > 70))
            #expect(try s.explain(narrow).access == .indexPoints(index: "email", count: 1))
            let wide = Person.filter(.hasPrefix(\.name, "p1") && (\.id == 5 || \.email == "p9@example.com"))
            #expect(try s.explain(wide).access == .union([.primaryKeyPoints(count: 1), .indexPoints(index: "email", count: 1)]))
            #expect(try s.read(narrow).map(\.id) == people.filter { $0.id == 11 && ($0.age == 20 || $0.age > 70) }.map(\.id))
            #expect(try s.read(wide).map(\.id) == people.filter { $0.name.hasPrefix("p1") && ($0.id == 5 || $0.id == 9) }.map(\.id))
        }
    }

    @Test("equalities on two indexed fields, each wide, read the primary keys both indexes hold")
    func intersectionOfIndexes() throws {
        try withTickets { s throws in
            let query = Ticket.filter(\.done == true && \.priority == 4)
            let plan = try s.explain(query)
            #expect(plan.access == .intersection([.indexPoints(index: "priority", count: 1), .indexPoints(index: "done", count: 1)]), "\(plan)")
            #expect(!plan.residualFilter)
            let expected = tickets.filter { $0.done && $0.priority == 4 }
            #expect(plan.estimatedRows == expected.count, "independent fields: \(plan)")
            #expect(try s.read(query).map(\.id) == expected.map(\.id))
            #expect(try s.count(query) == expected.count)
            #expect(try s.count(query.offset(190)) == expected.count - 190)
        }
    }

    @Test("an intersection leaves the conditions its indexes do not answer to each record")
    func intersectionWithResidual() throws {
        try withTickets { s throws in
            let query = Ticket.filter(\.done == false && \.owner == 3 && \.priority == 2 && .contains(\.title, "7"))
            let plan = try s.explain(query)
            guard case .intersection(let parts) = plan.access else { Issue.record("\(plan)"); return }
            #expect(parts.count == 2 && plan.residualFilter, "\(plan)")
            let expected = tickets.filter { !$0.done && $0.owner == 3 && $0.priority == 2 && $0.title.contains("7") }
            #expect(try s.read(query).map(\.id) == expected.map(\.id))
            #expect(try s.count(query) == expected.count)
            #expect(try s.read(query.sorted(by: \.title, ascending: false).limit(2)).map(\.id)
                == expected.sorted { $0.title > $1.title }.prefix(2).map(\.id))
        }
    }

    @Test("!= on an indexed field few records differ from reads the keys below and above the value, nil included")
    func notEqualAsUnion() throws {
        try withTickets { s throws in
            let query = Ticket.filter(\.assignee != 3)
            let plan = try s.explain(query)
            #expect(plan.access == .union([.indexRange(index: "assignee"), .indexRange(index: "assignee")]), "\(plan)")
            let expected = tickets.filter { $0.assignee != 3 }
            #expect(expected.contains { $0.assignee == nil })
            #expect(try s.read(query).map(\.id) == expected.map(\.id))
            #expect(try s.count(query) == expected.count)
            let predicate = #Predicate<Ticket> { $0.assignee != 3 }
            #expect(try s.read(Ticket.filter(predicate)).map(\.id) == expected.map(\.id))
        }
    }

    @Test("!= that most records meet is read by a full scan")
    func wideNotEqualScans() throws {
        try withTickets { s throws in
            let query = Ticket.filter(\.priority != 0)
            #expect(try s.explain(query).access == .fullScan)
            #expect(try s.read(query).map(\.id) == tickets.filter { $0.priority != 0 }.map(\.id))
        }
    }

    @Test("random ORs, != and ANDs of indexed fields return what a plain array returns", arguments: [21, 22] as [UInt64])
    func randomCombinations(seed: UInt64) throws {
        var rng = SeededRandom(seed: seed)
        try withTickets { s throws in
            func condition() -> Filter<Ticket> {
                let v = Int.random(in: 0 ... 9, using: &rng)
                let all: [Filter<Ticket>] = [\.priority == v % 5, \.owner == v, \.done == (v % 2 == 0), \.assignee != 3, \.assignee != v,
                                             \.priority != v % 5, \.owner > v, \.id < Int64(v * 300), .isNil(\.assignee),
                                             .in(\.owner, [v, (v + 3) % 10]), .contains(\.title, "\(v)7")]
                return all.randomElement(using: &rng)!
            }
            func term(_ depth: Int) -> Filter<Ticket> {
                guard depth > 0, Bool.random(using: &rng) else { return condition() }
                return Bool.random(using: &rng) ? term(depth - 1) || term(depth - 1) : term(depth - 1) && term(depth - 1)
            }
            for _ in 0 ..< 150 {
                var query = Ticket.filter(term(3))
                if Bool.random(using: &rng) { query = query.filter(term(1)) }
                if Bool.random(using: &rng) { query = query.sorted(by: \.owner, ascending: Bool.random(using: &rng)) }
                if Bool.random(using: &rng) { query = query.limit(Int.random(in: 0 ... 40, using: &rng)) }
                if Bool.random(using: &rng) { query = query.offset(Int.random(in: 0 ... 40, using: &rng)) }
                // The oracle: every ticket checked, sorted (ties in primary-key order), windowed.
                var matching = try tickets.filter { try query.matches($0) }
                query.sort(&matching) { $0 }
                let expected = query.window(matching).map(\.id)
                let plan = try s.explain(query)
                #expect(try s.read(query).map(\.id) == expected, "\(plan)")
                #expect(try s.count(query) == expected.count, "\(plan)")
            }
        }
    }
}
