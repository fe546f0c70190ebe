import Foundation
import Strata
import StrataEngine
import Testing

@Suite("Record codec")
struct RecordCodecTests {
    enum Mood: String, Codable, Equatable { case calm, busy }
    enum Level: Int, Codable, Equatable { case low = 1, high = 9 }

    struct Address: Codable, Equatable {
        var city: String
        var zip: Int32
    }

    struct Everything: Codable, Equatable {
        var int = -42
        var int8: Int8 = -8
        var int16: Int16 = 1600
        var int32: Int32 = -320_000
        var int64 = Int64.min
        var uint = UInt.max
        var uint8: UInt8 = 255
        var uint16: UInt16 = 65535
        var uint32: UInt32 = 4_000_000_000
        var uint64 = UInt64.max
        var double = -0.5
        var float: Float = 3.25
        var bool = true
        var string = "héllo\u{0}wörld 🙂"
        var optionalSome: String? = "x"
        var optionalNone: Int? = nil
        var date = Date(timeIntervalSince1970: 1_700_000_000.25)
        var uuid = UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!
        var data = Data([0, 1, 2, 255])
        var url = URL(string: "https://example.com/a?b=c")!
        var decimal = Decimal(string: "1234.5678")!
        var mood = Mood.busy
        var level = Level.high
        var address = Address(city: "Paris", zip: 75001)
        var addresses = [Address(city: "A", zip: 1), Address(city: "B", zip: 2)]
        var matrix = [[1, 2], [], [3]]
        var scores = ["math": 1.5, "art": 2]
        var byNumber = [1: "one", 2: "two"]
        var nested: [String: [Address]] = ["home": [Address(city: "C", zip: 3)]]
        var optionalArray: [Int?] = [1, nil, 3]
        var empty: [String] = []
    }

    func roundTrip<T: Codable & Equatable>(_ value: T) throws -> T {
        var fields = FieldTable()
        let bytes = try RecordEncoder.encode(value, fields: &fields, collection: "c")
        return try RecordDecoder.decode(T.self, from: bytes, fields: fields, collection: "c")
    }

    struct Numbers: Codable, Equatable {
        var signed: Int64
        var unsigned: UInt64
        var tail: String
    }

    @Test("integers of every width read back, with 0 to 9 bytes of record after them")
    func integersOfEveryWidth() throws {
        var values: [Int64] = [0, -1, .min, .max]
        for bits in 0 ..< 63 { values += [1 << bits, (1 << bits) - 1, -(1 << bits), -(1 << bits) - 1] }
        for value in values {
            for tailLength in 0 ... 9 {
                let numbers = Numbers(signed: value, unsigned: UInt64(bitPattern: value), tail: String(repeating: "x", count: tailLength))
                #expect(try roundTrip(numbers) == numbers)
            }
        }
    }

    @Test("every supported type round-trips")
    func everything() throws {
        #expect(try roundTrip(Everything()) == Everything())
    }

    @Test("field names live in the field table, not in the record")
    func namesAreInterned() throws {
        struct Wide: Codable { var aVeryLongFieldNameIndeed = 1, anotherQuiteLongFieldName = 2 }
        var fields = FieldTable()
        let bytes = try RecordEncoder.encode(Wide(), fields: &fields, collection: "c")
        #expect(fields.names == ["aVeryLongFieldNameIndeed", "anotherQuiteLongFieldName"])
        #expect(bytes.count < 12)
        #expect(!String(decoding: bytes, as: UTF8.self).contains("aVery"))
        // Dictionary keys are data, not field names: they stay in the record.
        _ = try RecordEncoder.encode(["dynamicKey": 1], fields: &fields, collection: "c")
        #expect(!fields.names.contains("dynamicKey"))
    }

    struct UserV1: Codable, Equatable {
        var id: Int64
        var name: String
        var legacy: String
    }

    struct UserV2: Codable, Equatable {
        var id: Int64
        var name: String
        var nickname: String?
        var visits: Int
        var tags: [String]
        var address: Address
    }

    struct UserV3: Codable, Equatable {
        var id: Int64
        var name: Int
    }

    @Test("a field added to the model reads as nil or its zero value; a removed field is ignored")
    func schemaEvolution() throws {
        var fields = FieldTable()
        let old = try RecordEncoder.encode(UserV1(id: 1, name: "Ada", legacy: "x"), fields: &fields, collection: "users")
        let new = try RecordDecoder.decode(UserV2.self, from: old, fields: fields, collection: "users")
        #expect(new == UserV2(id: 1, name: "Ada", nickname: nil, visits: 0, tags: [], address: Address(city: "", zip: 0)))
    }

    @Test("a field whose type changed fails with the collection, field and both types")
    func incompatibleChange() throws {
        var fields = FieldTable()
        let old = try RecordEncoder.encode(UserV1(id: 1, name: "Ada", legacy: "x"), fields: &fields, collection: "users")
        #expect(throws: RecordError.typeMismatch(collection: "users", field: "name", stored: "String", expected: "Int")) {
            try RecordDecoder.decode(UserV3.self, from: old, fields: fields, collection: "users")
        }
        #expect(RecordError.typeMismatch(collection: "users", field: "name", stored: "String", expected: "Int").description.contains("collection 'users', field 'name'"))
        // Integers change width freely while the stored values fit.
        struct Narrow: Codable { var id: Int8 }
        #expect(try RecordDecoder.decode(Narrow.self, from: old, fields: fields, collection: "users").id == 1)
        let big = try RecordEncoder.encode(UserV1(id: 1000, name: "Ada", legacy: "x"), fields: &fields, collection: "users")
        #expect(throws: RecordError.typeMismatch(collection: "users", field: "id", stored: "an integer out of range", expected: "Int8")) {
            try RecordDecoder.decode(Narrow.self, from: big, fields: fields, collection: "users")
        }
    }

    @Test("a missing field without a zero value is reported by name")
    func missingWithoutZero() throws {
        struct Before: Codable { var id = 1 }
        struct After: Codable { var id: Int; var createdAt: Date }
        var fields = FieldTable()
        let bytes = try RecordEncoder.encode(Before(), fields: &fields, collection: "c")
        #expect(throws: RecordError.missingField(collection: "c", field: "createdAt", expected: "Date")) {
            try RecordDecoder.decode(After.self, from: bytes, fields: fields, collection: "c")
        }
    }

    @Test("truncated or garbled records give a RecordError, never a crash")
    func corruptRecords() throws {
        var fields = FieldTable()
        let bytes = try RecordEncoder.encode(Everything(), fields: &fields, collection: "c")
        var failures = 0
        for cut in 0 ..< bytes.count {
            do {
                _ = try RecordDecoder.decode(Everything.self, from: Array(bytes[..<cut]), fields: fields, collection: "c")
            } catch is RecordError {
                failures += 1
            } catch is DecodingError {
                failures += 1
            }
        }
        #expect(failures == bytes.count)
        var rng = SeededRandom(seed: 2026)
        for _ in 0 ..< 2000 {
            var garbled = bytes
            garbled[Int.random(in: 0 ..< garbled.count, using: &rng)] = UInt8.random(in: 0 ... 255, using: &rng)
            _ = try? RecordDecoder.decode(Everything.self, from: garbled, fields: fields, collection: "c")
        }
    }

    final class Base: Codable {
        var base = 1
    }

    final class Derived: Codable, Equatable {
        var extra = "e"
        var parent = Base()
        static func == (a: Derived, b: Derived) -> Bool { a.extra == b.extra && a.parent.base == b.parent.base }
        enum CodingKeys: CodingKey { case extra }
        init() {}
        init(from decoder: Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            extra = try c.decode(String.self, forKey: .extra)
            parent = try Base(from: c.superDecoder())
        }
        func encode(to encoder: Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(extra, forKey: .extra)
            try parent.encode(to: c.superEncoder())
        }
    }

    @Test("superEncoder and nested containers round-trip")
    func superEncoders() throws {
        let value = Derived()
        value.parent.base = 7
        #expect(try roundTrip(value) == value)
    }

    struct Stamp: Codable, Equatable { var at: Date }

    @Test("every Date reads back equal to the one written, to the last bit")
    func datesRoundTripExactly() throws {
        var fields = FieldTable()
        var rng = SystemRandomNumberGenerator()
        let dates = [Date(), .distantPast, .distantFuture, Date(timeIntervalSince1970: 0)]
            + (0 ..< 1_000).map { _ in Date(timeIntervalSinceReferenceDate: Double.random(in: -1e10 ... 1e10, using: &rng)) }
        for date in dates {
            let bytes = try RecordEncoder.encode(Stamp(at: date), fields: &fields, collection: "t")
            #expect(try RecordDecoder.decode(Stamp.self, from: bytes, fields: fields, collection: "t") == Stamp(at: date))
        }
    }

    @Test("dates written with the 1970-based tag 8 still read")
    func legacyDateTag() throws {
        let fields = FieldTable(names: ["at"])
        var record: [UInt8] = [RecordTag.keyed.rawValue, 1, 0, RecordTag.date.rawValue]
        withUnsafeBytes(of: Double(1_700_000_000).bitPattern.littleEndian) { record += $0 }
        #expect(try RecordDecoder.decode(Stamp.self, from: record, fields: fields, collection: "t").at == Date(timeIntervalSince1970: 1_700_000_000))
    }
}
