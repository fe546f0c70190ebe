// `--trace-memory`: where a Strata handle's memory goes while a workload runs, printed to
// stderr every two seconds: the resident set, what malloc holds in use and free, and the
// engine's own counts (decoded pages cached, leaves kept, write buffers).
import Foundation
import StrataEngine
import CPeers

final class MemoryTrace: @unchecked Sendable {
    private weak var database: Database?
    private let lock = NSLock()

    /// Set once by `--trace-memory`, before any engine opens.
    nonisolated(unsafe) static var shared: MemoryTrace?

    static func start() {
        let trace = MemoryTrace()
        shared = trace
        Thread.detachNewThread { trace.loop() }
    }

    func watch(_ database: Database) { lock.withLock { self.database = database } }

    private func loop() {
        let start = ContinuousClock.now
        while true {
            Thread.sleep(forTimeInterval: 2)
            let elapsed = (ContinuousClock.now - start).components.seconds
            var line = "memory t=\(elapsed)s"
            if let resident = ProcessStats.resident() { line += " rss=\(mib(resident.current))" }
            let info = mallinfo2()
            line += " malloc.used=\(mib(Double(info.uordblks + info.hblkhd))) malloc.free=\(mib(Double(info.fordblks)))"
            if let statistics = lock.withLock({ try? database?.statistics() }) {
                let buffered = statistics.trees.reduce(0) { $0 + $1.bufferedWrites }
                line += " cache=\(mib(Double(statistics.cacheBytes))) kept=\(mib(Double(statistics.keptLeafBytes)))"
                line += " buffered=\(buffered) file=\(mib(Double(statistics.fileSize)))"
            }
            FileHandle.standardError.write(Data((line + "\n").utf8))
        }
    }

    private func mib(_ bytes: Double) -> String { "\(Int(bytes / 1_048_576))M" }
}
