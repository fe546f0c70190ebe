// ActiveRecord (issue 7): the article's "180 s → 4–5 s" point — 10,000 saves one by one
// (a durable commit each) against the same saves in one transaction — and fetcher queries
// on W1-shaped records.
import Benchmark
import BenchmarkSupport
import Foundation
import Strata
import StrataRecord

/// W1's user as an ActiveRecord.
struct UserRecord: ActiveRecord {
    var id: Int64 = 0
    var createdAt = Date()
    var updatedAt = Date()
    var recordState = RecordState()
    var name = ""
    var email = ""
    var age = 0
    var score = 0.0

    static let schema = Schema<UserRecord>.autoIncrementing(\.id, indexes: [.index(\.age)])

    init() {}
    init(_ user: User) { (name, email, age, score) = (user.name, user.email, user.age, user.score) }
}

enum ActiveRecordFixture {
    static let users: [User] = {
        var rng = SplitMix(state: 7)
        return (0 ..< 100_000).map { User.make($0, rng: &rng) }
    }()

    static func database() throws -> RecordDatabase {
        try RecordDatabase(path: NSTemporaryDirectory() + "strata-ar-\(UUID().uuidString).strata")
    }

    /// 100,000 W1 users, saved once.
    static let filled: RecordDatabase = {
        let db = try! database()
        try! db.transaction { tx in
            for user in users { var record = UserRecord(user); try record.save(on: tx) }
        }
        return db
    }()
}

let activeRecordBenchmarks: @Sendable () -> Void = {
    let configuration = Benchmark.Configuration(metrics: [.wallClock, .mallocCountTotal], scalingFactor: .one, maxDuration: .seconds(10), maxIterations: 3)

    Benchmark("ActiveRecord save 10k one by one (a durable commit each)", configuration: configuration) { benchmark in
        for _ in benchmark.scaledIterations {
            let db = try ActiveRecordFixture.database()
            benchmark.startMeasurement()
            for user in ActiveRecordFixture.users.prefix(10_000) { var record = UserRecord(user); try record.save(on: db) }
            benchmark.stopMeasurement()
        }
    }

    Benchmark("ActiveRecord save 10k in one transaction", configuration: configuration) { benchmark in
        for _ in benchmark.scaledIterations {
            let db = try ActiveRecordFixture.database()
            benchmark.startMeasurement()
            try db.transaction { tx in
                for user in ActiveRecordFixture.users.prefix(10_000) { var record = UserRecord(user); try record.save(on: tx) }
            }
            benchmark.stopMeasurement()
        }
    }

    Benchmark("ActiveRecord fetcher: count 30 <= age <= 40 by index (100k records)", configuration: configuration) { benchmark in
        let db = ActiveRecordFixture.filled
        for _ in benchmark.scaledIterations { blackHole(try UserRecord.query(on: db).where(.between(\.age, 30 ... 40)).count()) }
    }

    Benchmark("ActiveRecord fetcher: LIKE 'ab%' ordered by name, first 10 (100k records)", configuration: configuration) { benchmark in
        let db = ActiveRecordFixture.filled
        for _ in benchmark.scaledIterations {
            blackHole(try UserRecord.query(on: db).where(.like(\.name, "ab%")).order(by: \.name).limit(10).fetch())
        }
    }

    Benchmark("ActiveRecord fetcher: 20 youngest by the age index (100k records)", configuration: configuration) { benchmark in
        let db = ActiveRecordFixture.filled
        for _ in benchmark.scaledIterations { blackHole(try UserRecord.query(on: db).order(by: \.age).limit(20).fetch()) }
    }
}
