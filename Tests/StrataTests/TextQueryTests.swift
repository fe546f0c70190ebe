import Foundation
import Strata
import StrataEngine
import Testing

/// The text query language of `storedump find`, with hostile input.
@Suite("Text queries")
struct TextQueryTests {
    struct Item: Model, Equatable {
        var id: Int64
        var n: Int
        var name: String
        static let collectionName = "items"
        static let schema = Schema<Item>(primaryKey: \.id)
    }

    /// The depth of the predicate's tree.
    static func depth(_ p: TextPredicate) -> Int {
        switch p {
        case .and(let a, let b), .or(let a, let b): 1 + max(depth(a), depth(b))
        case .not(let a): 1 + depth(a)
        default: 1
        }
    }

    @Test("60,000 nested parentheses are a parse error naming the column, not a stack overflow")
    func deepParentheses() {
        let text = String(repeating: "(", count: 60_000) + "n = 1" + String(repeating: ")", count: 60_000)
        #expect {
            try TextPredicate.parse(text)
        } throws: { error in
            guard let error = error as? TextQueryError else { return false }
            return error.message.contains("nest deeper than \(TextPredicate.maxNestingDepth)") && error.column == TextPredicate.maxNestingDepth + 1
        }
    }

    @Test("60,000 nested NOTs are a parse error")
    func deepNot() {
        #expect(throws: TextQueryError.self) { try TextPredicate.parse(String(repeating: "NOT ", count: 60_000) + "n = 1") }
    }

    @Test("nesting up to the limit parses")
    func nestingAtTheLimit() throws {
        let depth = TextPredicate.maxNestingDepth
        let text = String(repeating: "(", count: depth) + "n = 1" + String(repeating: ")", count: depth)
        #expect(try TextPredicate.parse(text) == .compare("n", .equal, .number(1, text: "1")))
    }

    @Test("8,000 ANDed terms build a balanced tree and select the same records as a Swift filter")
    func longConjunction() throws {
        let directory = NSTemporaryDirectory() + "strata-text-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let storage = try StrataStorage(path: directory + "/t.strata")
        let items = (1 ... 3000).map { Item(id: Int64($0), n: $0 % 97, name: "item\($0)") }
        try storage.persist(items)
        let terms = (0 ..< 8000).map { "n != \(100 + $0 % 4000)" } + ["n < 10"]
        let predicate = try TextPredicate.parse(terms.joined(separator: " AND "))
        #expect(Self.depth(predicate) <= 15)
        let found = try CollectionInspector(snapshot: storage.database.snapshot()).find(in: "items", where: predicate)
        #expect(found.records.count == items.filter { $0.n < 10 }.count)
        try storage.close()
    }

    @Test("AND and OR keep their precedence and order when balanced")
    func precedence() throws {
        let p = try TextPredicate.parse("a = 1 OR b = 2 AND c = 3 OR d = 4")
        let record = RecordValue.object([.init(name: "b", value: .int(2)), .init(name: "c", value: .int(3))])
        #expect(p.matches(record))
        #expect(!p.matches(.object([.init(name: "b", value: .int(2))])))
    }

    @Test("NaN compares with nothing in text queries, as in Swift")
    func nanInTextQueries() throws {
        let record = RecordValue.object([.init(name: "d", value: .double(.nan))])
        for text in ["d > 0", "d < 0", "d = 0", "d >= 0", "d BETWEEN 0 AND 1"] {
            #expect(!(try TextPredicate.parse(text)).matches(record), "\(text)")
        }
        #expect(try TextPredicate.parse("d != 0").matches(record))
    }

    @Test("LIKE is case-sensitive and ILIKE ignores case")
    func likeAndIlike() throws {
        let ada = RecordValue.object([.init(name: "name", value: .string("Ada Lovelace"))])
        #expect(try TextPredicate.parse("name LIKE 'Ada*'").matches(ada))
        #expect(try !TextPredicate.parse("name LIKE 'ada*'").matches(ada))
        #expect(try TextPredicate.parse("name ILIKE 'ada*'").matches(ada))
        #expect(try TextPredicate.parse("name NOT ILIKE '*LOVELACE'").matches(ada) == false)
        #expect(try TextPredicate.parse("name ilike 'ADA ?OVELACE'") == .like("name", "ADA ?OVELACE", negated: false, caseSensitive: false))
    }
}
