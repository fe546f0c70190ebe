import Foundation
import Strata
import Testing

/// Reads through a storage decode record after record with one context, which finds short
/// text it made before by its bytes instead of making it again. These tests pin down that
/// what comes back is always the text stored.
@Suite("Repeated text: short strings decoded record after record")
struct RepeatedTextTests {
    /// Decoded by `Codable`.
    struct Labelled: Model, Equatable {
        var id: Int64
        var label: String
        var tags: [String]
        static let collectionName = "labelled"
        static let schema = Schema<Labelled>(primaryKey: \.id)
    }

    /// Decoded by its own codec (`RecordCodable`).
    struct FastLabelled: Model, RecordCodable, Equatable {
        var id: Int64
        var label: String
        var tags: [String]
        static let collectionName = "labelled"
        static let schema = Schema<FastLabelled>(primaryKey: \.id)

        init(id: Int64, label: String, tags: [String]) { (self.id, self.label, self.tags) = (id, label, tags) }
        init(from reader: inout RecordReader) throws {
            id = try reader.decode(Int64.self, forKey: "id")
            label = try reader.decode(String.self, forKey: "label")
            tags = try reader.decode([String].self, forKey: "tags")
        }
        func encode(to writer: inout RecordWriter) throws {
            try writer.encode(id, forKey: "id")
            try writer.encode(label, forKey: "label")
            try writer.encode(tags, forKey: "tags")
        }
    }

    enum Decoding: CaseIterable, CustomTestStringConvertible {
        case codable, recordCodable
        var testDescription: String { self == .codable ? "Codable" : "RecordCodable" }
    }

    /// Short texts that the table could confuse if it told text apart wrongly: for every
    /// length to 16, a text, the same with each byte changed in turn, with a non-ASCII
    /// character in place of each byte, and cut by one.
    static var lookalikes: [String] {
        var texts: [String] = []
        for length in 0 ... 16 {
            let text = String("abcdefghijklmnopq".prefix(length))
            texts.append(text)
            for position in 0 ..< length {
                var changed = Array(text)
                changed[position] = "Z"
                texts.append(String(changed))
                changed[position] = "é"
                texts.append(String(changed))
            }
            texts.append(String(text.dropLast()))
        }
        return texts
    }

    /// Records whose label and tags repeat the lookalikes in several orders, then a stretch
    /// of text that never repeats (the table stands aside), then the lookalikes again.
    static func records() -> [(label: String, tags: [String])] {
        let lookalikes = Self.lookalikes
        var records: [(String, [String])] = []
        for round in 0 ..< 3 {
            for (i, text) in lookalikes.enumerated() {
                records.append((text, (0 ..< 6).map { lookalikes[(i * (round + 2) + $0 * 7) % lookalikes.count] }))
            }
        }
        for i in 0 ..< 1_500 {
            records.append((String(format: "u%07d", i), [String(format: "t%07d", i), String(format: "v%07d", i)]))
        }
        for (i, text) in lookalikes.enumerated().reversed() {
            records.append((text, [lookalikes[(i + 1) % lookalikes.count], text]))
        }
        return records
    }

    @Test("labels and tags that repeat, differ by one byte, are not ASCII or never repeat read back as stored", arguments: Decoding.allCases)
    func shortTextReadsBackAsStored(_ decoding: Decoding) throws {
        let path = NSTemporaryDirectory() + "strata-repeated-text-" + UUID().uuidString + ".strata"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let storage = try StrataStorage(path: path)
        let records = Self.records()
        switch decoding {
        case .codable:
            let written = records.enumerated().map { Labelled(id: Int64($0.offset), label: $0.element.label, tags: $0.element.tags) }
            try storage.persist(written)
            // Twice: the second read finds every text the first one made.
            for _ in 0 ..< 2 { #expect(try storage.read(Labelled.query()) == written) }
        case .recordCodable:
            let written = records.enumerated().map { FastLabelled(id: Int64($0.offset), label: $0.element.label, tags: $0.element.tags) }
            try storage.persist(written)
            for _ in 0 ..< 2 { #expect(try storage.read(FastLabelled.query()) == written) }
        }
        try storage.close()
    }
}
