// W3 (../../../shared/WORKLOAD.md): the DAO path. 10,000 dialogs of 50 messages each, persisted
// and read back through DAO + Translator (the talk's models, from StrataExamples), on
// StrataStorage and MemoryStorage. `strata-bench --workloads W3` runs the same in one table.
import Benchmark
import BenchmarkSupport
import Foundation
import Strata
import StrataDAO
import StrataExamples

enum W3Fixture {
    static let plains = W3.dialogs(10_000)

    /// A storage filled once per backend, for the read benchmarks.
    static let filled: [String: AnyStorage] = {
        var result: [String: AnyStorage] = [:]
        for kind in W3.backends {
            let storage = try! W3.storage(kind, directory: NSTemporaryDirectory())
            try! DAO(storage: storage, translator: DialogTranslator()).persist(plains)
            result[kind] = storage
        }
        return result
    }()
}

let w3Benchmarks: @Sendable () -> Void = {
    let configuration = Benchmark.Configuration(metrics: [.wallClock, .mallocCountTotal], scalingFactor: .one, maxDuration: .seconds(10), maxIterations: 3)
    for kind in W3.backends {
        Benchmark("W3 persist 10k dialogs x 50 messages (\(kind))", configuration: configuration) { benchmark in
            for _ in benchmark.scaledIterations {
                let dao = DAO(storage: try W3.storage(kind, directory: NSTemporaryDirectory()), translator: DialogTranslator())
                benchmark.startMeasurement()
                try dao.persist(W3Fixture.plains)
                benchmark.stopMeasurement()
            }
        }
        Benchmark("W3 read all (\(kind))", configuration: configuration) { benchmark in
            let dao = DAO(storage: W3Fixture.filled[kind]!, translator: DialogTranslator())
            for _ in benchmark.scaledIterations { blackHole(try dao.read().count) }
        }
        Benchmark("W3 read isPinned ordered by id (\(kind))", configuration: configuration) { benchmark in
            let dao = DAO(storage: W3Fixture.filled[kind]!, translator: DialogTranslator())
            for _ in benchmark.scaledIterations {
                blackHole(try dao.read(predicatedBy: #Predicate { $0.isPinned == true }, orderedBy: \.id).count)
            }
        }
    }
}
