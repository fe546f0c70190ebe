// What strata-bench reports: one table of figures and ratios on stdout, and the same in JSON.
import Foundation

struct Measurement: Codable {
    var workload: String
    var op: String
    var engine: String
    var value: Double
    var unit: String
    /// W1's N, when the run measured several sizes (`--records 100000,1000000`).
    var records: Int? = nil

    /// For times, sizes and amplification a smaller figure is better.
    var lowerIsBetter: Bool { unit == "ms" || unit == "µs" || unit == "bytes" || unit == "×" }
}

struct Machine: Codable {
    var os: String
    var cpu: String
    var cores: Int
    var memoryGiB: Double
    var swift: String
    var date: String

    static func current() -> Machine {
        let info = ProcessInfo.processInfo
        let cpu = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8))?
            .split(separator: "\n").first { $0.hasPrefix("model name") }?
            .split(separator: ":", maxSplits: 1).last?.trimmingCharacters(in: .whitespaces) ?? "unknown"
        #if compiler(>=6.3)
        let swift = "6.3"
        #else
        let swift = "6.x"
        #endif
        return Machine(os: info.operatingSystemVersionString, cpu: cpu, cores: info.activeProcessorCount,
                       memoryGiB: (Double(info.physicalMemory) / Double(1 << 30) * 10).rounded() / 10,
                       swift: swift, date: ISO8601DateFormatter().string(from: Date()))
    }
}

struct Report: Codable {
    var machine: Machine
    var records: Int
    var command: String
    var results: [Measurement] = []
    var limits: [Limit] = []
    /// Facts beside the figures (the plans W4's queries ran with, say), one line each.
    var notes: [String] = []

    /// Strata's figure set against a peer's, in the table's ratio section.
    static let comparisons: [(strata: String, peer: String)] = [
        ("strata", "sqlite"), ("strata", "lmdb"), ("strata", "leveldb"),
        ("strata-typed", "grdb"), ("strata-typed", "sqlite"), ("strata-typed", "strata"), ("strata-typed", "memory"),
        ("strata-typed-codable", "grdb"),
    ]

    func value(_ workload: String, _ op: String, _ engine: String) -> Double? {
        results.first { $0.workload == workload && $0.op == op && $0.engine == engine }?.value
    }

    /// The figures, then the ratios Strata / peer, then the limits: plain text for a terminal
    /// or a Markdown file (the tables are Markdown).
    func table() -> String {
        var out = "strata-bench: \(records) records; \(machine.cpu), \(machine.cores) cores, \(machine.memoryGiB) GiB; \(machine.date)\n"
        out += "command: \(command)\n"
        for workload in orderedUnique(results.map(\.workload)) {
            let rows = results.filter { $0.workload == workload }
            let ops = orderedUnique(rows.map(\.op))
            let engines = orderedUnique(rows.map(\.engine))
            out += "\n### \(workload)\n\n"
            var figures = [["op", "unit"] + engines]
            for op in ops {
                let unit = rows.first { $0.op == op }!.unit
                figures.append([op, unit + (rows.first { $0.op == op }!.lowerIsBetter ? " (lower is better)" : "")]
                               + engines.map { engine in value(workload, op, engine).map(format) ?? "—" })
            }
            out += markdownTable(figures)
            let pairs = Self.comparisons.filter { engines.contains($0.strata) && engines.contains($0.peer) }
            guard !pairs.isEmpty else { continue }
            out += "\nRatios, Strata / peer (above 1 is Strata ahead; for ms, µs, bytes and × below 1 is):\n\n"
            var ratios = [["op"] + pairs.map { "\($0.strata) / \($0.peer)" }]
            for op in ops {
                let cells = pairs.map { pair -> String in
                    guard let s = value(workload, op, pair.strata), let p = value(workload, op, pair.peer), p > 0 else { return "—" }
                    return String(format: "%.2f×", s / p)
                }
                if cells.contains(where: { $0 != "—" }) { ratios.append([op] + cells) }
            }
            out += markdownTable(ratios)
        }
        if !limits.isEmpty {
            out += "\n### Machine limits (same run)\n\n"
            out += markdownTable([["limit", "value"]] + limits.map { [$0.name, format($0.value) + " " + $0.unit] })
            out += fractionsOfLimits()
        }
        if !notes.isEmpty { out += "\n### Notes\n\n" + notes.map { "- " + $0 }.joined(separator: "\n") + "\n" }
        return out
    }

    /// Strata's figures as a fraction of the limits that bound them.
    func fractionsOfLimits() -> String {
        var lines: [String] = []
        func limit(_ name: String) -> Double? { limits.first { $0.name == name }?.value }
        for engine in ["strata", "strata-typed"] {
            guard let commits = value("W1", "commit.durable", engine) else { continue }
            // The limit measured in turns with the op when there is one (`commit.durable.limit`);
            // the run's start-of-run limits follow for comparison.
            var parts: [String] = []
            if let beside = value("W1", "commit.durable.limit", engine) {
                parts.append(String(format: "%.2f of write+fdatasync preallocated, measured in turns with it", commits / beside))
            }
            if let overwrite = limit(LimitName.overwriteSync), let append = limit(LimitName.appendSync) {
                parts.append(String(format: "%.2f of the start-of-run limit, %.2f of appending", commits / overwrite, commits / append))
            }
            if !parts.isEmpty { lines.append("\(engine) commit.durable: " + parts.joined(separator: "; ")) }
        }
        return lines.isEmpty ? "" : "\n" + lines.map { "- " + $0 }.joined(separator: "\n") + "\n"
    }

    func writeJSON(to path: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try encoder.encode(self).write(to: URL(fileURLWithPath: path))
    }
}

private func orderedUnique(_ items: [String]) -> [String] {
    var seen = Set<String>()
    return items.filter { seen.insert($0).inserted }
}

/// 1234567 → "1.23M", 0.153 → "0.153", bytes in MB.
func format(_ value: Double) -> String {
    switch abs(value) {
    case 1e9...: String(format: "%.2fG", value / 1e9)
    case 1e6...: String(format: "%.2fM", value / 1e6)
    case 1e4...: String(format: "%.1fk", value / 1e3)
    case 100...: String(format: "%.0f", value)
    case 1...: String(format: "%.2f", value)
    default: String(format: "%.3f", value)
    }
}

private func markdownTable(_ rows: [[String]]) -> String {
    let widths = (0 ..< rows[0].count).map { column in rows.map { $0[column].count }.max()! }
    func line(_ row: [String]) -> String {
        "| " + row.enumerated().map { $1.padding(toLength: widths[$0], withPad: " ", startingAt: 0) }.joined(separator: " | ") + " |"
    }
    let separator = "|" + widths.map { String(repeating: "-", count: $0 + 2) }.joined(separator: "|") + "|"
    return ([line(rows[0]), separator] + rows.dropFirst().map(line)).joined(separator: "\n") + "\n"
}
