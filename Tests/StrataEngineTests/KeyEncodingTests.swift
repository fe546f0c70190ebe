import Foundation
import Testing
@testable import StrataEngine

@Suite("Order-preserving key encoding")
struct KeyEncodingTests {
    /// For random pairs, `a < b ⇔ encode(a) < encode(b)` and `a == b ⇔ encode(a) == encode(b)`.
    func checkOrder<T: Comparable & KeyComponent>(_ make: (inout SeededGenerator) -> T, seed: UInt64, pairs: Int = 3000) {
        checkOrder(make, less: <, seed: seed, pairs: pairs)
    }

    func checkOrder<T: Equatable & KeyComponent>(_ make: (inout SeededGenerator) -> T, less: (T, T) -> Bool, seed: UInt64, pairs: Int = 3000) {
        var rng = SeededGenerator(seed: seed)
        for _ in 0 ..< pairs {
            let a = make(&rng), b = make(&rng)
            let ka = Key(a), kb = Key(b)
            #expect(less(a, b) == (ka < kb), "\(a) vs \(b)")
            #expect((a == b) == (ka == kb), "\(a) vs \(b)")
        }
    }

    static let interestingInts: [Int64] = [.min, .min + 1, -256, -1, 0, 1, 255, 256, .max - 1, .max]

    @Test("signed integers of every width order as their values")
    func signedIntegers() {
        checkOrder({ rng in Bool.random(using: &rng) ? Self.interestingInts.randomElement(using: &rng)! : Int64.random(in: .min ... .max, using: &rng) }, seed: 1)
        checkOrder({ Int.random(in: -1000 ... 1000, using: &$0) }, seed: 2)
        checkOrder({ Int32.random(in: .min ... .max, using: &$0) }, seed: 3)
        checkOrder({ Int16.random(in: .min ... .max, using: &$0) }, seed: 4)
        checkOrder({ Int8.random(in: .min ... .max, using: &$0) }, seed: 5)
        #expect(Key(Int8(5)) == Key(Int64(5)))
    }

    @Test("unsigned integers order as their values")
    func unsignedIntegers() {
        checkOrder({ UInt64.random(in: .min ... .max, using: &$0) }, seed: 6)
        checkOrder({ UInt8.random(in: .min ... .max, using: &$0) }, seed: 7)
    }

    @Test("doubles order as their values, including infinities, subnormals and -0.0")
    func doubles() {
        let special: [Double] = [-.infinity, -.greatestFiniteMagnitude, -1, -.leastNonzeroMagnitude, -0.0, 0.0, .leastNonzeroMagnitude, 1, .greatestFiniteMagnitude, .infinity]
        checkOrder({ rng in
            switch Int.random(in: 0 ..< 3, using: &rng) {
            case 0: special.randomElement(using: &rng)!
            case 1: Double.random(in: -1e6 ... 1e6, using: &rng)
            default: Double(bitPattern: UInt64.random(in: 0 ... .max, using: &rng)).isNaN ? 0 : Double(bitPattern: UInt64.random(in: 0 ... .max, using: &rng))
            }
        }, seed: 8)
        #expect(Key(-0.0) == Key(0.0))
        #expect(Key(Double.nan) > Key(Double.infinity))
        #expect(Key(Double.nan) == Key(-Double.nan))
    }

    @Test("strings order as Swift orders them, with embedded zeros and combining marks")
    func strings() {
        let alphabet: [Character] = ["a", "b", "z", "\u{0}", "\u{1}", "é", "e\u{301}", "ß", "日", "🙂", "\u{FFFF}", "A"]
        checkOrder({ rng in String((0 ..< Int.random(in: 0 ... 6, using: &rng)).map { _ in alphabet.randomElement(using: &rng)! }) }, seed: 9, pairs: 5000)
        #expect(Key("é") == Key("e\u{301}"))
        #expect(Key("a") < Key("a\u{0}"))
        #expect(Key("a\u{0}") < Key("a\u{1}"))
    }

    @Test("bytes, dates, booleans and UUIDs order as their values")
    func otherTypes() {
        checkOrder({ rng in (0 ..< Int.random(in: 0 ... 5, using: &rng)).map { _ in [0, 1, 0xFF].randomElement(using: &rng)! as UInt8 } }, less: { $0.lexicographicallyPrecedes($1) }, seed: 10)
        checkOrder({ Date(timeIntervalSince1970: Double.random(in: -1e10 ... 1e10, using: &$0)) }, seed: 11)
        checkOrder({ Bool.random(using: &$0) }, less: { !$0 && $1 }, seed: 12, pairs: 50)
        #expect(Key(UUID(uuidString: "00000000-0000-0000-0000-000000000001")!) < Key(UUID(uuidString: "10000000-0000-0000-0000-000000000000")!))
    }

    struct Pair: Comparable {
        var name: String
        var number: Int64
        static func < (a: Pair, b: Pair) -> Bool { (a.name, a.number) < (b.name, b.number) }
    }

    @Test("tuples order lexicographically, element by element")
    func tuples() {
        var rng = SeededGenerator(seed: 13)
        for _ in 0 ..< 3000 {
            let a = Pair(name: ["", "a", "ab", "b", "a\u{0}"].randomElement(using: &rng)!, number: Int64.random(in: -3 ... 3, using: &rng))
            let b = Pair(name: ["", "a", "ab", "b", "a\u{0}"].randomElement(using: &rng)!, number: Int64.random(in: -3 ... 3, using: &rng))
            let ka = Key(a.name, a.number), kb = Key(b.name, b.number)
            #expect((a < b) == (ka < kb))
        }
        #expect(Key(Optional<Int>.none, 1) < Key(Optional(Int.min), 0))
        // A tuple's prefix encodes as a byte prefix: prefix scans work on leading elements.
        #expect(Key("ab", 5).bytes.starts(with: Key("ab").bytes))
        #expect(!Key("abc", 5).bytes.starts(with: Key("ab").bytes))
        #expect(Key("abc", 5).bytes.starts(with: Key().appendingStringPrefix("ab")))
    }

    @Test("a value lends the same bytes it appends, for every kind of key element")
    func lentKeyBytesMatchAppendedOnes() {
        func expectSame(_ value: some KeyComponent, sourceLocation: SourceLocation = #_sourceLocation) {
            var appended = Key()
            value.appendKey(to: &appended)
            #expect(value.withKeyBytes { Array($0) } == appended.bytes, "\(value)", sourceLocation: sourceLocation)
        }
        for value in Self.interestingInts {
            expectSame(value)
            expectSame(Int(value))
            expectSame(UInt64(bitPattern: value))
            expectSame(Double(value))
            expectSame(Date(timeIntervalSince1970: Double(value) / 1e9))
        }
        for value in [Double.nan, -.infinity, -0.0, 0.0, .leastNonzeroMagnitude, .infinity] { expectSame(value) }
        expectSame(Int32.min); expectSame(Int16(-3)); expectSame(Int8.max)
        expectSame(UInt.max); expectSame(UInt32(7)); expectSame(UInt16.max); expectSame(UInt8(0))
        expectSame(Float(-1.5)); expectSame(true); expectSame("a\u{0}b"); expectSame(Substring("sub"))
        expectSame(Data([0, 1, 0])); expectSame([UInt8]([9, 0])); expectSame(UUID())
        expectSame(Int64?.none); expectSame(Int64?.some(5)); expectSame(Key("users", Int64(42)))
    }

    @Test("keys decode back to their elements")
    func decoding() throws {
        let uuid = UUID()
        let date = Date(timeIntervalSince1970: 1_700_000_000.5)
        let key = Key(Int64(-5), UInt64(7), 2.5, "a\u{0}b", [UInt8]([0, 255]), date, uuid, true, Optional<Int>.none)
        #expect(try key.elements() == [.int(-5), .uint(7), .double(2.5), .string("a\u{0}b"), .bytes([0, 255]), .date(date), .uuid(uuid), .bool(true), .null])
        #expect(throws: StrataError.self) { try Key(bytes: [0x99]).elements() }
        #expect(throws: StrataError.self) { try Key(bytes: [KeyTag.int, 1, 2]).elements() }
        #expect(throws: StrataError.self) { try Key(bytes: [KeyTag.string, 0x61]).elements() }
    }
}
