// W4: the notes app of issue 17 — notes in notebooks, with tags, priorities, a done flag and
// optional due dates, queried the way a notes app's screens query them.
import Strata

/// W4's record, with what `@StoredModel` generates written out (`storedFields`, the
/// `RecordCodable` fast path, number-like fields first), so the benchmark package does not
/// build swift-syntax.
public struct Note: Model, RecordCodable, Equatable {
    public var id: Int64
    public var notebookId: Int64
    /// Milliseconds since 1970; distinct per note, so keyset paging needs no tie-break.
    public var createdAt: Int64
    public var title: String
    public var tag: String
    public var priority: Int
    public var done: Bool
    public var due: Int64?

    /// The indexes a notes app declares; the SQL engines create the same ones.
    public static let schema = Schema<Note>(primaryKey: \.id, indexes: [
        .index(\.notebookId, \.createdAt, name: "notebook+created"), .index(\.tag), .index(\.priority), .index(\.done),
    ])

    public static let storedFields: [StoredField<Note>] = [
        .field(\.id), .field(\.notebookId), .field(\.createdAt), .field(\.title), .field(\.tag), .field(\.priority), .field(\.done), .field(\.due),
    ]

    public func encode(to record: inout RecordWriter) throws {
        try record.encode(id, forKey: "id")
        try record.encode(notebookId, forKey: "notebookId")
        try record.encode(createdAt, forKey: "createdAt")
        try record.encode(priority, forKey: "priority")
        try record.encode(done, forKey: "done")
        try record.encodeIfPresent(due, forKey: "due")
        try record.encode(title, forKey: "title")
        try record.encode(tag, forKey: "tag")
    }

    public init(from record: inout RecordReader) throws {
        id = try record.decode(Int64.self, forKey: "id")
        notebookId = try record.decode(Int64.self, forKey: "notebookId")
        createdAt = try record.decode(Int64.self, forKey: "createdAt")
        priority = try record.decode(Int.self, forKey: "priority")
        done = try record.decode(Bool.self, forKey: "done")
        due = try record.decodeIfPresent(Int64.self, forKey: "due")
        title = try record.decode(String.self, forKey: "title")
        tag = try record.decode(String.self, forKey: "tag")
    }

    public init(id: Int64, notebookId: Int64, createdAt: Int64, title: String, tag: String, priority: Int, done: Bool, due: Int64?) {
        (self.id, self.notebookId, self.createdAt, self.title, self.tag, self.priority, self.done, self.due) =
            (id, notebookId, createdAt, title, tag, priority, done, due)
    }
}

/// The W4 data set and its queries, from a fixed seed, with the answers computed here.
public struct W4Data: Sendable {
    public static let notebooks: Int64 = 100
    public static let tags = ["urgent", "work", "home", "ideas", "later"]
    public static let notebookPage = 50, tagPage = 20, topCount = 50, keysetPage = 20, keysetPages = 20
    /// How many queries each op runs.
    public static let queries = 100

    public let notes: [Note]
    /// Each notebook's and each tag's notes, newest first: what the answers are read from.
    private let byNotebook: [Int64: [Note]]
    private let byTag: [String: [Note]]

    public init(count: Int) {
        var random = SplitMix(state: 0x4E07E5)
        // Distinct creation times in a shuffled order: notes are not created in id order.
        var times = (0 ..< Int64(count)).map { 1_700_000_000_000 + $0 * 60_000 }
        times.shuffle(using: &random)
        notes = (0 ..< count).map { i in
            let r = random.next()
            return Note(id: Int64(i + 1), notebookId: Int64(r % UInt64(Self.notebooks)), createdAt: times[i],
                        title: "note \(i) " + String(repeating: "x", count: Int(r >> 8 % 40)),
                        // "urgent" is a fifth of the notes, as in the app.
                        tag: Self.tags[Int(r >> 16 % 5)], priority: Int(r >> 24 % 10), done: (r >> 32) & 1 == 0,
                        due: (r >> 40) % 5 < 2 ? times[i] + Int64(r >> 44 % 1000) * 3_600_000 : nil)
        }
        byNotebook = Dictionary(grouping: notes, by: \.notebookId).mapValues { $0.sorted(by: Self.newestFirst) }
        byTag = Dictionary(grouping: notes, by: \.tag).mapValues { $0.sorted(by: Self.newestFirst) }
    }

    public func notebook(_ query: Int) -> Int64 { Int64(query * 37) % Self.notebooks }
    public func tag(_ query: Int) -> String { Self.tags[query % Self.tags.count] }
    public func countFilter(_ query: Int) -> (done: Bool, priority: Int) { (query % 2 == 0, query % 10) }

    private static func newestFirst(_ a: Note, _ b: Note) -> Bool { a.createdAt > b.createdAt || a.createdAt == b.createdAt && a.id < b.id }

    /// A notebook's newest notes.
    public func expectedNotebookPage(_ query: Int) -> [Int64] {
        (byNotebook[notebook(query)] ?? []).prefix(Self.notebookPage).map(\.id)
    }

    /// The newest notes with a tag.
    public func expectedTagPage(_ query: Int) -> [Int64] {
        (byTag[tag(query)] ?? []).prefix(Self.tagPage).map(\.id)
    }

    /// The highest-priority notes, ties by id.
    public var expectedTopPriority: [Int64] {
        notes.sorted { $0.priority > $1.priority || $0.priority == $1.priority && $0.id < $1.id }.prefix(Self.topCount).map(\.id)
    }

    public func expectedCount(_ query: Int) -> Int {
        let (done, priority) = countFilter(query)
        return notes.filter { $0.done == done && $0.priority == priority }.count
    }

    /// Every page of a notebook's keyset paging, newest first, concatenated.
    public func expectedKeysetPages(_ query: Int) -> [Int64] {
        (byNotebook[notebook(query)] ?? []).prefix(Self.keysetPage * Self.keysetPages).map(\.id)
    }
}

/// What each W4 engine answers; results are note ids in order (each engine decodes whole notes).
public protocol W4Engine {
    func insert(_ notes: [Note]) throws
    /// A notebook's newest `limit` notes.
    func notebookPage(_ notebook: Int64, limit: Int) throws -> [Int64]
    /// The newest `limit` notes with `tag`.
    func tagPage(_ tag: String, limit: Int) throws -> [Int64]
    /// The `limit` highest-priority notes, ties by id.
    func topPriority(limit: Int) throws -> [Int64]
    func count(done: Bool, priority: Int) throws -> Int
    /// The page after `before` (nil: the first) of a notebook's notes, newest first.
    func keysetPage(_ notebook: Int64, before: Int64?, limit: Int) throws -> [(id: Int64, createdAt: Int64)]
    func close() throws
}
