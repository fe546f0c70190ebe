// Runs the workloads of WORKLOAD.md on each engine, verifying every result.
import BenchmarkSupport
import Foundation
import StrataPostgres
import StrataSQLite
import Strata
import StrataDAO
import StrataExamples

final class Runner {
    let records: Int
    let engines: [EngineKind]
    /// Ops to run; empty runs all.
    let ops: Set<String>
    let directory: String
    let progress: Progress
    var report: Report

    init(records: Int, engines: [EngineKind], ops: Set<String>, directory: String, progress: Progress, report: Report) {
        (self.records, self.engines, self.ops, self.directory, self.progress, self.report) = (records, engines, ops, directory, progress, report)
    }

    func wants(_ op: String) -> Bool { ops.isEmpty || ops.contains(op) }

    /// A fresh directory for one engine's files in one workload.
    func engineDirectory(_ workload: String, _ engine: String, _ suffix: String = "") throws -> String {
        let path = "\(directory)/\(workload)-\(engine)\(suffix)"
        try? FileManager.default.removeItem(atPath: path)
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// W1's N while a run of several sizes measures one: stored with each figure.
    private var scalingRecords: Int?

    func record(_ workload: String, _ op: String, _ engine: String, _ value: Double, _ unit: String) {
        report.results.append(Measurement(workload: workload, op: op, engine: engine, value: value, unit: unit, records: scalingRecords))
    }

    /// Times `body`, records `count / seconds` in `unit`, and checks its checksum. An op
    /// later ops depend on (it loads or changes the data) runs even when not reported.
    ///
    /// A `repeated` op (one that only reads, so each run sees the same data) runs
    /// `RepeatedRuns.plan` times and records the median: a scan of 1M records takes 50–200
    /// ms here, and one such run moved ±50% between runs of the whole benchmark on this VM.
    func measure(_ workload: String, _ op: String, _ engine: String, count: Int, unit: String,
                 expect: Checksum? = nil, alwaysRuns: Bool = false, repeated: Bool = false,
                 _ body: () throws -> Checksum?) throws {
        let reported = wants(op)
        guard reported || alwaysRuns else { return }
        progress.begin("\(workload) \(engine) \(op)")
        var runs = RepeatedRuns(repeated: repeated)
        repeat {
            var result: Checksum?
            let seconds = try time { result = try body() }
            if let expect, result != expect {
                throw BenchError("\(workload) \(engine) \(op) read \(result.map(String.init(describing:)) ?? "nothing"), expected \(expect)")
            }
            runs.add(seconds)
        } while runs.wantsAnother
        let seconds = runs.median
        let value = unit == "ms" ? seconds * 1000 : Double(count) / seconds
        if reported { record(workload, op, engine, value, unit) }
        progress.end("\(format(value)) \(unit)\(expect == nil ? "" : ", verified")\(runs.summary)")
    }

    /// Bytes of the files under `path`.
    func size(of path: String) -> Double {
        let files = FileManager.default.enumerator(atPath: path)?.compactMap { $0 as? String } ?? []
        return files.reduce(0.0) { total, file in
            let attributes = try? FileManager.default.attributesOfItem(atPath: path + "/" + file)
            guard attributes?[.type] as? FileAttributeType == .typeRegular else { return total }
            return total + Double((attributes?[.size] as? NSNumber)?.int64Value ?? 0)
        }
    }

    // MARK: W1

    /// W1 on N = `records` users, reported under `label` ("W1", or "W1 N=…" when several
    /// sizes run).
    func runW1(records: Int, label: String) throws {
        progress.note("\(label): generating \(records) users")
        scalingRecords = label == "W1" ? nil : records
        defer { scalingRecords = nil }
        var data = W1Data(records: records, lookups: records, updates: min(100_000, records), durableCommits: 1_000)
        let inserted = data.usersInInsertOrder
        let expectedGet = data.expectedGet(), expectedFilter = data.expectedAgeFilter()
        data.applyUpdates()
        let expectedAll = data.expectedAll()

        // What the engines are asked to store: W1's binary record and its 8-byte key, the
        // bytes the key-value engines hold (the denominator of write amplification).
        let committedBytes = Double(inserted.reduce(0) { total, user in
            var bytes: [UInt8] = []
            BinaryUser.encode(user, into: &bytes)
            return total + bytes.count + 8
        })
        for kind in engines {
            let name = kind.rawValue
            ProcessStats.resetPeakResident()
            let residentBefore = ProcessStats.resident()?.current
            if wants("insert.batch") {
                let scratch = try engineDirectory(label, name, "-batch")
                let written = ProcessStats.bytesWritten()
                let engine = try kind.makeW1(directory: scratch)
                try measure(label, "insert.batch", name, count: inserted.count, unit: "records/s") {
                    try engine.insert(inserted, transactionSize: 1_000, progress: progress); return nil
                }
                if wants("get.after-batch") {
                    // Lookups in what a load in small transactions leaves, before the file
                    // closes: Strata's write buffer still holds runs, LevelDB its memtable
                    // and level-0 files. The other read ops use the single-transaction
                    // load's file, whose writes all went into the tree.
                    try measure(label, "get.after-batch", name, count: data.lookups.count, unit: "lookups/s", expect: expectedGet,
                                repeated: true) {
                        try engine.get(data.lookups, progress: progress)
                    }
                }
                if wants("compact.background-pause"), let hold = engine.longestBackgroundHold {
                    record(label, "compact.background-pause", name, milliseconds(hold.pause), "ms")
                    progress.note("\(label) \(name) the background compaction's longest hold: \(hold.parts)")
                }
                try engine.close()
                // Closing waits for background work (LevelDB's compactions) the load caused.
                if wants("write.amplification"), let written, let after = ProcessStats.bytesWritten() {
                    record(label, "write.amplification", name, (after - written) / committedBytes, "×")
                }
                try FileManager.default.removeItem(atPath: scratch)
            }
            try measureOpenAfterCrash(label, kind, inserted: inserted)
            let path = try engineDirectory(label, name)
            let engine = try kind.makeW1(directory: path)
            try measure(label, "insert.single-tx", name, count: inserted.count, unit: "records/s", alwaysRuns: true) {
                try engine.insert(inserted, transactionSize: inserted.count, progress: progress); return nil
            }

            try measure(label, "get", name, count: data.lookups.count, unit: "lookups/s", expect: expectedGet, repeated: true) {
                try engine.get(data.lookups, progress: progress)
            }
            for variant in engine.getVariants {
                try measure(label, variant.op, name, count: data.lookups.count, unit: "lookups/s", expect: expectedGet, repeated: true) {
                    try variant.run(data.lookups, progress)
                }
            }
            if wants("get.reopened") {
                // What an app sees after launch: the file closed and opened again, so every
                // page is read, checked and decoded (or mapped) on first use, then looked
                // up through the engine's page cache rather than held by the writer.
                try engine.reopen()
                try measure(label, "get.reopened", name, count: data.lookups.count, unit: "lookups/s", expect: expectedGet) {
                    try engine.get(data.lookups, progress: progress)
                }
            }
            try measure(label, "scan.filter", name, count: inserted.count, unit: "records/s", expect: expectedFilter, repeated: true) {
                try engine.scanFilter(ages: W1Data.ageRange)
            }
            for variant in engine.scanVariants {
                try measure(label, variant.op, name, count: inserted.count, unit: "records/s", expect: expectedFilter, repeated: true) {
                    try variant.run(W1Data.ageRange, 0 ..< Int64(records))
                }
            }
            progress.begin("\(label) \(name) building the age index")
            try engine.createAgeIndex()
            progress.end("done")
            let queries = max(1, min(5, 5_000_000 / max(records, 1)))
            try measure(label, "scan.index", name, count: queries, unit: "queries/s", expect: expectedFilter, repeated: true) {
                var last: Checksum?
                for _ in 0 ..< queries { last = try engine.queryAgeIndex(ages: W1Data.ageRange) }
                return last
            }
            // update and commit.durable change the data: they always run, so the check after them holds.
            try measure(label, "update", name, count: data.updates.count, unit: "updates/s", alwaysRuns: true) {
                try engine.update(data.updates, transactionSize: 1_000, progress: progress); return nil
            }
            try measureDurableCommits(label, name, engine, users: data.durableUsers, directory: path)
            // The same records written again as they are, so the check after them still holds.
            for variant in engine.commitVariants {
                try measure(label, variant.op, name, count: data.durableUsers.count, unit: "tx/s") {
                    try variant.run(data.durableUsers); return nil
                }
            }

            try measureCommitsAcrossCheckpoint(label, name, engine, users: data.durableUsers, updates: data.updates)

            try verify(label, name, expectedAll) { try engine.scanAll() }
            if wants("reopen") {
                try engine.reopen()   // the first reopen may flush; time the next ones
                var times: [Double] = []
                progress.begin("\(label) \(name) reopen")
                for _ in 0 ..< 5 { times.append(try time { try engine.reopen() } * 1000) }
                let median = times.sorted()[times.count / 2]
                record(label, "reopen", name, median, "ms")
                progress.end(String(format: "%.3f ms (median of 5 close+open)", median))
                try verify(label, name + " after reopen", expectedAll) { try engine.scanAll() }
            }
            if wants("memory.peak"), let residentBefore, let peak = ProcessStats.resident()?.peak {
                record(label, "memory.peak", name, max(0, peak - residentBefore), "bytes")
            }
            // Compacting beside a writer comes after the file's size as the workload left it.
            try recordSizes(label, name, path: path, compact: { try engine.compact() }, close: { try engine.close() },
                            settle: { try engine.settle() }) {
                try measureCompactionBesideWriter(label, name, engine, users: data.durableUsers, expected: expectedAll)
            }
            if !keep { try FileManager.default.removeItem(atPath: path) }
        }
    }

    /// `commit.durable`, one durable transaction per user, and `commit.durable.limit`, the
    /// preallocated write+fdatasync limit, measured in turns: a slice of 100 commits, then
    /// 100 synced 4 KiB writes in the engine's directory, and so on, each rate from its
    /// summed time. The disk's sync rate here drifts up to 2× within a run, over seconds:
    /// measured once before and once after the commits (as until session 40), the ratio of
    /// the same binary ranged 0.72–0.85; in turns, both see the same minute of the disk.
    func measureDurableCommits(_ label: String, _ name: String, _ engine: W1Engine, users: [User], directory: String) throws {
        guard wants("commit.durable") else { return try engine.insert(users, transactionSize: 1, progress: Progress(enabled: false)) }
        let path = directory + "/sync-limit.bin"
        defer { unlink(path) }
        progress.begin("\(label) \(name) commit.durable")
        var commitSeconds = 0.0, limitSeconds = 0.0
        for start in stride(from: 0, to: users.count, by: 100) {
            let slice = Array(users[start ..< min(start + 100, users.count)])
            commitSeconds += try time { try engine.insert(slice, transactionSize: 1, progress: Progress(enabled: false)) }
            limitSeconds += try Limits.syncSeconds(path, count: slice.count, preallocated: true)
            progress.update(start + slice.count, of: users.count)
        }
        let commits = Double(users.count) / commitSeconds, limit = Double(users.count) / limitSeconds
        record(label, "commit.durable", name, commits, "tx/s")
        record(label, "commit.durable.limit", name, limit, "tx/s")
        progress.end("\(format(commits)) tx/s, \(format(limit)) syncs/s beside it")
    }

    /// `checkpoint.worst-commit` and its companions: one-record durable commits across an
    /// automatic checkpoint of a tree the update phase's changes left unwritten.
    func measureCommitsAcrossCheckpoint(_ label: String, _ name: String, _ engine: W1Engine, users: [User],
                                        updates: [(id: Int64, score: Double)]) throws {
        guard wants("checkpoint.worst-commit") else { return }
        progress.begin("\(label) \(name) committing across a checkpoint")
        guard let across = try engine.commitAcrossCheckpoint(users, dirtying: updates, progress: progress) else {
            return progress.end("not supported")
        }
        record(label, "checkpoint.worst-commit", name, across.worstCommitMs, "ms")
        record(label, "checkpoint.worst-commit-alone", name, across.worstCommitAloneMs, "ms")
        if across.inBackground { record(label, "checkpoint.writer-pause", name, across.writerPauseMs, "ms") }
        let how = across.inBackground ? String(format: "written beside the writer, which it held %.1f ms", across.writerPauseMs)
            : "written holding the writer"
        progress.end(String(format: "the slowest of %d commits %.1f ms (%.1f ms with no checkpoint due); ", across.commits,
                            across.worstCommitMs, across.worstCommitAloneMs) + how)
    }

    /// `compact.beside-writer` and its companions: compaction while a thread commits.
    func measureCompactionBesideWriter(_ label: String, _ name: String, _ engine: W1Engine, users: [User], expected: Checksum) throws {
        guard wants("compact.beside-writer") else { return }
        progress.begin("\(label) \(name) compacting beside a committing thread")
        guard let online = try engine.compactBesideWriter(users) else { return progress.end("not supported") }
        record(label, "compact.beside-writer", name, online.seconds * 1000, "ms")
        record(label, "compact.writer-pause", name, online.writerPauseMs, "ms")
        record(label, "compact.worst-commit", name, online.worstCommitMs, "ms")
        record(label, "compact.worst-commit-alone", name, online.worstCommitAloneMs, "ms")
        record(label, "compact.commits-beside", name, Double(online.commits), "commits")
        progress.end(String(format: "%.0f ms; %d commits beside it (%d carried over), the slowest %.1f ms (%.1f ms alone); writers paused %.2f ms",
                            online.seconds * 1000, online.commits, online.carriedOver, online.worstCommitMs,
                            online.worstCommitAloneMs, online.writerPauseMs))
        try verify(label, name + " after compacting beside a writer", expected) { try engine.scanAll() }
    }

    var keep = false
    /// The PostgreSQL server W3 runs on (TCP: the tests' role and database by default).
    var postgresURL = "postgres://strata:strata@localhost:5432/strata_test"

    func verify(_ workload: String, _ engine: String, _ expected: Checksum, _ read: () throws -> Checksum) throws {
        progress.begin("\(workload) \(engine) verifying every record")
        let found = try read()
        guard found == expected else { throw BenchError("\(workload) \(engine) holds \(found), expected \(expected)") }
        progress.end("\(expected.count) records, verified")
    }

    /// `size` as the workload left the files, `size.settled` once the compaction the engine
    /// runs on its own has finished (engines whose `settle` can wait for it), then
    /// `size.compacted` after the engine's explicit compaction; `beforeCompacting` runs after
    /// the first two are recorded.
    func recordSizes(_ workload: String, _ engine: String, path: String, compact: () throws -> Bool, close: () throws -> Void,
                     settle: () throws -> Bool = { false }, beforeCompacting: () throws -> Void = {}) throws {
        if wants("size") {
            record(workload, "size", engine, size(of: path), "bytes")
            if try settle() { record(workload, "size.settled", engine, size(of: path), "bytes") }
        }
        try beforeCompacting()
        guard wants("size") else { return try close() }
        progress.begin("\(workload) \(engine) compacting")
        let compacted = try compact()
        try close()
        if compacted { record(workload, "size.compacted", engine, size(of: path), "bytes") }
        progress.end(compacted ? format(size(of: path)) + " bytes" : "no compaction")
    }

    // MARK: W2

    func runW2() throws {
        let count = max(100, records / 10)
        progress.note("W2: generating \(count) documents")
        let data = W2Data(records: count, lookups: count)
        let inserted = data.documentsInInsertOrder
        for kind in engines {
            let name = kind.rawValue
            let path = try engineDirectory("W2", name)
            let engine = try kind.makeW2(directory: path)
            try measure("W2", "insert.batch", name, count: count, unit: "records/s", alwaysRuns: true) {
                try engine.insert(inserted, transactionSize: 1_000, progress: progress); return nil
            }
            try measure("W2", "get", name, count: data.lookups.count, unit: "lookups/s", expect: data.expectedGet(), repeated: true) {
                try engine.get(data.lookups, progress: progress)
            }
            try measure("W2", "scan.filter", name, count: count, unit: "records/s", expect: data.expectedTagFilter(), repeated: true) {
                try engine.scanFilter(tag: data.filterTag)
            }
            try recordSizes("W2", name, path: path, compact: { try engine.compact() }, close: { try engine.close() })
            if !keep { try FileManager.default.removeItem(atPath: path) }
        }
    }

    // MARK: W3

    /// The DAO path on each backend that implements `Storage`: Strata, memory (for scale),
    /// SQLite through GRDB and PostgreSQL (when a server answers at `postgresURL`).
    func runW3() throws {
        let count = max(100, min(10_000, records / 100))
        let plains = W3.dialogs(count)
        let pinned = plains.filter(\.isPinned).map(\.id)
        // Memory is the reference for what the layers cost; Strata runs when strata-typed is selected.
        for backend in W3.backends + ["sqlite", "postgres"] where backend == "memory" || engines.contains(.strataTyped) {
            let name = backend == "strata" ? "strata-typed" : backend
            let path = try engineDirectory("W3", name)
            let storage: AnyStorage
            switch backend {
            case "sqlite": storage = AnyStorage(try SQLiteStorage(path: path + "/w3.sqlite"))
            case "postgres":
                do {
                    storage = AnyStorage(try PostgresStorage(url: postgresURL, schema: "w3_\(UInt32.random(in: 0 ... .max))"))
                    _ = try storage.count(DialogModel.self)
                } catch {
                    print("W3 postgres: skipped, no server at \(postgresURL): \(error)")
                    continue
                }
            default: storage = try W3.storage(backend, directory: path)
            }
            let dao = DAO(storage: storage, translator: DialogTranslator())
            let messages = count * W3.messagesPerDialog
            try measure("W3", "persist", name, count: count + messages, unit: "records/s") {
                try dao.persist(plains); return nil
            }
            try measure("W3", "read all", name, count: count + messages, unit: "records/s", repeated: true) {
                let all = try dao.read()
                guard all.count == count, all.allSatisfy({ $0.messages.count == W3.messagesPerDialog }) else {
                    throw BenchError("W3 \(name) read \(all.count) dialogs, expected \(count) of \(W3.messagesPerDialog) messages")
                }
                return nil
            }
            try measure("W3", "read pinned by id", name, count: pinned.count, unit: "dialogs/s", repeated: true) {
                let found = try dao.read(predicatedBy: #Predicate { $0.isPinned == true }, orderedBy: \.id).map(\.id)
                guard found == pinned else { throw BenchError("W3 \(name) read \(found.count) pinned dialogs, expected \(pinned.count)") }
                return nil
            }
            try? storage.close()
            if !keep { try FileManager.default.removeItem(atPath: path) }
        }
    }
}
