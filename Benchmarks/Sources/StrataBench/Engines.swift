// What strata-bench asks of each engine, per workload. Every read op returns a `Checksum`
// the runner compares with the one computed from the data set: a fast wrong answer fails.
import BenchmarkSupport

/// W1 on one engine, in a directory of its own.
protocol W1Engine: AnyObject {
    /// Inserts `users` in transactions of `transactionSize` records, each committed durably.
    func insert(_ users: [User], transactionSize: Int, progress: Progress) throws
    /// Looks up each id and decodes the user.
    func get(_ ids: [Int64], progress: Progress) throws -> Checksum
    /// Scans every record and keeps those with `ages.contains(age)`, without an index.
    func scanFilter(ages: ClosedRange<Int>) throws -> Checksum
    /// Builds a secondary index on age (not timed).
    func createAgeIndex() throws
    /// The same predicate as `scanFilter`, answered through the index, users decoded.
    func queryAgeIndex(ages: ClosedRange<Int>) throws -> Checksum
    /// Sets the score of each id, in durable transactions of `transactionSize` updates.
    func update(_ updates: [(id: Int64, score: Double)], transactionSize: Int, progress: Progress) throws
    /// Every user, decoded (verification, not timed).
    func scanAll() throws -> Checksum
    /// Closes and opens the database.
    func reopen() throws
    /// The engine's own space reclamation; false when it has none.
    func compact() throws -> Bool
    /// Waits until the space reclamation the engine runs on its own (strata's background
    /// compaction) is finished; false when it has none the benchmark can wait for.
    func settle() throws -> Bool
    /// The longest time the engine's own background compactions held writers back at once
    /// so far, and what that hold's time went on (strata); nil for engines without them.
    var longestBackgroundHold: (pause: Duration, parts: String)? { get }
    func close() throws
    /// Compacts while a thread commits `users`, one durable transaction each; nil when the
    /// engine cannot compact beside writers.
    func compactBesideWriter(_ users: [User]) throws -> CompactionBesideWriter?
    /// Commits `users` one durable transaction each, across an automatic checkpoint of the
    /// tree that `updates` (applied first) left changed; nil for engines without one.
    func commitAcrossCheckpoint(_ users: [User], dirtying updates: [(id: Int64, score: Double)],
                                progress: Progress) throws -> CommitsAcrossCheckpoint?
    /// Further ways to look up by id that the engine's users commonly write, labelled.
    var getVariants: [(op: String, run: ([Int64], Progress) throws -> Checksum)] { get }
    /// `scan.filter` from several threads at once, labelled: each run scans the records
    /// with ids in `ids`, the range split among the threads by key.
    var scanVariants: [(op: String, run: (_ ages: ClosedRange<Int>, _ ids: Range<Int64>) throws -> Checksum)] { get }
    /// `commit.durable` from several threads at once, labelled: each run commits `users`,
    /// one durable transaction each, split among the threads.
    var commitVariants: [(op: String, run: ([User]) throws -> Void)] { get }
}

extension W1Engine {
    func settle() throws -> Bool { false }
    var longestBackgroundHold: (pause: Duration, parts: String)? { nil }
    func compactBesideWriter(_ users: [User]) throws -> CompactionBesideWriter? { nil }
    func commitAcrossCheckpoint(_ users: [User], dirtying updates: [(id: Int64, score: Double)],
                                progress: Progress) throws -> CommitsAcrossCheckpoint? { nil }
    var getVariants: [(op: String, run: ([Int64], Progress) throws -> Checksum)] { [] }
    var scanVariants: [(op: String, run: (_ ages: ClosedRange<Int>, _ ids: Range<Int64>) throws -> Checksum)] { [] }
    var commitVariants: [(op: String, run: ([User]) throws -> Void)] { [] }
}

/// W2 on one engine.
protocol W2Engine: AnyObject {
    func insert(_ documents: [Document], transactionSize: Int, progress: Progress) throws
    func get(_ ids: [Int64], progress: Progress) throws -> Checksum
    /// Counts documents tagged `tag` (count and sum of ids).
    func scanFilter(tag: String) throws -> Checksum
    func compact() throws -> Bool
    func close() throws
}

/// The engines strata-bench knows, by their command-line names.
enum EngineKind: String, CaseIterable, Codable {
    case strata, strataTyped = "strata-typed", strataTypedCodable = "strata-typed-codable", sqlite, grdb, lmdb, leveldb

    func makeW1(directory: String) throws -> W1Engine {
        switch self {
        case .strata: try BinaryW1(store: StrataKV(directory: directory))
        case .strataTyped: try TypedW1<FastUser, FastUserByAge>(directory: directory, id: \.id, age: \.age, indexedAge: \.age)
        case .strataTypedCodable: try TypedW1<User, UserByAge>(directory: directory, id: \.id, age: \.age, indexedAge: \.age)
        case .sqlite: try SQLiteW1(directory: directory)
        case .grdb: try GRDBW1(directory: directory)
        case .lmdb: try BinaryW1(store: LMDBStore(directory: directory))
        case .leveldb: try BinaryW1(store: LevelDBStore(directory: directory))
        }
    }

    func makeW2(directory: String) throws -> W2Engine {
        switch self {
        case .strata: try BinaryW2(store: StrataKV(directory: directory))
        case .strataTyped: try TypedW2<FastDocument>(directory: directory)
        case .strataTypedCodable: try TypedW2<Document>(directory: directory)
        case .sqlite: try SQLiteW2(directory: directory)
        case .grdb: try GRDBW2(directory: directory)
        case .lmdb: try BinaryW2(store: LMDBStore(directory: directory))
        case .leveldb: try BinaryW2(store: LevelDBStore(directory: directory))
        }
    }
}

struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Runs `count` item writes in transactions of `transactionSize`: `commit` writes the items
/// of one range of indexes in one transaction. Shared by every engine.
func inBatches(count: Int, of transactionSize: Int, progress: Progress, _ commit: (Range<Int>) throws -> Void) throws {
    var next = 0
    while next < count {
        let end = min(next + transactionSize, count)
        try commit(next ..< end)
        next = end
        progress.update(next, of: count)
    }
}

/// Looks up each id and adds the digest of what `find` decoded; an id it does not find
/// stops the run. Shared by every engine's `get`.
/// How many ids `get.in` names in one query.
let inListSize = 64

/// `get.in`: the ids looked up `inListSize` at a time with one query each naming them all
/// (`WHERE id IN (...)`, Strata's `.in(\.id, ids)`), as an app loads the records a list
/// screen or a relationship names. `query` visits the digests of the records its ids name,
/// each once, in any order; every occurrence of an id counts, as in `lookUp`.
func lookUpInLists(_ ids: [Int64], progress: Progress,
                   _ query: (_ ids: [Int64], _ found: (_ id: Int64, _ digest: UInt64) -> Void) throws -> Void) throws -> Checksum {
    var sum = Checksum()
    var digests: [Int64: UInt64] = [:]
    digests.reserveCapacity(inListSize)
    for start in stride(from: 0, to: ids.count, by: inListSize) {
        let list = Array(ids[start ..< min(start + inListSize, ids.count)])
        digests.removeAll(keepingCapacity: true)
        try query(list) { id, digest in digests[id] = digest }
        for id in list {
            guard let digest = digests[id] else { throw BenchError("id \(id) not found") }
            sum.add(digest)
        }
        progress.update(start + list.count, of: ids.count)
    }
    return sum
}

func lookUp(_ ids: [Int64], progress: Progress, _ find: (Int64) throws -> UInt64?) throws -> Checksum {
    var sum = Checksum()
    for (i, id) in ids.enumerated() {
        guard let digest = try find(id) else { throw BenchError("id \(id) not found") }
        sum.add(digest)
        progress.update(i + 1, of: ids.count)
    }
    return sum
}
