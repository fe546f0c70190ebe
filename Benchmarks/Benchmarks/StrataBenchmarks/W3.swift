// W3 (../../shared/WORKLOAD.md): the DAO path. 10,000 dialogs of 50 messages each, persisted
// and read back through DAO + Translator (the talk's models, from StrataExamples), on
// StrataStorage and MemoryStorage.
import Benchmark
import Foundation
import Strata
import StrataDAO
import StrataExamples

enum W3 {
    static let dialogs = 10_000
    static let messagesPerDialog = 50

    /// Dialog ids 0 ..< 10,000, every tenth pinned; message ids d × 100 + n.
    static let plains: [DialogPlainObject] = (0 ..< dialogs).map { DialogPlainObject.sample($0, pinned: $0 % 10 == 0, messages: messagesPerDialog) }

    static func storage(_ kind: String) throws -> AnyStorage {
        if kind == "memory" { return AnyStorage(MemoryStorage()) }
        let path = NSTemporaryDirectory() + "strata-w3-\(UUID().uuidString).strata"
        return AnyStorage(try StrataStorage(path: path, options: .init(durability: .full)))
    }

    /// A storage filled once per backend, for the read benchmarks.
    static let filled: [String: AnyStorage] = {
        var result: [String: AnyStorage] = [:]
        for kind in ["strata", "memory"] {
            let storage = try! storage(kind)
            try! DAO(storage: storage, translator: DialogTranslator()).persist(plains)
            result[kind] = storage
        }
        return result
    }()
}

let w3Benchmarks: @Sendable () -> Void = {
    let configuration = Benchmark.Configuration(metrics: [.wallClock, .mallocCountTotal], scalingFactor: .one, maxDuration: .seconds(10), maxIterations: 3)
    for kind in ["strata", "memory"] {
        Benchmark("W3 persist 10k dialogs x 50 messages (\(kind))", configuration: configuration) { benchmark in
            for _ in benchmark.scaledIterations {
                let dao = DAO(storage: try W3.storage(kind), translator: DialogTranslator())
                benchmark.startMeasurement()
                try dao.persist(W3.plains)
                benchmark.stopMeasurement()
            }
        }
        Benchmark("W3 read all (\(kind))", configuration: configuration) { benchmark in
            let dao = DAO(storage: W3.filled[kind]!, translator: DialogTranslator())
            for _ in benchmark.scaledIterations { blackHole(try dao.read().count) }
        }
        Benchmark("W3 read isPinned ordered by id (\(kind))", configuration: configuration) { benchmark in
            let dao = DAO(storage: W3.filled[kind]!, translator: DialogTranslator())
            for _ in benchmark.scaledIterations {
                blackHole(try dao.read(predicatedBy: #Predicate { $0.isPinned == true }, orderedBy: \.id).count)
            }
        }
    }
}
