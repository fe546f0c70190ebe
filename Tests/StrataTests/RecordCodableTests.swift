import Foundation
import Strata
import Testing

/// Models that write their own records (`RecordCodable`): same bytes as `Codable`, faster.
@Suite("RecordCodable: the fast path stores what Codable stores")
struct RecordCodableTests {
    struct Address: Codable, Equatable {
        var city: String
        var zip: Int
    }

    struct Profile: Model, RecordCodable, Equatable {
        var id: Int64
        var name: String
        var age: Int
        var score: Double
        var active: Bool
        var joined: Date
        var nickname: String?
        var tags: [String]
        var address: Address

        static let collectionName = "profiles"
        static let schema = Schema<Profile>(primaryKey: \.id, indexes: [.index(\.age)])

        init(id: Int64, name: String, age: Int, score: Double, active: Bool, joined: Date, nickname: String?, tags: [String], address: Address) {
            (self.id, self.name, self.age, self.score, self.active, self.joined) = (id, name, age, score, active, joined)
            (self.nickname, self.tags, self.address) = (nickname, tags, address)
        }

        func encode(to record: inout RecordWriter) throws {
            try record.encode(id, forKey: "id")
            try record.encode(name, forKey: "name")
            try record.encode(age, forKey: "age")
            try record.encode(score, forKey: "score")
            try record.encode(active, forKey: "active")
            try record.encode(joined, forKey: "joined")
            try record.encodeIfPresent(nickname, forKey: "nickname")
            try record.encode(tags, forKey: "tags")
            try record.encode(address, forKey: "address")
        }

        init(from record: inout RecordReader) throws {
            id = try record.decode(Int64.self, forKey: "id")
            name = try record.decode(String.self, forKey: "name")
            age = try record.decode(Int.self, forKey: "age")
            score = try record.decode(Double.self, forKey: "score")
            active = try record.decode(Bool.self, forKey: "active")
            joined = try record.decode(Date.self, forKey: "joined")
            nickname = try record.decodeIfPresent(String.self, forKey: "nickname")
            tags = try record.decode([String].self, forKey: "tags")
            address = try record.decode(Address.self, forKey: "address")
        }

        static func sample(_ i: Int) -> Profile {
            Profile(id: Int64(i), name: "user \(i) with a longer name", age: 20 + i % 50, score: Double(i) / 3, active: i % 2 == 0,
                    joined: Date(timeIntervalSinceReferenceDate: Double(i) * 1_000.123), nickname: i % 3 == 0 ? nil : "n\(i)",
                    tags: (0 ..< i % 4).map { "t\($0)" }, address: Address(city: "City \(i)", zip: 10_000 + i))
        }
    }

    @Test("encoding through the fast path gives Codable's bytes, and decoding returns the value")
    func sameBytesAsCodable() throws {
        for i in 0 ..< 50 { #expect(try RecordCodableConformance.check(Profile.sample(i))) }
        var fields = FieldTable()
        let bytes = try RecordEncoder.encode(Profile.sample(7), fields: &fields, collection: "profiles")
        #expect(try RecordDecoder.decode(Profile.self, from: bytes, fields: fields, collection: "profiles") == Profile.sample(7))
    }

    /// Writes its field under another name than Codable does: the check must catch it.
    struct Misnamed: RecordCodable, Equatable {
        var value: Int
        func encode(to record: inout RecordWriter) throws { try record.encode(value, forKey: "val") }
        init(from record: inout RecordReader) throws { value = try record.decode(Int.self, forKey: "val") }
        init(value: Int) { self.value = value }
    }

    @Test("a conformance that writes other names than Codable is caught by the check")
    func conformanceCheckCatchesMismatch() throws {
        #expect(try RecordCodableConformance.check(Misnamed(value: 3)) == false)
    }

    struct ProfileV0: Codable { var id: Int64; var name: Int }

    @Test("the fast path follows the schema-evolution rules: absent fields are zero, wrong types are named")
    func schemaEvolution() throws {
        var fields = FieldTable()
        struct Minimal: Codable { var id: Int64; var joined: Date; var tags: [String]; var address: Address }
        let old = try RecordEncoder.encode(Minimal(id: 1, joined: Date(timeIntervalSince1970: 5), tags: [], address: Address(city: "X", zip: 1)),
                                           fields: &fields, collection: "profiles")
        let read = try RecordDecoder.decode(Profile.self, from: old, fields: fields, collection: "profiles")
        #expect(read.name == "" && read.age == 0 && read.nickname == nil && read.active == false)
        var other = FieldTable()
        let mismatched = try RecordEncoder.encode(ProfileV0(id: 1, name: 5), fields: &other, collection: "profiles")
        #expect(throws: RecordError.typeMismatch(collection: "profiles", field: "name", stored: "signed integer", expected: "String")) {
            try RecordDecoder.decode(Profile.self, from: mismatched, fields: other, collection: "profiles")
        }
    }

    /// Writes its fields in another order than `Codable` does, as `@StoredModel` writes
    /// number-like fields first: the same record to every reader.
    struct Reordered: RecordCodable, Equatable {
        var label: String
        var count: Int
        func encode(to record: inout RecordWriter) throws {
            try record.encode(count, forKey: "count")
            try record.encode(label, forKey: "label")
        }
        init(from record: inout RecordReader) throws {
            count = try record.decode(Int.self, forKey: "count")
            label = try record.decode(String.self, forKey: "label")
        }
        init(label: String, count: Int) { (self.label, self.count) = (label, count) }
    }

    /// Stores another value than `Codable` does: the check must catch it.
    struct Tampered: RecordCodable, Equatable {
        var count: Int
        func encode(to record: inout RecordWriter) throws { try record.encode(count + 1, forKey: "count") }
        init(from record: inout RecordReader) throws { count = try record.decode(Int.self, forKey: "count") - 1 }
        init(count: Int) { self.count = count }
    }

    @Test("the check accepts fields written in any order and catches a value stored differently")
    func checkComparesFieldsNotOrder() throws {
        #expect(try RecordCodableConformance.check(Reordered(label: "a", count: 2)))
        #expect(try RecordCodableConformance.check(Tampered(count: 2)) == false)
        var fields = FieldTable()
        let stored = try RecordEncoder.encode(Reordered(label: "a", count: 2), fields: &fields, collection: "c")
        #expect(try RecordDecoder.decode(Reordered.self, from: stored, fields: fields, collection: "c") == Reordered(label: "a", count: 2))
        struct Plain: Codable, Equatable { var label: String; var count: Int }
        #expect(try RecordDecoder.decode(Plain.self, from: stored, fields: fields, collection: "c") == Plain(label: "a", count: 2))
    }

    /// 130 fields: a two-byte field count, and field ids of two bytes past the 128th.
    struct Wide: RecordCodable, Equatable {
        static let width = 130
        var values: [Int]
        init(values: [Int]) { self.values = values }
        func encode(to record: inout RecordWriter) throws {
            for (i, value) in values.enumerated() { try record.encode(value, forKey: "f\(i)") }
        }
        init(from record: inout RecordReader) throws {
            values = try (0 ..< Self.width).map { try record.decode(Int.self, forKey: "f\($0)") }
        }
        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: StoredFieldKey.self)
            for (i, value) in values.enumerated() { try container.encode(value, forKey: StoredFieldKey("f\(i)")) }
        }
        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: StoredFieldKey.self)
            values = try (0 ..< Self.width).map { try container.decode(Int.self, forKey: StoredFieldKey("f\($0)")) }
        }
    }

    @Test("a record of more than 127 fields reads back through the fast path, every field found")
    func wideRecordReadsBack() throws {
        let wide = Wide(values: (0 ..< Wide.width).map { $0 * 7 - 300 })
        var fields = FieldTable()
        let stored = try RecordEncoder.encode(wide, fields: &fields, collection: "c")
        #expect(stored[1] >= 0x80)   // the field count takes two bytes
        #expect(try RecordDecoder.decode(Wide.self, from: stored, fields: fields, collection: "c") == wide)
        #expect(try RecordCodableConformance.check(wide))
    }

    /// Integers read where they lie, through the generated codec's own path: every varint
    /// length (1 to 10 bytes), with 0 to 9 bytes of record after it, so each is read both
    /// with bytes to spare and at the record's very end.
    struct Counters: RecordCodable, Equatable {
        var signed: Int64
        var int: Int
        var tail: String
        func encode(to record: inout RecordWriter) throws {
            try record.encode(signed, forKey: "signed")
            try record.encode(int, forKey: "int")
            try record.encode(tail, forKey: "tail")
        }
        init(from record: inout RecordReader) throws {
            signed = try record.decode(Int64.self, forKey: "signed")
            int = try record.decode(Int.self, forKey: "int")
            tail = try record.decode(String.self, forKey: "tail")
        }
        init(signed: Int64, int: Int, tail: String) { (self.signed, self.int, self.tail) = (signed, int, tail) }
    }

    @Test("integers of every varint length read back through the fast path, wherever they end")
    func integersOfEveryLengthReadBack() throws {
        var values: [Int64] = [0, -1, .min, .max]
        for bits in 0 ..< 63 { values += [1 << bits, (1 << bits) - 1, -(1 << bits), -(1 << bits) - 1] }
        var fields = FieldTable()
        for value in values {
            for tailLength in 0 ... 9 {
                let counters = Counters(signed: value, int: -Int(value / 3), tail: String(repeating: "x", count: tailLength))
                let stored = try RecordEncoder.encode(counters, fields: &fields, collection: "c")
                #expect(try RecordDecoder.decode(Counters.self, from: stored, fields: fields, collection: "c") == counters)
                #expect(try RecordCodableConformance.check(counters))
            }
        }
    }

    /// Up to 64 bytes, text is checked for ASCII by the reader; longer text is validated by
    /// the standard library alone.
    @Test("text of every length up to 40 and around 64, ASCII or with one other character anywhere, reads back as written")
    func textOfEveryLengthReadsBack() throws {
        var fields = FieldTable()
        for length in Array(0 ... 40) + Array(60 ... 70) + [4000] {
            let ascii = String(repeating: "a", count: length)
            var texts = [ascii]
            for position in 0 ..< length {
                var characters = Array(ascii)
                characters[position] = "é"
                texts.append(String(characters))
            }
            for text in texts {
                var profile = Profile.sample(length)
                profile.name = text
                let stored = try RecordEncoder.encode(profile, fields: &fields, collection: "profiles")
                #expect(try RecordDecoder.decode(Profile.self, from: stored, fields: fields, collection: "profiles") == profile)
            }
        }
    }

    @Test("stored text that is not UTF-8 is reported as a corrupt record, at every position", arguments: [17, 65, 300])
    func textThatIsNotUTF8IsReported(length: Int) throws {
        var fields = FieldTable()
        let name = String((0 ..< length).map { Character(UnicodeScalar(UInt8(97 + $0 % 26))) })
        var profile = Profile.sample(1)
        profile.name = name
        let stored = try RecordEncoder.encode(profile, fields: &fields, collection: "profiles")
        let start = try #require(stored.indices.first { stored[$0...].starts(with: Array(name.utf8)) })
        for offset in 0 ..< name.utf8.count {
            var damaged = stored
            damaged[start + offset] = 0xFF
            #expect(throws: RecordError.self, "0xFF at \(offset)") {
                try RecordDecoder.decode(Profile.self, from: damaged, fields: fields, collection: "profiles")
            }
        }
    }

    @Test("fields stored in another order than the codec reads them, or with other fields between them, are found where they are")
    func fieldsOutOfOrder() throws {
        // Written by an older declaration: the fields reversed, with two the model no longer has among them.
        struct Reordered: Codable {
            var address: Address; var tags: [String]; var nickname: String?; var joined: Date; var retired: [Int]
            var active: Bool; var score: Double; var age: Int; var note: String; var name: String; var id: Int64
        }
        let expected = Profile(id: 7, name: "seven", age: 41, score: 2.5, active: true, joined: Date(timeIntervalSince1970: 9),
                               nickname: "s", tags: ["a", "b"], address: Address(city: "Y", zip: 2))
        var fields = FieldTable()
        let stored = try RecordEncoder.encode(Reordered(address: expected.address, tags: expected.tags, nickname: expected.nickname,
                                                        joined: expected.joined, retired: [1, 2, 3], active: expected.active,
                                                        score: expected.score, age: expected.age, note: "left over",
                                                        name: expected.name, id: expected.id),
                                              fields: &fields, collection: "profiles")
        #expect(try RecordDecoder.decode(Profile.self, from: stored, fields: fields, collection: "profiles") == expected)
    }

    struct Series: RecordCodable, Equatable {
        var values: [Int]
        var labels: [String]
        func encode(to record: inout RecordWriter) throws {
            try record.encode(values, forKey: "values")
            try record.encode(labels, forKey: "labels")
        }
        init(from record: inout RecordReader) throws {
            values = try record.decode([Int].self, forKey: "values")
            labels = try record.decode([String].self, forKey: "labels")
        }
        init(values: [Int], labels: [String]) { (self.values, self.labels) = (values, labels) }
    }

    @Test("arrays of strings and integers are written and read in place, as Codable writes them; an element of another type is named")
    func arrayFastPaths() throws {
        for n in [0, 1, 5, 200] {
            #expect(try RecordCodableConformance.check(Series(values: (0 ..< n).map { $0 * 1_000_003 - 7 }, labels: (0 ..< n).map { "é\($0)" })))
        }
        struct Other: Codable { var values: [Double] }
        var fields = FieldTable()
        let stored = try RecordEncoder.encode(Other(values: [1.5]), fields: &fields, collection: "series")
        #expect(throws: RecordError.typeMismatch(collection: "series", field: "values", stored: "Double", expected: "Int")) {
            try RecordDecoder.decode(Series.self, from: stored, fields: fields, collection: "series")
        }
        let absent = try RecordEncoder.encode(Other(values: []), fields: &fields, collection: "series")
        #expect(throws: Never.self) { try RecordDecoder.decode(Series.self, from: absent, fields: fields, collection: "series") }
    }

    @Test("a RecordCodable model is stored, indexed and queried like any model")
    func throughStorage() throws {
        let path = NSTemporaryDirectory() + "strata-fast-" + UUID().uuidString + ".strata"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let storage = try StrataStorage(path: path)
        let all = (0 ..< 200).map(Profile.sample)
        try storage.persist(all)
        #expect(try storage.read(Profile.self, primaryKey: Int64(42)) == Profile.sample(42))
        #expect(try storage.read(Profile.filter(.between(\.age, 30 ... 32))) == all.filter { (30 ... 32).contains($0.age) })
        #expect(try storage.read(Profile.filter(\.active == true && \.score > 50)) == all.filter { $0.active && $0.score > 50 })
        try storage.close()
    }
}
