// Live queries: how long a commit takes to reach an observer (in the committing process and
// in another one), and what observers cost the committer.
import Foundation
import Strata
import StrataPostgres
import StrataSQLite
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// What the live ops commit and observe: tick 1's counter moves with each commit.
struct Tick: Model, Equatable {
    var id: Int64
    var n: Int64
    static let collectionName = "bench.ticks"
    static let schema = Schema<Tick>(primaryKey: \.id)
}

/// CLOCK_MONOTONIC in nanoseconds: one clock for every process of the machine, so a time
/// taken in the committing process compares with one taken in the observing process.
func monotonicNanoseconds() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
}

enum Live {
    /// Where each backend of the live ops keeps its data: a file's path or a PostgreSQL schema.
    static func open(_ backend: String, at location: String, readOnly: Bool, postgresURL: String) throws -> AnyStorage {
        switch backend {
        case "strata-typed": AnyStorage(try StrataStorage(path: location, options: .init(readOnly: readOnly)))
        case "sqlite": AnyStorage(try SQLiteStorage(path: location))
        case "postgres": AnyStorage(try PostgresStorage(url: postgresURL, schema: location))
        case "memory": AnyStorage(try MemoryStorage())
        default: throw BenchError("no live backend '\(backend)'")
        }
    }

    /// When each tick number reached an observer (the first time).
    final class Deliveries: Sendable {
        private let times = Mutex<[Int64: UInt64]>([:])
        private let ready = DispatchSemaphore(value: 0)
        private let last = Mutex<Int64>(0)
        private let reachedTarget = DispatchSemaphore(value: 0)
        private let target: Int64

        init(until target: Int64) { self.target = target }

        func note(_ n: Int64?) {
            let now = monotonicNanoseconds()
            let n = n ?? 0
            let (first, reached) = times.withLock { times -> (Bool, Bool) in
                let first = times.isEmpty
                if times[n] == nil { times[n] = now }
                return (first, n == target)
            }
            if first { ready.signal() }
            if reached { reachedTarget.signal() }
        }

        /// Waits for the observer's first result.
        func waitUntilReady() { ready.wait() }

        /// Waits until tick `target` arrived, at most `seconds`; false on timeout.
        func waitForTarget(seconds: Double) -> Bool { reachedTarget.wait(timeout: .now() + seconds) == .success }

        var all: [Int64: UInt64] { times.withLock { $0 } }
    }

    /// Observes tick 1 on a task of its own, noting deliveries; returns once the first
    /// (current) result arrived. Cancel the task to stop.
    static func observe(_ storage: AnyStorage, into deliveries: Deliveries) -> Task<Void, Never> {
        let task = Task.detached {
            do {
                for try await tick in storage.observe(Tick.self, primaryKey: Int64(1)) { deliveries.note(tick?.n) }
            } catch {}
        }
        deliveries.waitUntilReady()
        return task
    }

    /// Commits ticks `numbers` one transaction each, `pace` seconds apart; returns when each
    /// commit started (the call to `write`), by number.
    static func commit(_ numbers: ClosedRange<Int64>, to storage: AnyStorage, pace: Double) throws -> [Int64: UInt64] {
        var started: [Int64: UInt64] = [:]
        for n in numbers {
            started[n] = monotonicNanoseconds()
            try storage.write { try $0.persist(Tick(id: 1, n: n)) }
            if pace > 0 { Thread.sleep(forTimeInterval: pace) }
        }
        return started
    }

    /// Latencies in microseconds from each commit's start to the first result that shows it
    /// (a result showing a later tick shows it too: coalescing delivers the newest state).
    /// From the start, not the return, of the commit: a reader in another process may see a
    /// Strata commit while the committer still waits for fdatasync.
    static func latencies(committed: [Int64: UInt64], delivered: [Int64: UInt64]) -> [Double] {
        let arrivals = delivered.sorted { $0.key < $1.key }
        return committed.compactMap { n, start -> Double? in
            guard let arrival = arrivals.first(where: { $0.key >= n })?.value else { return nil }
            return arrival > start ? Double(arrival - start) / 1000 : 0
        }.sorted()
    }

    static func percentile(_ sorted: [Double], _ p: Double) -> Double {
        guard !sorted.isEmpty else { return .nan }
        return sorted[min(sorted.count - 1, Int((Double(sorted.count) * p).rounded(.up)) - 1)]
    }

    /// The child process's side (`strata-bench --follow BACKEND:LOCATION --follow-ticks N`):
    /// observe tick 1 on a storage of its own, print "ready" after the first result, and,
    /// when tick N arrived (or 30 s passed), "delivered n:nanoseconds …".
    static func follow(_ spec: String, ticks: Int64, postgresURL: String) throws {
        let parts = spec.split(separator: ":", maxSplits: 1).map(String.init)
        guard parts.count == 2 else { throw BenchError("--follow takes BACKEND:LOCATION") }
        let storage = try open(parts[0], at: parts[1], readOnly: true, postgresURL: postgresURL)
        let deliveries = Deliveries(until: ticks)
        let task = observe(storage, into: deliveries)
        FileHandle.standardOutput.write(Data("ready\n".utf8))
        _ = deliveries.waitForTarget(seconds: 30)
        task.cancel()
        let line = deliveries.all.sorted { $0.key < $1.key }.map { "\($0.key):\($0.value)" }.joined(separator: " ")
        FileHandle.standardOutput.write(Data("delivered \(line)\n".utf8))
        // The observation ends before the storage closes and the process exits: a query it
        // started on another thread, still in SQLite as the process's destructors ran,
        // crashed this child once (CI, live sqlite).
        let ended = DispatchSemaphore(value: 0)
        Task.detached {
            await task.value
            ended.signal()
        }
        _ = ended.wait(timeout: .now() + 10)
        try? storage.close()
    }
}

extension Runner {
    /// The live-query ops on each backend: commit→result latency (median, p99) in the
    /// committing process and in another process, and commits/s with 0, 1 and 100 observers.
    func runLive() throws {
        let ticks = Int64(max(50, min(400, records / 5)))
        let commits = Int64(max(100, min(3000, records / 2)))
        for backend in ["strata-typed", "memory", "sqlite", "postgres"] where backend == "memory" || engines.contains(.strataTyped) {
            let path = try engineDirectory("live", backend)
            let location = switch backend {
            case "sqlite": path + "/live.sqlite"
            case "postgres": "live_\(UInt32.random(in: 0 ... .max))"
            default: path + "/live.strata"
            }
            let storage: AnyStorage
            do {
                storage = try Live.open(backend, at: location, readOnly: false, postgresURL: postgresURL)
                try storage.persist(Tick(id: 1, n: 0))
            } catch {
                print("live \(backend): skipped, \(error)")
                continue
            }
            if wants("latency in-process") {
                progress.begin("live \(backend) latency in-process")
                let deliveries = Live.Deliveries(until: ticks)
                let observer = Live.observe(storage, into: deliveries)
                let committed = try Live.commit(1 ... ticks, to: storage, pace: 0.002)
                _ = deliveries.waitForTarget(seconds: 30)
                observer.cancel()
                recordLatencies("in-process", backend, Live.latencies(committed: committed, delivered: deliveries.all))
            }
            if backend != "memory", wants("latency cross-process") {
                progress.begin("live \(backend) latency cross-process")
                let base = try storage.read(Tick.self, primaryKey: Int64(1))?.n ?? 0
                let latencies = try crossProcessLatencies(backend, location, ticks: base + 1 ... base + ticks, storage: storage)
                recordLatencies("cross-process", backend, latencies)
            }
            for observers in [0, 1, 100] {
                let op = "commits, \(observers) observer\(observers == 1 ? "" : "s")"
                guard wants(op) else { continue }
                let base = try storage.read(Tick.self, primaryKey: Int64(1))?.n ?? 0
                let all = (0 ..< observers).map { _ in Live.Deliveries(until: base + commits) }
                let tasks = all.map { Live.observe(storage, into: $0) }
                try measure("live", op, backend, count: Int(commits), unit: "commits/s") {
                    _ = try Live.commit(base + 1 ... base + commits, to: storage, pace: 0)
                    return nil
                }
                // Every observer ends on the last commit's result (coalescing drops only
                // intermediate ones).
                for deliveries in all where !deliveries.waitForTarget(seconds: 30) {
                    throw BenchError("live \(backend): an observer never received commit \(base + commits)")
                }
                tasks.forEach { $0.cancel() }
            }
            try? storage.close()
            if !keep { try? FileManager.default.removeItem(atPath: path) }
        }
    }

    private func recordLatencies(_ kind: String, _ backend: String, _ latencies: [Double]) {
        let median = Live.percentile(latencies, 0.5), p99 = Live.percentile(latencies, 0.99)
        if !latencies.isEmpty {
            record("live", "latency \(kind) median", backend, median, "µs")
            record("live", "latency \(kind) p99", backend, p99, "µs")
        }
        progress.end("median \(format(median)) µs, p99 \(format(p99)) µs over \(latencies.count) deliveries")
    }

    /// Starts this program as an observer of `location` in another process, commits
    /// `ticks` paced, and reads back when each arrived there.
    private func crossProcessLatencies(_ backend: String, _ location: String, ticks: ClosedRange<Int64>, storage: AnyStorage) throws -> [Double] {
        let child = Process()
        child.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        child.arguments = ["--follow", "\(backend):\(location)", "--follow-ticks", String(ticks.upperBound), "--postgres", postgresURL]
        let output = Pipe()
        child.standardOutput = output
        try child.run()
        let reader = output.fileHandleForReading
        var text = ""
        while !text.contains("ready\n") {
            let data = reader.availableData
            if data.isEmpty { throw BenchError("live \(backend): the observing process ended before it was ready") }
            text += String(decoding: data, as: UTF8.self)
        }
        let committed = try Live.commit(ticks, to: storage, pace: 0.004)
        text += String(decoding: reader.readDataToEndOfFile(), as: UTF8.self)
        child.waitUntilExit()
        guard child.terminationStatus == 0, let line = text.split(separator: "\n").first(where: { $0.hasPrefix("delivered") }) else {
            throw BenchError("live \(backend): the observing process failed: \(text)")
        }
        var delivered: [Int64: UInt64] = [:]
        for pair in line.split(separator: " ").dropFirst() {
            let parts = pair.split(separator: ":")
            if parts.count == 2, let n = Int64(parts[0]), let time = UInt64(parts[1]) { delivered[n] = time }
        }
        guard delivered[ticks.upperBound] != nil else { throw BenchError("live \(backend): the observing process never saw the last commit") }
        return Live.latencies(committed: committed, delivered: delivered)
    }
}
