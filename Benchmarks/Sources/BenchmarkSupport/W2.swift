// W2 of ../../../shared/WORKLOAD.md: ~4 KiB documents of English-like text and 20 tags.
import Strata

/// W2's record.
public struct Document: Model, Equatable {
    public var id: Int64
    public var title: String
    public var body: String
    public var tags: [String]

    public static let schema = Schema<Document>(primaryKey: \.id)

    public init(id: Int64, title: String, body: String, tags: [String]) {
        (self.id, self.title, self.body, self.tags) = (id, title, body, tags)
    }

    /// Changes when any field changes (see `User.digest`).
    public var digest: UInt64 {
        var h = UInt64(bitPattern: id) &* 0x9E37_79B9_7F4A_7C15
        h ^= UInt64(title.utf8.count) &<< 40 ^ UInt64(body.utf8.count) &<< 16
        h ^= UInt64(body.utf8.last ?? 0) &<< 56
        for tag in tags { h = (h &<< 5 | h &>> 59) ^ UInt64(tag.utf8.count) ^ UInt64(tag.utf8.last ?? 0) &<< 8 }
        return h
    }
}

/// The W2 data set, from a fixed seed.
public struct W2Data: Sendable {
    public let documents: [Document]
    public let insertOrder: [Int64]
    public let lookups: [Int64]
    /// The tag `scan.filter` looks for.
    public let filterTag: String

    static let tagVocabulary = (0 ..< 200).map { "tag\($0)" }

    public init(records: Int, lookups: Int, seed: UInt64 = 7) {
        var rng = SplitMix(state: seed)
        let words = Self.vocabulary(rng: &rng)
        func sentence(_ words: [String], count: Int, rng: inout SplitMix) -> String {
            var text = ""
            for i in 0 ..< count {
                if i > 0 { text += " " }
                text += words[Int(rng.next() % UInt64(words.count))]
            }
            return text
        }
        documents = (0 ..< records).map { id in
            let title = sentence(words, count: 6, rng: &rng)
            var body = ""
            while body.utf8.count < 4000 { body += sentence(words, count: 12, rng: &rng) + ". " }
            let tags = (0 ..< 20).map { _ in Self.tagVocabulary[Int(rng.next() % UInt64(Self.tagVocabulary.count))] }
            return Document(id: Int64(id), title: title, body: body, tags: tags)
        }
        insertOrder = (0 ..< Int64(records)).shuffled(using: &rng)
        self.lookups = (0 ..< lookups).map { _ in Int64(rng.next() % UInt64(max(records, 1))) }
        filterTag = "tag7"
    }

    /// 3,000 pronounceable words built from syllables: text that compresses like prose.
    static func vocabulary(rng: inout SplitMix) -> [String] {
        let syllables = ["an", "be", "con", "de", "er", "for", "ge", "in", "ly", "ment", "no", "or", "pre", "re",
                         "st", "ter", "th", "un", "ver", "wa", "al", "ing", "ed", "es", "ti", "ou", "ch", "ar"]
        var words = Set<String>()
        while words.count < 3_000 {
            let n = 1 + Int(rng.next() % 3)
            words.insert((0 ..< n).map { _ in syllables[Int(rng.next() % UInt64(syllables.count))] }.joined())
        }
        return words.sorted()
    }

    public var documentsInInsertOrder: [Document] { insertOrder.map { documents[Int($0)] } }

    public func expectedGet() -> Checksum {
        var sum = Checksum()
        for id in lookups { sum.add(documents[Int(id)].digest) }
        return sum
    }

    /// Documents carrying `filterTag`, counted with their ids.
    public func expectedTagFilter() -> Checksum {
        var sum = Checksum()
        for doc in documents where doc.tags.contains(filterTag) { sum.add(UInt64(doc.id)) }
        return sum
    }
}

/// A typed model of W2's document, so one benchmark runner serves every way of declaring it.
public protocol W2Row: Model {
    init(_ document: Document)
    var id: Int64 { get }
    var digest: UInt64 { get }
    /// The tags property itself (a key path formed through the protocol names the requirement,
    /// which a model's declared fields do not).
    static var tagsField: KeyPath<Self, [String]> { get }
}

extension Document: W2Row {
    public init(_ document: Document) { self = document }
    public static var tagsField: KeyPath<Document, [String]> { \.tags }
}

/// W2's document as `@StoredModel` generates it (declared fields and the `RecordCodable`
/// codec, written out): the same bytes as `Document`.
public struct FastDocument: Model, RecordCodable, W2Row {
    public var id: Int64
    public var title: String
    public var body: String
    public var tags: [String]

    public static let collectionName = "Document"
    public static let schema = Schema<FastDocument>(primaryKey: \.id)
    public static let storedFields: [StoredField<FastDocument>] = [.field(\.id), .field(\.title), .field(\.body), .field(\.tags)]

    public init(_ d: Document) { (id, title, body, tags) = (d.id, d.title, d.body, d.tags) }

    public static var tagsField: KeyPath<FastDocument, [String]> { \.tags }
    public var digest: UInt64 { Document(id: id, title: title, body: body, tags: tags).digest }

    public func encode(to record: inout RecordWriter) throws {
        try record.encode(id, forKey: "id")
        try record.encode(title, forKey: "title")
        try record.encode(body, forKey: "body")
        try record.encode(tags, forKey: "tags")
    }

    public init(from record: inout RecordReader) throws {
        id = try record.decode(Int64.self, forKey: "id")
        title = try record.decode(String.self, forKey: "title")
        body = try record.decode(String.self, forKey: "body")
        tags = try record.decode([String].self, forKey: "tags")
    }
}
