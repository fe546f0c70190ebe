// Hot-path benchmarks: record codec vs Foundation's JSON coders, key encoding, checksums,
// engine put/get/scan, and W1 operations through the typed layer.
//
//   cd Benchmarks && swift package benchmark
//   swift package benchmark baseline update main      # save a baseline
//   swift package benchmark baseline compare main     # compare the working tree with it
import Benchmark
import BenchmarkSupport
import CPeers
import Foundation
import Strata
import StrataEngine

/// The same records in a collection with an index on age, for scan.index.
struct IndexedUser: Model {
    var id: Int64
    var name: String
    var email: String
    var age: Int
    var score: Double
    var createdAt: Int64

    static let collectionName = "IndexedUser"
    static let schema = Schema<IndexedUser>(primaryKey: \.id, indexes: [.index(\.age)])

    init(_ u: User) { (id, name, email, age, score, createdAt) = (u.id, u.name, u.email, u.age, u.score, u.createdAt) }
}

/// Data shared by the benchmarks, built once.
final class Fixture: @unchecked Sendable {
    static let shared = Fixture()
    static let records = 100_000

    let users: [User]
    let fastUsers: [FastUser]
    let encoded: [[UInt8]]
    let json: [Data]
    let fields: FieldTable
    let storage: StrataStorage
    let lookupOrder: [Int64]

    private init() {
        var rng = SplitMix(state: 42)
        users = (0 ..< Self.records).map { User.make($0, rng: &rng) }
        fastUsers = users.map(FastUser.init)
        var table = FieldTable()
        encoded = users.map { try! RecordEncoder.encode($0, fields: &table, collection: "User") }
        fields = table
        json = users.map { try! JSONEncoder().encode($0) }
        lookupOrder = users.map(\.id).shuffled(using: &rng)
        let path = NSTemporaryDirectory() + "strata-bench-\(ProcessInfo.processInfo.processIdentifier).strata"
        try? FileManager.default.removeItem(atPath: path)
        var options = Database.Options(durability: .relaxed)
        options.cacheSize = 512 << 20
        storage = try! StrataStorage(path: path, options: options)
        for chunk in stride(from: 0, to: users.count, by: 10_000) {
            let slice = Array(users[chunk ..< min(chunk + 10_000, users.count)])
            try! storage.persist(slice)
            try! storage.persist(slice.map(IndexedUser.init))
        }
        try! storage.database.checkpoint()
    }
}

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .throughput, .mallocCountTotal],
        scalingFactor: .kilo,
        maxDuration: .seconds(3),
        maxIterations: 50)

    // MARK: Record codec vs JSON (issue 3: the codec must beat JSON by a wide margin)

    Benchmark("Codec encode Strata (1k W1 users)") { benchmark in
        let fixture = Fixture.shared
        var fields = fixture.fields
        for i in benchmark.scaledIterations {
            blackHole(try RecordEncoder.encode(fixture.users[i % Fixture.records], fields: &fields, collection: "User"))
        }
    }

    Benchmark("Codec encode Strata RecordCodable (1k W1 users)") { benchmark in
        let fixture = Fixture.shared
        var fields = fixture.fields
        for i in benchmark.scaledIterations {
            blackHole(try RecordEncoder.encode(fixture.fastUsers[i % Fixture.records], fields: &fields, collection: "User"))
        }
    }

    Benchmark("Codec decode Strata RecordCodable (1k W1 users)") { benchmark in
        let fixture = Fixture.shared
        for i in benchmark.scaledIterations {
            blackHole(try RecordDecoder.decode(FastUser.self, from: fixture.encoded[i % Fixture.records], fields: fixture.fields, collection: "User"))
        }
    }

    Benchmark("Codec encode JSONEncoder (1k W1 users)") { benchmark in
        let fixture = Fixture.shared
        let encoder = JSONEncoder()
        for i in benchmark.scaledIterations {
            blackHole(try encoder.encode(fixture.users[i % Fixture.records]))
        }
    }

    Benchmark("Codec decode Strata (1k W1 users)") { benchmark in
        let fixture = Fixture.shared
        for i in benchmark.scaledIterations {
            blackHole(try RecordDecoder.decode(User.self, from: fixture.encoded[i % Fixture.records], fields: fixture.fields, collection: "User"))
        }
    }

    Benchmark("Codec decode JSONDecoder (1k W1 users)") { benchmark in
        let fixture = Fixture.shared
        let decoder = JSONDecoder()
        for i in benchmark.scaledIterations {
            blackHole(try decoder.decode(User.self, from: fixture.json[i % Fixture.records]))
        }
    }

    // MARK: Engine primitives

    Benchmark("Key encode (Int64, String) x1k") { benchmark in
        for i in benchmark.scaledIterations { blackHole(Key(Int64(i), "user").bytes) }
    }

    Benchmark("XXH64 4 KiB page x1k") { benchmark in
        let page = [UInt8](repeating: 7, count: 4096)
        for _ in benchmark.scaledIterations { blackHole(XXH64.hash(page, seed: 1)) }
    }

    // The engine compresses pages with liblz4's block API (LZ4_compress_default /
    // LZ4_decompress_safe); these measure those calls on a page of W1 records.
    Benchmark("LZ4 compress 4 KiB W1 page x1k") { benchmark in
        let page = w1Page(size: 4096).map { CChar(bitPattern: $0) }
        var out = [CChar](repeating: 0, count: Int(LZ4_compressBound(4096)))
        for _ in benchmark.scaledIterations { blackHole(LZ4_compress_default(page, &out, 4096, Int32(out.count))) }
    }

    Benchmark("LZ4 decompress 4 KiB W1 page x1k") { benchmark in
        let page = w1Page(size: 4096).map { CChar(bitPattern: $0) }
        var compressed = [CChar](repeating: 0, count: Int(LZ4_compressBound(4096)))
        let size = LZ4_compress_default(page, &compressed, 4096, Int32(compressed.count))
        var out = [CChar](repeating: 0, count: 4096)
        for _ in benchmark.scaledIterations { blackHole(LZ4_decompress_safe(compressed, &out, size, 4096)) }
    }

    Benchmark("Engine get (random keys, 1k)") { benchmark in
        let fixture = Fixture.shared
        let snapshot = try fixture.storage.database.snapshot()
        for i in benchmark.scaledIterations {
            blackHole(try snapshot.withValue(Key(fixture.lookupOrder[i % Fixture.records]).bytes, in: "c:User") { $0.count })
        }
    }

    Benchmark("Engine scan (100k records)", configuration: .init(scalingFactor: .one)) { benchmark in
        let snapshot = try Fixture.shared.storage.database.snapshot()
        for _ in benchmark.scaledIterations {
            var bytes = 0
            try snapshot.scan("c:User") { _, value in bytes &+= value.count; return true }
            blackHole(bytes)
        }
    }

    Benchmark("Engine put (1k per transaction, relaxed)", configuration: .init(scalingFactor: .one)) { benchmark in
        let path = NSTemporaryDirectory() + "strata-bench-put-\(UUID().uuidString).strata"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let db = try Database(path: path, options: .init(durability: .relaxed))
        try db.write { try $0.createTree("t") }
        let value = [UInt8](repeating: 1, count: 60)
        for round in benchmark.scaledIterations {
            try db.write { tx in
                for i in 0 ..< 1000 { try tx.put(value, forKey: Key(round * 1000 + i).bytes, in: "t") }
            }
        }
        try db.close()
    }

    // MARK: W1 through the typed layer

    Benchmark("Typed get (W1, random primary keys, 1k)") { benchmark in
        let fixture = Fixture.shared
        try fixture.storage.read { reader in
            for i in benchmark.scaledIterations {
                blackHole(try reader.read(User.self, primaryKey: fixture.lookupOrder[i % Fixture.records]))
            }
        }
    }

    Benchmark("Typed scan.filter (W1, 30 <= age <= 40, 100k records)", configuration: .init(scalingFactor: .one)) { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(try Fixture.shared.storage.count(User.filter(.between(\.age, 30 ... 40))))
        }
    }

    Benchmark("Typed scan.index (W1, 30 <= age <= 40 by index, 100k records)", configuration: .init(scalingFactor: .one)) { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(try Fixture.shared.storage.count(IndexedUser.filter(.between(\.age, 30 ... 40))))
        }
    }

    w3Benchmarks()
    activeRecordBenchmarks()
}
