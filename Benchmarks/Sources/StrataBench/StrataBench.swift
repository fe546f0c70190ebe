// strata-bench: the workloads of WORKLOAD.md on Strata and its peers, in one run.
//
//   swift run -c release strata-bench                          # W1–W3, every engine, N = 1,000,000
//   swift run -c release strata-bench --records 100000 --engines strata,sqlite --json out.json
import ArgumentParser
import Foundation
import StrataEngine

@main
struct StrataBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "strata-bench",
        abstract: "Runs the WORKLOAD.md workloads on Strata, SQLite, GRDB, LMDB and LevelDB in one run and prints figures and ratios.",
        discussion: """
            Progress goes to stderr, the table to stdout. Every engine's reads are checked against \
            the data set (counts and a digest of every field read); a mismatch stops the run.
            Ops: W1 insert.batch, write.amplification, insert.single-tx, get, get.fetchOne (GRDB), \
            get.threads2 and get.threads4 (key-value engines), get.batched (key-value engines: the ids handed over 64 at a time, Strata walking each \
            batch down its tree together, LMDB and LevelDB looking each up), get.in (typed engines and GRDB: 64 ids per query, \
            `.in(\\.id, ids)` and `WHERE id IN (...)`), get.reopened (get after closing and opening the file), scan.filter, \
            scan.filter.threads2 and scan.filter.threads4 (key-value engines: the key range split among 2 and 4 threads, each in \
            its own read transaction), scan.index, \
            update, commit.durable, commit.durable.threads2 and commit.durable.threads4 (key-value engines: the same one-record \
            durable transactions from 2 and 4 threads at once), reopen, open.after-crash (ms to open a file whose loading process was \
            killed halfway; the acknowledged records verified), compact.beside-writer (strata: compaction while a thread commits, with compact.writer-pause, compact.worst-commit and compact.commits-beside), checkpoint.worst-commit (strata: the slowest one-record durable commit across an automatic checkpoint of the tree the update phase changed, with checkpoint.worst-commit-alone and, when it was written beside the writer, checkpoint.writer-pause), compact.background-pause (strata: the longest time its background compactions held the insert.batch load's writer back at once), memory.peak, size (as the workload left the file), size.settled (strata: once its background compaction, if one is running, has finished), size.compacted; W2 insert.batch, get, scan.filter, \
            size, size.compacted; W3 persist, read all, read pinned by id; W4 (the notes app: strata-typed, GRDB, \
            SQLite) insert, notebook page newest first, first page by tag, top-50 by priority, count by two fields, \
            keyset paging; live: latency in-process and \
            cross-process (median, p99: from the start of a commit to the observer's first result showing it), commits with \
            0, 1 and 100 observers.
            """)

    @Option(help: """
        W1's record count N (W2 uses N/10 documents, W3 N/100 dialogs of 50 messages, at most 10,000). \
        Several, comma-separated (100000,1000000,10000000), run W1 at each size and the other workloads at the first.
        """)
    var records = "1000000"

    /// The sizes `--records` lists.
    private var sizes: [Int] { list(records).compactMap { Int($0.replacingOccurrences(of: "_", with: "")) } }

    @Option(help: "Comma-separated workloads: W1, W2, W3, W4, live.")
    var workloads = "W1,W2,W3,W4,live"

    @Option(help: "Comma-separated engines: \(EngineKind.allCases.map(\.rawValue).joined(separator: ",")).")
    var engines = EngineKind.allCases.map(\.rawValue).joined(separator: ",")

    @Option(help: "Comma-separated ops to report (default: all).")
    var ops = ""

    @Option(help: "Where database files go (default: a new temporary directory on the local disk).")
    var dir: String?

    @Flag(help: "Leave the database files in --dir (for storedump).")
    var keep = false

    @Option(help: "Also write the results as JSON to this path.")
    var json: String?

    @Option(help: "The PostgreSQL server for W3 (skipped, saying so, when none answers).")
    var postgres = ProcessInfo.processInfo.environment["STRATA_POSTGRES_URL"] ?? "postgres://strata:strata@localhost:5432/strata_test"

    @Flag(help: "Strata's engine without background compaction (Options.autoCompaction = nil), to weigh what it costs.")
    var noAutoCompaction = false

    @Option(help: "Strata's engine with this Options.checkpointLogBytes (default 64 MiB), to weigh recovery time against bytes written.")
    var checkpointLogBytes: UInt64?

    @Option(help: "Strata's engine with this Options.checkpointLogBytesLimit (default four times checkpointLogBytes: 256 MiB), the most log a checkpoint lets pass on a large store; set it to checkpointLogBytes for a fixed interval.")
    var checkpointLogBytesLimit: UInt64?

    @Option(help: "Strata's engine with this Options.writeBufferEntries, or off for no write buffer (default: the engine's, 65536), to weigh buffered writes against reads.")
    var writeBuffer: String?

    @Option(help: "Where Strata's write buffer is merged into its tree: writer (in the commit that filled it) or background (beside the writer, the engine's default).")
    var writeBufferMerges: String?

    @Option(help: "How long after the last commit Strata merges its write buffers into their trees (Options.writeBufferIdleMerge): milliseconds, or off (default: the engine's, 50).")
    var writeBufferIdleMerge: String?

    @Option(help: "Strata's engine with this Options.backgroundCheckpoints (never, sparse, always; default sparse), to weigh checkpoints written beside the writer.")
    var backgroundCheckpoints: String?

    @Flag(help: "Skip measuring the machine's limits.")
    var noLimits = false

    @Flag(help: "No progress on stderr.")
    var quiet = false

    @Flag(help: "Print where Strata's memory goes to stderr every two seconds (resident set, malloc, cache, kept leaves).")
    var traceMemory = false

    @Option(help: .hidden)
    var follow: String?

    @Option(help: .hidden)
    var followTicks: Int64 = 0

    /// ENGINE:DIRECTORY: load W1 there until killed (the child of open.after-crash).
    @Option(help: .hidden)
    var crashLoad: String?

    @Option(help: .hidden)
    var crashRecords = 0

    /// PATH: open a Strata file read-only (its log replayed, nothing written) and print how
    /// long that took: for profiling the replay on a file a killed `--crash-load` left.
    @Option(help: .hidden)
    var timeOpen: String?

    static let checkpointPolicies: [String: Database.BackgroundCheckpoints] = [
        "never": .never, "sparse": .whenCommitsAreSparse, "always": .always]

    func validate() throws {
        let sizes = self.sizes
        guard !sizes.isEmpty, sizes.count == list(records).count, sizes.allSatisfy({ $0 >= 100 }) else {
            throw ValidationError("--records takes record counts of at least 100, comma-separated: '\(records)'")
        }
        for name in list(engines) where EngineKind(rawValue: name) == nil {
            throw ValidationError("unknown engine '\(name)'; known: \(EngineKind.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        if let backgroundCheckpoints, Self.checkpointPolicies[backgroundCheckpoints] == nil {
            throw ValidationError("unknown --background-checkpoints '\(backgroundCheckpoints)'; known: never, sparse, always")
        }
        for workload in list(workloads) where !["W1", "W2", "W3", "W4", "live"].contains(workload) {
            throw ValidationError("unknown workload '\(workload)'; known: W1, W2, W3, W4, live")
        }
    }

    func run() throws {
        // The observing process of the live ops' cross-process latency.
        if let follow { return try Live.follow(follow, ticks: followTicks, postgresURL: postgres) }
        if let checkpointLogBytes { StrataKV.checkpointLogBytes = checkpointLogBytes }
        if let checkpointLogBytesLimit { StrataKV.checkpointLogBytesLimit = checkpointLogBytesLimit }
        if let writeBuffer {
            guard let setting = StrataKV.WriteBufferSetting(writeBuffer) else {
                throw ValidationError("--write-buffer takes off or a number of entries, not \(writeBuffer)")
            }
            StrataKV.writeBuffer = setting
        }
        if let writeBufferMerges {
            guard ["writer", "background"].contains(writeBufferMerges) else {
                throw ValidationError("--write-buffer-merges takes writer or background, not \(writeBufferMerges)")
            }
            StrataKV.mergesWriteBufferInBackground = writeBufferMerges == "background"
        }
        if let backgroundCheckpoints { StrataKV.backgroundCheckpoints = Self.checkpointPolicies[backgroundCheckpoints] }
        if let writeBufferIdleMerge {
            if writeBufferIdleMerge == "off" {
                StrataKV.writeBufferIdleMerge = .some(nil)
            } else if let milliseconds = Int(writeBufferIdleMerge), milliseconds >= 0 {
                StrataKV.writeBufferIdleMerge = .milliseconds(milliseconds)
            } else {
                throw ValidationError("--write-buffer-idle-merge takes off or a number of milliseconds, not \(writeBufferIdleMerge)")
            }
        }
        // The loader open.after-crash kills.
        if let crashLoad { return try CrashLoad.load(crashLoad, records: crashRecords) }
        if let timeOpen { return try StrataKV.timeReadOnlyOpen(timeOpen) }
        if noAutoCompaction { StrataKV.autoCompaction = nil }
        if traceMemory { MemoryTrace.start() }
        let directory = dir ?? NSTemporaryDirectory() + "strata-bench-\(ProcessInfo.processInfo.processIdentifier)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let progress = Progress(enabled: !quiet)
        let command = "strata-bench " + CommandLine.arguments.dropFirst().joined(separator: " ")
        let records = sizes[0]
        let runner = Runner(records: records, engines: list(engines).compactMap(EngineKind.init), ops: Set(list(ops)),
                            directory: directory, progress: progress,
                            report: Report(machine: .current(), records: records, command: command))
        runner.keep = keep
        runner.postgresURL = postgres
        defer { if !keep && dir == nil { try? FileManager.default.removeItem(atPath: directory) } }

        let selected = list(workloads)
        if !noLimits { runner.report.limits = try Limits.measure(in: directory, scale: min(1, Double(records) / 1_000_000), progress: progress) }
        if selected.contains("W1") {
            for size in sizes { try runner.runW1(records: size, label: sizes.count == 1 ? "W1" : "W1 N=\(shortCount(size))") }
        }
        if selected.contains("W2") { try runner.runW2() }
        if selected.contains("W3") { try runner.runW3() }
        if selected.contains("W4") { try runner.runW4() }
        if selected.contains("live") { try runner.runLive() }

        print(runner.report.table())
        if let json { try runner.report.writeJSON(to: json) }
        if keep { progress.note("database files kept in \(directory)") }
    }

    /// 100000 → "100k", 10000000 → "10M", 1500 → "1500".
    private func shortCount(_ n: Int) -> String {
        n % 1_000_000 == 0 ? "\(n / 1_000_000)M" : n % 1_000 == 0 ? "\(n / 1_000)k" : "\(n)"
    }

    private func list(_ option: String) -> [String] {
        option.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }
}
