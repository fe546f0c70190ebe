import Foundation
import StrataEngine
import Strata

/// Printing helpers: aligned tables for people, JSON for scripts, errors on stderr.
enum Output {
    static func table(_ header: [String], _ rows: [[String]]) {
        let widths = header.indices.map { column in
            ([header[column]] + rows.map { column < $0.count ? $0[column] : "" }).map(\.count).max() ?? 0
        }
        func line(_ cells: [String]) -> String {
            cells.enumerated().map { i, cell in
                i == cells.count - 1 ? cell : cell.padding(toLength: widths[i], withPad: " ", startingAt: 0)
            }.joined(separator: "  ")
        }
        print(line(header))
        for row in rows { print(line(row)) }
    }

    static func json<T: Encodable>(_ value: T) throws {
        print(try InspectionJSON.encode(value, pretty: true))
    }

    static func error(_ message: String) {
        FileHandle.standardError.write(Data("storedump: \(message)\n".utf8))
    }

    /// Progress on stderr, only when stderr is a terminal.
    static func progress(_ label: String, _ done: UInt64, _ total: UInt64) {
        guard isatty(2) == 1, total > 0 else { return }
        let percent = Int(done * 100 / total)
        FileHandle.standardError.write(Data("\r\(label) \(percent)%".utf8))
        if done >= total { FileHandle.standardError.write(Data("\r\u{1B}[K".utf8)) }
    }

    static func bytes(_ n: UInt64) -> String {
        n < 10_000 ? "\(n) B" : n < 10_000_000 ? String(format: "%.1f KiB", Double(n) / 1024) : String(format: "%.1f MiB", Double(n) / 1_048_576)
    }

    static func date(_ d: Date) -> String { InstantText.format(d) }
}
