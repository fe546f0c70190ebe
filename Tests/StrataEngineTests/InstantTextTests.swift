import Foundation
import StrataEngine
import Testing

/// Dates as text: ISO 8601 in UTC with `Z`, proleptic Gregorian, read back to the instant.
@Suite("Dates as text")
struct InstantTextTests {
    @Test("instants are written in UTC with Z and milliseconds")
    func writesUTCWithZ() {
        #expect(InstantText.format(Date(timeIntervalSince1970: 0)) == "1970-01-01T00:00:00.000Z")
        #expect(InstantText.format(Date(timeIntervalSince1970: -1)) == "1969-12-31T23:59:59.000Z")
        #expect(InstantText.format(Date(timeIntervalSince1970: 951_782_400)) == "2000-02-29T00:00:00.000Z")
        #expect(InstantText.format(Date(timeIntervalSince1970: 1_795_529_763.25)) == "2026-11-24T14:16:03.250Z")
    }

    @Test("dates before 1582 are proleptic Gregorian, as ISO 8601 and JSON readers mean them")
    func distantPastIsGregorian() {
        // Foundation's calendar says 0001-01-01 (Julian); the same instant is two days
        // earlier in the Gregorian calendar.
        #expect(InstantText.format(.distantPast) == "0000-12-30T00:00:00.000Z")
        #expect(InstantText.format(.distantFuture) == "4001-01-01T00:00:00.000Z")
        #expect(InstantText.format(Date(timeIntervalSince1970: -62_198_755_200 - 86_400 * 365)) == "-0002-01-01T00:00:00.000Z")
    }

    @Test("what is written reads back to the same instant, in any year")
    func roundTrips() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2_000 {
            let milliseconds = Int64.random(in: -400_000_000_000_000...3_000_000_000_000_000, using: &generator)
            let date = Date(timeIntervalSince1970: Double(milliseconds) / 1000)
            let text = InstantText.format(date)
            let back = InstantText.parse(text)
            #expect(back.map { Int64(($0.timeIntervalSince1970 * 1000).rounded()) } == milliseconds, "\(text)")
        }
        #expect(InstantText.parse(InstantText.format(.distantPast)) == .distantPast)
    }

    @Test("offsets, a date alone and a time without a zone are read; impossible dates are not")
    func parsesVariants() {
        let instant = InstantText.parse("2026-11-24T14:16:03Z")
        #expect(instant != nil)
        #expect(InstantText.parse("2026-11-24T15:16:03+01:00") == instant)
        #expect(InstantText.parse("2026-11-24T09:16:03-0500") == instant)
        #expect(InstantText.parse("2026-11-24T14:16:03") == instant)
        #expect(InstantText.parse("2026-11-24") == InstantText.parse("2026-11-24T00:00:00.000Z"))
        for bad in ["2026-02-29", "2026-13-01", "2026-11-24T24:00:00Z", "24/11/2026", "2026-11-24T14:16:03Zjunk", ""] {
            #expect(InstantText.parse(bad) == nil, "\(bad)")
        }
        #expect(InstantText.parse("2024-02-29") != nil)
    }
}
