import Foundation

/// Instants as ISO 8601 text in UTC, `2026-11-24T14:16:03.250Z`, in the proleptic Gregorian
/// calendar: every JSON and text output of Strata spells dates this way, and every date
/// Strata reads as text (keys in `storedump get`, literals in `find`) is read this way.
///
/// Foundation's formatters switch to the Julian calendar before 1582, so
/// `Date.distantPast` comes out as `0001-01-01` although ISO 8601 (and every JSON reader)
/// means that text in the Gregorian calendar, two days later: a value written that way does
/// not read back to the same instant. Here the calendar arithmetic is done directly (days
/// from the civil date, as in Howard Hinnant's `chrono` algorithms), for any year.
package enum InstantText {
    /// `YYYY-MM-DDTHH:MM:SS.mmmZ`, rounded to the millisecond; years outside 0000…9999 are
    /// written with a sign and at least four digits (`-0044-03-15…`, `+12000-01-01…`).
    package static func format(_ date: Date) -> String {
        let milliseconds = (date.timeIntervalSince1970 * 1000).rounded()
        guard milliseconds.isFinite, abs(milliseconds) < 1e17 else { return "\(date.timeIntervalSince1970)" }
        let total = Int64(milliseconds)
        let (days, millisecondOfDay) = floorDivision(total, 86_400_000)
        let (year, month, day) = civil(fromDays: days)
        let seconds = millisecondOfDay / 1000
        var text = year >= 0 && year <= 9999 ? pad(year, 4) : (year < 0 ? "-" : "+") + pad(abs(year), 4)
        text += "-" + pad(month, 2) + "-" + pad(day, 2)
        text += "T" + pad(seconds / 3600, 2) + ":" + pad(seconds / 60 % 60, 2) + ":" + pad(seconds % 60, 2)
        return text + "." + pad(millisecondOfDay % 1000, 3) + "Z"
    }

    /// Reads `YYYY-MM-DD`, optionally followed by `THH:MM[:SS[.fraction]]` and `Z` or
    /// `±HH:MM` (a date alone is midnight UTC; a time without a zone is UTC). Nil for
    /// anything else, or a field out of range.
    package static func parse(_ text: String) -> Date? {
        var scanner = Scanner(Array(text.utf8))
        let negative = scanner.take("-")
        if !negative { _ = scanner.take("+") }
        guard let yearDigits = scanner.digits(atLeast: 4, atMost: 9), scanner.take("-"),
              let month = scanner.digits(exactly: 2), scanner.take("-"), let day = scanner.digits(exactly: 2),
              (1...12).contains(month), (1...daysIn(month: month, year: negative ? -yearDigits : yearDigits)).contains(day)
        else { return nil }
        let year = negative ? -yearDigits : yearDigits
        var seconds = Double(days(fromCivil: year, month, day)) * 86_400
        if scanner.take("T") || scanner.take(" ") {
            guard let hour = scanner.digits(exactly: 2), scanner.take(":"), let minute = scanner.digits(exactly: 2),
                  hour < 24, minute < 60 else { return nil }
            seconds += Double(hour * 3600 + minute * 60)
            if scanner.take(":") {
                guard let second = scanner.digits(exactly: 2), second < 60 else { return nil }
                seconds += Double(second)
                if scanner.take(".") || scanner.take(",") {
                    guard let fraction = scanner.fraction() else { return nil }
                    seconds += fraction
                }
            }
            if scanner.take("Z") || scanner.take("z") {
            } else if let sign = scanner.sign() {
                guard let hours = scanner.digits(exactly: 2), hours < 24 else { return nil }
                _ = scanner.take(":")
                guard let minutes = scanner.digits(exactly: 2), minutes < 60 else { return nil }
                seconds -= Double(sign * (hours * 3600 + minutes * 60))
            }
        }
        guard scanner.atEnd else { return nil }
        return Date(timeIntervalSince1970: seconds)
    }

    // MARK: Calendar arithmetic (proleptic Gregorian, day 0 = 1970-01-01)

    /// The civil date of a day number.
    static func civil(fromDays days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shiftedMonth = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * shiftedMonth + 2) / 5 + 1
        let month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    /// The day number of a civil date.
    static func days(fromCivil year: Int64, _ month: Int64, _ day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    private static func daysIn(month: Int64, year: Int64) -> Int64 {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    private static func floorDivision(_ a: Int64, _ b: Int64) -> (quotient: Int64, remainder: Int64) {
        let quotient = a / b - (a % b < 0 ? 1 : 0)
        return (quotient, a - quotient * b)
    }

    private static func pad(_ value: Int64, _ width: Int) -> String {
        let digits = String(value)
        return digits.count >= width ? digits : String(repeating: "0", count: width - digits.count) + digits
    }

    /// Reads the text one ASCII byte at a time.
    private struct Scanner {
        let bytes: [UInt8]
        var index = 0
        init(_ bytes: [UInt8]) { self.bytes = bytes }

        var atEnd: Bool { index == bytes.count }

        mutating func take(_ character: Character) -> Bool {
            guard index < bytes.count, bytes[index] == character.asciiValue else { return false }
            index += 1
            return true
        }

        mutating func sign() -> Int64? {
            if take("+") { return 1 }
            if take("-") { return -1 }
            return nil
        }

        mutating func digits(exactly count: Int) -> Int64? { digits(atLeast: count, atMost: count) }

        mutating func digits(atLeast minimum: Int, atMost maximum: Int) -> Int64? {
            var value: Int64 = 0
            var count = 0
            while index < bytes.count, count < maximum, (48...57).contains(bytes[index]) {
                value = value * 10 + Int64(bytes[index] - 48)
                index += 1
                count += 1
            }
            return count >= minimum ? value : nil
        }

        /// Digits after the decimal point, as a fraction of a second.
        mutating func fraction() -> Double? {
            var value = 0.0, scale = 0.1
            let start = index
            while index < bytes.count, (48...57).contains(bytes[index]) {
                value += Double(bytes[index] - 48) * scale
                scale /= 10
                index += 1
            }
            return index > start ? value : nil
        }
    }
}
