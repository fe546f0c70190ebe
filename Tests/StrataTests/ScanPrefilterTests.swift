import Foundation
import Strata
import Testing

/// Full scans check numeric and Boolean conditions on a record's stored bytes before
/// decoding it. These tests pin down that the shortcut never changes an answer.
@Suite("Scan prefilter: conditions checked before decoding")
struct ScanPrefilterTests {
    func withFile(_ body: (String) throws -> Void) throws {
        let path = NSTemporaryDirectory() + "strata-prefilter-" + UUID().uuidString + ".strata"
        defer { try? FileManager.default.removeItem(atPath: path) }
        try body(path)
    }

    struct Reading: Model, Equatable {
        var id: Int64
        var level: Int
        var ratio: Double
        var alert: Bool
        static let collectionName = "readings"
        static let schema = Schema<Reading>(primaryKey: \.id)
    }

    @Test("ranges, points and Booleans on unindexed fields return exactly the matching records")
    func conditionsMatchTheArrayAnswer() throws {
        try withFile { path in
            let storage = try StrataStorage(path: path)
            let all = (0 ..< 500).map { (i: Int) -> Reading in
                Reading(id: Int64(i), level: i % 37 - 18, ratio: Double(i % 11) / 4, alert: i % 3 == 0)
            }
            try storage.persist(all)
            #expect(try storage.read(Reading.filter(.between(\.level, -5 ... 5))) == all.filter { (-5 ... 5).contains($0.level) })
            #expect(try storage.read(Reading.filter(\.level == -18)) == all.filter { $0.level == -18 })
            #expect(try storage.read(Reading.filter(\.ratio > 1.5 && \.alert == true)) == all.filter { $0.ratio > 1.5 && $0.alert })
            #expect(try storage.read(Reading.filter(.in(\.level, [0, 7, 100]))) == all.filter { [0, 7, 100].contains($0.level) })
            #expect(try storage.count(Reading.filter(\.alert == false && \.level < 0)) == all.filter { !$0.alert && $0.level < 0 }.count)
            try storage.close()
        }
    }

    struct ReadingV1: Model {
        var id: Int64
        var count: UInt32
        static let collectionName = "evolving"
        static let schema = Schema<ReadingV1>(primaryKey: \.id)
    }

    struct ReadingV2: Model, Equatable {
        var id: Int64
        var count: Int
        var level: Int
        static let collectionName = "evolving"
        static let schema = Schema<ReadingV2>(primaryKey: \.id)
    }

    @Test("a field older records lack still matches its zero value")
    func absentFieldMatchesZero() throws {
        try withFile { path in
            let storage = try StrataStorage(path: path)
            try storage.persist([ReadingV1(id: 1, count: 5)])
            try storage.persist([ReadingV2(id: 2, count: 6, level: 3)])
            #expect(try storage.read(ReadingV2.filter(\.level == 0)).map(\.id) == [1])
            try storage.close()
        }
    }

    @Test("a field stored unsigned is found by a signed condition")
    func signednessChangeStillMatches() throws {
        try withFile { path in
            let storage = try StrataStorage(path: path)
            try storage.persist([ReadingV1(id: 1, count: 5), ReadingV1(id: 2, count: 50)])
            #expect(try storage.read(ReadingV2.filter(.between(\.count, 1 ... 10))).map(\.id) == [1])
            try storage.close()
        }
    }

    /// Two properties stored under each other's names: the prefilter must not trust names.
    struct Swapped: Model, Equatable {
        var id: Int64
        var small: Int
        var large: Int
        enum CodingKeys: String, CodingKey {
            case id, small = "large", large = "small"
        }
        static let collectionName = "swapped"
        static let schema = Schema<Swapped>(primaryKey: \.id)
    }

    @Test("a property stored under another property's name is checked after decoding")
    func codingKeysThatDisagreeWithPropertyNames() throws {
        try withFile { path in
            let storage = try StrataStorage(path: path)
            let all = (0 ..< 20).map { Swapped(id: Int64($0), small: $0, large: 1_000 + $0) }
            try storage.persist(all)
            #expect(try storage.read(Swapped.filter(\.small < 5)).map(\.id) == [0, 1, 2, 3, 4])
            #expect(try storage.read(Swapped.filter(\.large >= 1_015)).map(\.id) == [15, 16, 17, 18, 19])
            try storage.close()
        }
    }

    /// A model that declares its fields: its conditions are checked on the bytes on every
    /// path, and a count whose conditions the bytes decide decodes nothing.
    struct Chore: Model, Equatable {
        var id: Int64
        var priority: Int
        var done: Bool
        static let collectionName = "chores"
        static let schema = Schema<Chore>(primaryKey: \.id, indexes: [.index(\.priority)])
        static let storedFields: [StoredField<Chore>] = [.field(\.id), .field(\.priority), .field(\.done)]
    }

    /// The same collection before `done` existed.
    struct ChoreV1: Model {
        var id: Int64
        var priority: Int
        static let collectionName = "chores"
        static let schema = Schema<ChoreV1>(primaryKey: \.id, indexes: [.index(\.priority)])
    }

    @Test("through an index, residual conditions are checked on the bytes; counts give the array's answer, older records included")
    func indexPathsAndCountsOnBytes() throws {
        try withFile { path in
            let storage = try StrataStorage(path: path)
            try storage.persist((1000 ..< 1010).map { ChoreV1(id: Int64($0), priority: $0 % 3) })
            let chores = (0 ..< 2000).map { Chore(id: Int64($0), priority: $0 % 10, done: $0 % 3 == 0) }
            try storage.persist(chores)
            let all = try storage.readAll(Chore.self)
            #expect(all.count == 2000 && all.filter { $0.id >= 1000 && $0.id < 1010 }.allSatisfy { $0.done == (($0.id % 3) == 0) })
            // Records 1000..<1010 were rewritten by the second persist; add older ones again.
            try storage.persist((5000 ..< 5010).map { ChoreV1(id: Int64($0), priority: $0 % 3) })
            let every = try storage.readAll(Chore.self)
            for priority in [0, 1, 4] {
                for done in [false, true] {
                    let query = Chore.filter(\.priority == priority && \.done == done)
                    #expect(try storage.explain(query).residualFilter)
                    let expected = every.filter { $0.priority == priority && $0.done == done }
                    #expect(try storage.read(query) == expected)
                    #expect(try storage.count(query) == expected.count, "priority \(priority), done \(done)")
                }
            }
            try storage.close()
        }
    }

    /// Declared fields and no index: sorts on them are done while reading.
    struct Ranked: Model, Equatable {
        var id: Int64
        var priority: Int
        var done: Bool
        static let collectionName = "ranked"
        static let schema = Schema<Ranked>(primaryKey: \.id)
        static let storedFields: [StoredField<Ranked>] = [.field(\.id), .field(\.priority), .field(\.done)]
    }

    struct RankedV1: Model {
        var id: Int64
        var priority: Int
        static let collectionName = "ranked"
        static let schema = Schema<RankedV1>(primaryKey: \.id)
    }

    @Test("a sort with a limit on declared integer and Boolean fields keeps the best rows by their bytes: the array's answer, older records included")
    func topRowsByBytes() throws {
        try withFile { path in
            let storage = try StrataStorage(path: path)
            let chores = (0 ..< 3000).map { Ranked(id: Int64($0), priority: ($0 * 7919) % 1000 - 500, done: $0 % 3 == 0) }
            try storage.persist(chores)
            func expect(_ query: Query<Ranked>, _ expected: [Ranked], _ comment: Comment) throws {
                let plan = try storage.explain(query)
                #expect(plan.sortsInMemory && plan.keepsTop != nil, "\(plan)")
                #expect(try storage.read(query) == expected, comment)
            }
            let byPriority = { (a: Ranked, b: Ranked) in a.priority > b.priority || a.priority == b.priority && a.id < b.id }
            try expect(Ranked.query().sorted(by: \.priority, ascending: false).offset(5).limit(20),
                       Array(chores.sorted(by: byPriority).dropFirst(5).prefix(20)), "descending integer, ties by id")
            try expect(Ranked.query().sorted(by: \.priority).sorted(by: \.id, ascending: false).limit(30),
                       Array(chores.sorted { $0.priority < $1.priority || $0.priority == $1.priority && $0.id > $1.id }.prefix(30)), "two keys, two directions")
            try expect(Ranked.filter(\.done == true && \.priority < 0).sorted(by: \.priority, ascending: false).limit(10),
                       Array(chores.filter { $0.done && $0.priority < 0 }.sorted(by: byPriority).prefix(10)), "conditions decided on the bytes")
            // Older records without `done`: their bytes leave the condition unsure, so the
            // query is answered by decoding, with the same result.
            try storage.persist((9000 ..< 9010).map { RankedV1(id: Int64($0), priority: 600 + $0 % 3) })
            let every = try storage.readAll(Ranked.self)
            try expect(Ranked.filter(\.done == false).sorted(by: \.priority, ascending: false).limit(12),
                       Array(every.filter { !$0.done }.sorted(by: byPriority).prefix(12)), "unsure records fall back to decoding")
            try storage.close()
        }
    }

    struct Labelled: Model, Equatable {
        var id: Int64
        var label: String
        static let collectionName = "labelled"
        static let schema = Schema<Labelled>(primaryKey: \.id)
        static let storedFields: [StoredField<Labelled>] = [.field(\.id), .field(\.label)]
    }

    @Test("string conditions are checked on the bytes of ASCII text and after decoding other text: the array's answer")
    func stringConditionsOnBytes() throws {
        try withFile { path in
            let storage = try StrataStorage(path: path)
            let labels = ["urgent", "work", "home", "Zoë", "Zoe", "zoë", "e\u{301}clair", "éclair", "a\u{0}b", "", "urgent-ish", "URGENT"]
            let all = (0 ..< 600).map { Labelled(id: Int64($0), label: labels[$0 % labels.count]) }
            try storage.persist(all)
            for label in labels {
                #expect(try storage.read(Labelled.filter(\.label == label)) == all.filter { $0.label == label }, "== \(label)")
                #expect(try storage.count(Labelled.filter(\.label == label)) == all.filter { $0.label == label }.count, "count == \(label)")
            }
            #expect(try storage.read(Labelled.filter(.hasPrefix(\.label, "urg"))) == all.filter { $0.label.hasPrefix("urg") })
            #expect(try storage.count(Labelled.filter(\.label > "work")) == all.filter { $0.label > "work" }.count)
            #expect(try storage.read(Labelled.filter(.in(\.label, ["home", "éclair"]))) == all.filter { ["home", "éclair"].contains($0.label) })
            try storage.close()
        }
    }

    /// Counts its decodings, so a test can tell which records a scan decoded.
    struct Tagged: Model, Equatable {
        var id: Int64
        var tags: [String]
        var scores: [Int]
        static let collectionName = "tagged"
        static let schema = Schema<Tagged>(primaryKey: \.id)
        static let storedFields: [StoredField<Tagged>] = [.field(\.id), .field(\.tags), .field(\.scores)]
        nonisolated(unsafe) static var decodings = 0

        init(id: Int64, tags: [String], scores: [Int]) { (self.id, self.tags, self.scores) = (id, tags, scores) }

        enum CodingKeys: CodingKey { case id, tags, scores }
        init(from decoder: any Decoder) throws {
            Self.decodings += 1
            let container = try decoder.container(keyedBy: CodingKeys.self)
            (id, tags, scores) = (try container.decode(Int64.self, forKey: .id), try container.decode([String].self, forKey: .tags),
                                  try container.decode([Int].self, forKey: .scores))
        }
    }

    @Test("an array field holding a value is checked on the bytes: only the records that hold it (or hold non-ASCII text) are decoded, and a count decodes none it can tell")
    func arrayElementConditionsOnBytes() throws {
        try withFile { path in
            let storage = try StrataStorage(path: path)
            let vocabulary = ["swift", "rust", "go", "zig", "éclair", "swiftly"]
            func record(_ i: Int) -> Tagged {
                let tags: [String] = (0 ..< i % 4).map { vocabulary[(i + $0 * 5) % vocabulary.count] }
                let scores: [Int] = (0 ..< i % 3).map { i * 7 % 50 + $0 }
                return Tagged(id: Int64(i), tags: tags, scores: scores)
            }
            let all = (0 ..< 400).map(record)
            try storage.persist(all)
            for tag in vocabulary {
                Tagged.decodings = 0
                let expected = all.filter { $0.tags.contains(tag) }
                #expect(try storage.read(Tagged.filter(.contains(\.tags, tag))) == expected, "contains \(tag)")
                let unsure = all.filter { !$0.tags.contains(tag) && $0.tags.contains("éclair") }.count
                #expect(Tagged.decodings == expected.count + unsure, "decoded for \(tag)")
                // The bytes decide the condition, so a count decodes only the records they leave unsure.
                Tagged.decodings = 0
                #expect(try storage.count(Tagged.filter(.contains(\.tags, tag))) == expected.count, "count of \(tag)")
                #expect(Tagged.decodings == unsure, "decoded to count \(tag)")
                #expect(try storage.read(Tagged.filter(#Predicate { $0.tags.contains(tag) })) == expected, "#Predicate contains \(tag)")
            }
            #expect(try storage.read(Tagged.filter(.contains(\.scores, 21))) == all.filter { $0.scores.contains(21) })
            #expect(try storage.count(Tagged.filter(.contains(\.tags, "go") && .contains(\.scores, 8))) == all.filter { $0.tags.contains("go") && $0.scores.contains(8) }.count)
            #expect(try storage.explain(Tagged.filter(.contains(\.tags, "go"))).access == .fullScan)
            try storage.close()
        }
    }

    /// Every kind the byte check compares: signed and unsigned integers, doubles, floats
    /// (compared as doubles), Booleans, an optional, dates (with sub-second parts that the
    /// conversion to 1970-based seconds rounds) and UUIDs.
    struct Sample: Model, Equatable {
        var id: Int64
        var level: Int
        var count: UInt64
        var ratio: Double
        var small: Float
        var flag: Bool
        var maybe: Int?
        var due: Date
        var owner: UUID
        static let collectionName = "samples"
        static let schema = Schema<Sample>(primaryKey: \.id)
        static let storedFields: [StoredField<Sample>] = [
            .field(\.id), .field(\.level), .field(\.count), .field(\.ratio), .field(\.small), .field(\.flag), .field(\.maybe),
            .field(\.due), .field(\.owner),
        ]
    }

    static let owners = (0 ..< 4).map { UUID(uuidString: "00000000-0000-0000-0000-00000000000\($0)")! }
    static func due(_ i: Int) -> Date { Date(timeIntervalSinceReferenceDate: 700_000_000 + Double(i % 17) * 0.3 + 1e-7 * Double(i % 3)) }

    @Test("every comparison on every kind the bytes are checked for, at and around each bound, gives the array's answer in reads and counts")
    func compiledComparisonsMatchTheArrayAnswer() throws {
        try withFile { path in
            let storage = try StrataStorage(path: path)
            let samples = (0 ..< 300).map { (i: Int) -> Sample in
                Sample(id: Int64(i), level: i % 21 - 10, count: UInt64(i % 13) * 1_000_000_007, ratio: Double(i % 9) / 2 - 2,
                       small: Float(i % 7) / 4, flag: i % 4 == 0, maybe: i % 5 == 0 ? nil : i % 6 - 3,
                       due: Self.due(i), owner: Self.owners[i % 4])
            }
            try storage.persist(samples)
            func check(_ filter: Filter<Sample>, _ expected: (Sample) -> Bool, _ label: String) throws {
                let query = Sample.filter(filter)
                #expect(try storage.explain(query).access == .fullScan)
                #expect(try storage.read(query) == samples.filter(expected), "\(label)")
                #expect(try storage.count(query) == samples.filter(expected).count, "\(label) (count)")
            }
            // Int.min and Int.max: bounds whose ranges are empty or reach the ends of the key space.
            for v in [Int.min, -11, -10, -1, 0, 3, 10, 11, Int.max] {
                try check(\.level == v, { $0.level == v }, "level == \(v)")
                try check(\.level < v, { $0.level < v }, "level < \(v)")
                try check(\.level <= v, { $0.level <= v }, "level <= \(v)")
                try check(\.level > v, { $0.level > v }, "level > \(v)")
                try check(\.level >= v, { $0.level >= v }, "level >= \(v)")
                try check(\.maybe <= v, { $0.maybe.map { $0 <= v } ?? false }, "maybe <= \(v)")
                try check(\.maybe > v, { $0.maybe.map { $0 > v } ?? false }, "maybe > \(v)")
            }
            for v: UInt64 in [0, 1_000_000_007, 5_000_000_035, UInt64.max] {
                try check(\.count <= v, { $0.count <= v }, "count <= \(v)")
                try check(\.count > v, { $0.count > v }, "count > \(v)")
            }
            for v in [-2.5, -2.0, 0.0, 1.5, 2.0] {
                try check(\.ratio < v, { $0.ratio < v }, "ratio < \(v)")
                try check(\.ratio >= v, { $0.ratio >= v }, "ratio >= \(v)")
            }
            for v in [0.0, 0.5, 1.5] {
                try check(\.small <= Float(v), { $0.small <= Float(v) }, "small <= \(v)")
            }
            for i in [0, 1, 5, 16, 17] {
                let date = Self.due(i)
                try check(\.due < date, { $0.due < date }, "due < \(date.timeIntervalSinceReferenceDate)")
                try check(\.due <= date, { $0.due <= date }, "due <= \(date.timeIntervalSinceReferenceDate)")
                try check(\.due == date, { $0.due == date }, "due == \(date.timeIntervalSinceReferenceDate)")
                try check(\.due > date, { $0.due > date }, "due > \(date.timeIntervalSinceReferenceDate)")
            }
            for owner in Self.owners + [UUID()] {
                try check(\.owner == owner, { $0.owner == owner }, "owner == \(owner)")
            }
            try check(.in(\.owner, [Self.owners[1], Self.owners[3]]), { [Self.owners[1], Self.owners[3]].contains($0.owner) }, "owner IN")
            try check(\.flag == true, { $0.flag }, "flag")
            try check(\.flag == false, { !$0.flag }, "!flag")
            try check(.between(\.level, -3 ... 4), { (-3 ... 4).contains($0.level) }, "level in -3...4")
            try check(.between(\.level, -3 ..< 4), { (-3 ..< 4).contains($0.level) }, "level in -3..<4")
            try check(.between(\.level, 4 ..< 4), { _ in false }, "level in 4..<4 (empty)")
            try check(.between(\.ratio, -1.0 ... 1.0), { (-1.0 ... 1.0).contains($0.ratio) }, "ratio in -1...1")
            try check(.in(\.level, [-10, 0, 7, 99]), { [-10, 0, 7, 99].contains($0.level) }, "level IN")
            try check(.in(\.count, [0, 2_000_000_014]), { [0, 2_000_000_014].contains($0.count) }, "count IN")
            try check(\.level > -5 && \.flag == false && \.ratio <= 0.5, { $0.level > -5 && !$0.flag && $0.ratio <= 0.5 }, "three fields")
            try storage.close()
        }
    }

    /// A declared model whose records can differ in layout: an optional that may be absent,
    /// a string that may need a two-byte length, an integer that may need a long varint.
    struct Visit: Model, Equatable {
        var id: Int64
        var note: String?
        var host: String
        var hits: Int
        var weight: Double
        var labels: [String]
        var starred: Bool
        static let collectionName = "visits"
        static let schema = Schema<Visit>(primaryKey: \.id)
        static let storedFields: [StoredField<Visit>] = [
            .field(\.id), .field(\.note), .field(\.host), .field(\.hits), .field(\.weight), .field(\.labels), .field(\.starred),
        ]
    }

    static let labels = ["red", "green", "blue", "teal"]

    /// `count` visits from id 1, one in `every` laid out unlike the others, in turn without
    /// its note, with a host of 130+ bytes, with a hit count of eight varint bytes, and
    /// with non-ASCII text (in its host and among its labels).
    static func visits(count: Int, oddOneIn every: Int) -> [Visit] {
        (1 ... count).map { i in
            let odd = i % every == 0 ? (i / every) % 4 : -1
            let labels = (0 ..< i % 4).map { Self.labels[(i + $0) % Self.labels.count] } + (odd == 3 ? ["grün"] : [])
            return Visit(id: Int64(i), note: odd == 0 ? nil : "n\(i)",
                         host: odd == 1 ? String(repeating: "h", count: 130 + i % 5) : odd == 3 ? "hôte-\(i)" : "h\(i % 50)",
                         hits: odd == 2 ? (i % 2 == 0 ? 1 : -1) * (1 << 50 + i) : i % 40, weight: Double(i % 9) / 3,
                         labels: labels, starred: i % 7 == 0)
        }
    }

    /// Reads and counts of conditions on `hits`, `weight` and `starred` (after three, four
    /// and five other fields: integers, text and a Double stepped over), as the array
    /// answers them.
    func expectArrayAnswers(_ visits: [Visit], in storage: StrataStorage) throws {
        func check(_ filter: Filter<Visit>, _ expected: (Visit) -> Bool, _ label: String) throws {
            let query = Visit.filter(filter)
            #expect(try storage.explain(query).access == .fullScan)
            #expect(try storage.read(query) == visits.filter(expected), "\(label)")
            #expect(try storage.count(query) == visits.filter(expected).count, "\(label) (count)")
        }
        try check(.between(\.hits, 10 ... 20), { (10 ... 20).contains($0.hits) }, "hits in 10...20")
        try check(\.hits > 1 << 49, { $0.hits > 1 << 49 }, "hits > 2^49")
        try check(\.hits < 0, { $0.hits < 0 }, "hits < 0")
        try check(\.weight >= 2.0, { $0.weight >= 2.0 }, "weight >= 2")
        try check(\.hits <= 5 && \.weight < 1.0, { $0.hits <= 5 && $0.weight < 1.0 }, "hits <= 5 and weight < 1")
        try check(\.starred == true, { $0.starred }, "starred")
        try check(\.hits >= 20 && \.starred == false, { $0.hits >= 20 && !$0.starred }, "hits >= 20 and not starred")
        // String equality: on text stepped over by length, and on an array's elements.
        try check(\.host == "h7", { $0.host == "h7" }, "host == h7")
        try check(.in(\.host, ["h7", "h12", "hôte-36"]), { ["h7", "h12", "hôte-36"].contains($0.host) }, "host IN")
        try check(\.host == "h7" && \.starred == true, { $0.host == "h7" && $0.starred }, "host == h7 and starred")
        for label in Self.labels + ["grün", "gold"] {
            try check(.contains(\.labels, label), { $0.labels.contains(label) }, "labels contain \(label)")
        }
        try check(\.hits < 20 && .contains(\.labels, "blue"), { $0.hits < 20 && $0.labels.contains("blue") }, "hits < 20 and labels contain blue")
        // The array comes before `starred`: its condition is not the layout's last.
        try check(.contains(\.labels, "teal") && \.starred == true, { $0.labels.contains("teal") && $0.starred }, "labels contain teal and starred")
    }

    /// With one record in 9 laid out otherwise, the layout learned from the first record
    /// serves most of the scan; with every record odd (the first has a long host), the scan
    /// gives that layout up and walks each record.
    @Test("a scan decides each record by its own bytes, whatever the first record's layout and however often records differ from it",
          arguments: [9, 1])
    func recordsUnlikeTheFirstAreDecidedByTheirBytes(oddOneIn every: Int) throws {
        try withFile { path in
            let storage = try StrataStorage(path: path)
            let visits = Self.visits(count: 600, oddOneIn: every)
            try storage.persist(visits)
            try expectArrayAnswers(visits, in: storage)
            try storage.close()
        }
    }
}
