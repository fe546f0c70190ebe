// W1 and W2 on an ordered key-value engine with the binary records of BinaryRecords.swift:
// one implementation for Strata's engine, LMDB and LevelDB, so they differ only in the store.
import BenchmarkSupport
import Foundation
import Synchronization

/// The key spaces the workloads use: records by id, and W1's age index.
enum KeySpace: Int, CaseIterable {
    case records, ageIndex
}

/// An ordered key-value engine, as the binary workloads use it.
protocol KeyValueStore: AnyObject {
    associatedtype Writer: KeyValueWriter
    associatedtype Reader: KeyValueReader
    /// One transaction, committed durably when `body` returns.
    func write(_ body: (Writer) throws -> Void) throws
    /// A consistent read view for the duration of `body`.
    func read<R>(_ body: (Reader) throws -> R) throws -> R
    func reopen() throws
    func compact() throws -> Bool
    /// `W1Engine.settle`.
    func settle() throws -> Bool
    /// `W1Engine.longestBackgroundHold`.
    var longestBackgroundHold: (pause: Duration, parts: String)? { get }
    /// Waits until a checkpoint the writes started in the background (strata) is written:
    /// a write phase then pays for its checkpoints, as when they held the writer, and none
    /// runs beside the next phase's measurement.
    func waitForBackgroundWork()
    /// Compacts while `write` may run on other threads; how long writers were held up (ms)
    /// and the commits carried over. Nil for engines that cannot.
    func compactBesideWriters() throws -> (writerPauseMs: Double, carriedOver: Int)?
    /// Reopens the store with its tree as `dirty` leaves it changed and an automatic
    /// checkpoint due once `bytes` more of log are written; false for engines without one.
    func reopenWithCheckpointDue(afterDirtying dirty: () throws -> Void, inLogBytes bytes: UInt64) throws -> Bool
    /// Checkpoints written so far, those written beside the writer, and the longest time
    /// one of those held the writer.
    var checkpoints: (written: UInt64, inBackground: UInt64, longestPause: Duration) { get }
    func close() throws
}

extension KeyValueStore {
    func compactBesideWriters() throws -> (writerPauseMs: Double, carriedOver: Int)? { nil }
    func reopenWithCheckpointDue(afterDirtying dirty: () throws -> Void, inLogBytes bytes: UInt64) throws -> Bool { false }
    var checkpoints: (written: UInt64, inBackground: UInt64, longestPause: Duration) { (0, 0, .zero) }
    func settle() throws -> Bool { false }
    var longestBackgroundHold: (pause: Duration, parts: String)? { nil }
    func waitForBackgroundWork() {}
}

/// Reads inside a write transaction see the committed state (LevelDB's batches are not
/// readable), which is all `update`'s read-modify-write needs.
protocol KeyValueWriter: KeyValueReader {
    func put(_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer, in space: KeySpace) throws
}

protocol KeyValueReader {
    /// Calls `body` with the value stored under `key`, if any.
    func withValue<R>(_ key: UnsafeRawBufferPointer, in space: KeySpace, _ body: (UnsafeRawBufferPointer) throws -> R) throws -> R?
    /// Visits keys >= `start` in order until `body` returns false.
    func scan(_ space: KeySpace, from start: [UInt8], _ body: (_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) throws -> Bool) throws
    /// Calls `body` with the record of each id of `ids` (nil when absent), in their order:
    /// through the engine's batched lookup where it has one (Strata's `withValues`), else
    /// one `withValue` each.
    func withRecords(_ ids: ArraySlice<Int64>, _ body: (_ id: Int64, _ value: UnsafeRawBufferPointer?) throws -> Void) throws
}

extension KeyValueReader {
    func withRecords(_ ids: ArraySlice<Int64>, _ body: (_ id: Int64, _ value: UnsafeRawBufferPointer?) throws -> Void) throws {
        for id in ids {
            let found = try BinaryKey.withKey(id) { key in try withValue(key, in: .records) { try body(id, $0) } }
            if found == nil { try body(id, nil) }
        }
    }
}

extension KeyValueWriter {
    func put(_ key: [UInt8], _ value: [UInt8], in space: KeySpace) throws {
        try key.withUnsafeBytes { k in try value.withUnsafeBytes { v in try put(k, v, in: space) } }
    }
}

/// How many ids a batched lookup hands the engine at once (`withRecords`).
private let lookupBatch = 64

/// Writes `count` items in transactions of `transactionSize`, one `put` per item.
private func insertInBatches<Store: KeyValueStore>(_ store: Store, count: Int, transactionSize: Int, progress: Progress,
                                                   _ putItem: (Store.Writer, Int) throws -> Void) throws {
    try inBatches(count: count, of: transactionSize, progress: progress) { range in
        try store.write { writer in for i in range { try putItem(writer, i) } }
    }
    store.waitForBackgroundWork()
}

/// Runs `body` on `threads` threads at once, each with its share of `items` (in order,
/// contiguous); the results in thread order, or the first error any thread threw.
private func onThreads<Item, R: Sendable>(_ threads: Int, splitting items: [Item], _ body: @Sendable (ArraySlice<Item>) throws -> R) throws -> [R] {
    nonisolated(unsafe) let items = items
    let results = Mutex<[Int: Result<R, any Error>]>([:])
    DispatchQueue.concurrentPerform(iterations: threads) { thread in
        let result = Result { try body(items[items.count * thread / threads ..< items.count * (thread + 1) / threads]) }
        results.withLock { $0[thread] = result }
    }
    let finished = results.withLock { $0 }
    return try (0 ..< threads).map { try finished[$0]!.get() }
}

/// A compaction measured beside a committing thread.
/// What `commitAcrossCheckpoint` measured.
struct CommitsAcrossCheckpoint {
    var commits: Int
    /// The slowest commit, and the slowest of as many made afterwards with no checkpoint due.
    var worstCommitMs: Double
    var worstCommitAloneMs: Double
    /// Whether the checkpoint was written beside the writer, and then how long its last
    /// step held the writer.
    var inBackground: Bool
    var writerPauseMs: Double
}

struct CompactionBesideWriter {
    var seconds: Double
    var writerPauseMs: Double
    var carriedOver: Int
    /// Commits the thread made while the compaction ran, and the slowest of them.
    var commits: Int
    var worstCommitMs: Double
    /// The slowest of as many commits made afterwards with no compaction beside them.
    var worstCommitAloneMs: Double
}

final class BinaryW1<Store: KeyValueStore>: W1Engine {
    let store: Store
    /// Once the age index exists, inserts maintain it, as the SQL peers' indexes do.
    private var indexed = false

    init(store: Store) { self.store = store }

    func insert(_ users: [User], transactionSize: Int, progress: Progress) throws {
        var value: [UInt8] = []
        try insertInBatches(store, count: users.count, transactionSize: transactionSize, progress: progress) { writer, i in
            // One copy of the user: each `users[i]` copied it (its two strings retained and
            // released), 15% of the writer thread's samples in insert.batch (perf).
            let user = users[i]
            BinaryUser.encode(user, into: &value)
            try BinaryKey.withKey(user.id) { key in try value.withUnsafeBytes { try writer.put(key, $0, in: .records) } }
            if indexed { try writer.put(BinaryKey.ageIndexKey(age: user.age, id: user.id), [], in: .ageIndex) }
        }
    }

    func get(_ ids: [Int64], progress: Progress) throws -> Checksum {
        try store.read { reader in
            try lookUp(ids, progress: progress) { id in
                try BinaryKey.withKey(id) { key in try reader.withValue(key, in: .records) { BinaryUser.decode(id: id, $0).digest } }
            }
        }
    }

    /// get from 2 and 4 threads at once, each in its own read transaction over its share of
    /// the ids: whether reads scale with cores (they should, with no shared lock on the path).
    var getVariants: [(op: String, run: ([Int64], Progress) throws -> Checksum)] {
        [2, 4].map { threads in ("get.threads\(threads)", { ids, _ in try self.get(ids, threads: threads) }) }
            + [("get.batched", { ids, progress in try self.getBatched(ids, progress: progress) })]
    }

    /// get with the ids handed to the engine `lookupBatch` at a time (`withRecords`): Strata
    /// walks a batch's lookups down its tree together; LMDB and LevelDB have no batched
    /// lookup, and look each up as in get.
    private func getBatched(_ ids: [Int64], progress: Progress) throws -> Checksum {
        try store.read { reader in
            var sum = Checksum()
            for start in stride(from: 0, to: ids.count, by: lookupBatch) {
                try reader.withRecords(ids[start ..< min(start + lookupBatch, ids.count)]) { id, value in
                    guard let value else { throw BenchError("id \(id) not found") }
                    sum.add(BinaryUser.decode(id: id, value).digest)
                }
                progress.update(min(start + lookupBatch, ids.count), of: ids.count)
            }
            return sum
        }
    }

    /// commit.durable from 2 and 4 threads at once, one record per transaction: whether
    /// concurrent committers share syncs (group commit: Strata and LevelDB do, LMDB does not).
    var commitVariants: [(op: String, run: ([User]) throws -> Void)] {
        [2, 4].map { threads in ("commit.durable.threads\(threads)", { users in try self.commit(users, threads: threads) }) }
    }

    private func commit(_ users: [User], threads: Int) throws {
        nonisolated(unsafe) let store = store   // each thread runs its own write transactions
        _ = try onThreads(threads, splitting: users) { share in
            var value: [UInt8] = []
            for user in share {
                BinaryUser.encode(user, into: &value)
                try store.write { writer in
                    try BinaryKey.withKey(user.id) { key in try value.withUnsafeBytes { try writer.put(key, $0, in: .records) } }
                }
            }
        }
    }

    private func get(_ ids: [Int64], threads: Int) throws -> Checksum {
        nonisolated(unsafe) let store = store   // each thread opens its own read transaction
        let parts = try onThreads(threads, splitting: ids) { share in
            try store.read { reader in
                try lookUp(Array(share), progress: Progress(enabled: false)) { id in
                    try BinaryKey.withKey(id) { key in try reader.withValue(key, in: .records) { BinaryUser.decode(id: id, $0).digest } }
                }
            }
        }
        return parts.reduce(into: Checksum()) { $0.add($1) }
    }

    func scanFilter(ages: ClosedRange<Int>) throws -> Checksum {
        try store.read { reader in try Self.scanFilter(reader, ages: ages, from: [], below: nil) }
    }

    /// scan.filter from 2 and 4 threads at once, each in its own read transaction over its
    /// share of the key range: whether scans scale with cores as lookups do.
    var scanVariants: [(op: String, run: (_ ages: ClosedRange<Int>, _ ids: Range<Int64>) throws -> Checksum)] {
        [2, 4].map { threads in ("scan.filter.threads\(threads)", { ages, ids in try self.scanFilter(ages: ages, ids: ids, threads: threads) }) }
    }

    private func scanFilter(ages: ClosedRange<Int>, ids: Range<Int64>, threads: Int) throws -> Checksum {
        nonisolated(unsafe) let store = store   // each thread opens its own read transaction
        let span = (ids.count + threads - 1) / threads
        // Thread t scans ids from its share's first on, up to the next share's first; the
        // first share starts at the lowest key and the last runs to the end, so every
        // record is counted once whatever its id.
        let parts = try onThreads(threads, splitting: Array(0 ..< threads)) { share in
            let t = share.first!
            let start = t == 0 ? [] : BinaryKey.withKey(ids.lowerBound + Int64(t * span)) { Array($0) }
            let end: Int64? = t == threads - 1 ? nil : ids.lowerBound + Int64((t + 1) * span)
            return try store.read { reader in try Self.scanFilter(reader, ages: ages, from: start, below: end) }
        }
        return parts.reduce(into: Checksum()) { $0.add($1) }
    }

    /// The records from `start` on whose id is below `end` (every one when nil) and whose
    /// age is in `ages`.
    private static func scanFilter(_ reader: Store.Reader, ages: ClosedRange<Int>, from start: [UInt8], below end: Int64?) throws -> Checksum {
        var sum = Checksum()
        try reader.scan(.records, from: start) { key, value in
            let id = BinaryKey.id(key)
            if let end, id >= end { return false }
            if ages.contains(BinaryUser.age(value)) { sum.add(BinaryUser.decode(id: id, value)) }
            return true
        }
        return sum
    }

    func createAgeIndex() throws {
        let entries = try store.read { reader in
            var entries: [[UInt8]] = []
            try reader.scan(.records, from: []) { key, value in
                entries.append(BinaryKey.ageIndexKey(age: BinaryUser.age(value), id: BinaryKey.id(key)))
                return true
            }
            return entries
        }
        try store.write { writer in
            for entry in entries { try writer.put(entry, [], in: .ageIndex) }
        }
        indexed = true
    }

    func queryAgeIndex(ages: ClosedRange<Int>) throws -> Checksum {
        try store.read { reader in
            // The ids the index names, looked up `lookupBatch` at a time (`withRecords`), as
            // an engine with a batched lookup serves an index query.
            var sum = Checksum()
            var ids: [Int64] = []
            ids.reserveCapacity(lookupBatch)
            func lookUpNamed() throws {
                try reader.withRecords(ids[...]) { id, value in
                    guard let value else { throw BenchError("index names id \(id), which is missing") }
                    sum.add(BinaryUser.decode(id: id, value))
                }
                ids.removeAll(keepingCapacity: true)
            }
            try reader.scan(.ageIndex, from: [UInt8(ages.lowerBound)]) { indexKey, _ in
                guard ages.contains(Int(indexKey[0])) else { return false }
                ids.append(BinaryKey.id(indexKey))
                if ids.count == lookupBatch { try lookUpNamed() }
                return true
            }
            try lookUpNamed()
            return sum
        }
    }

    func update(_ updates: [(id: Int64, score: Double)], transactionSize: Int, progress: Progress) throws {
        var value: [UInt8] = []
        try insertInBatches(store, count: updates.count, transactionSize: transactionSize, progress: progress) { writer, i in
            // Read-modify-write inside the transaction, as an app would; the index is unaffected (age is unchanged).
            let (id, score) = updates[i]
            try BinaryKey.withKey(id) { key in
                value = try writer.withValue(key, in: .records) { Array($0) } ?? []
                guard !value.isEmpty else { throw BenchError("id \(id) not found") }
                withUnsafeBytes(of: score.bitPattern.littleEndian) { value.replaceSubrange(1 ..< 9, with: $0) }
                try value.withUnsafeBytes { try writer.put(key, $0, in: .records) }
            }
        }
    }

    func scanAll() throws -> Checksum {
        try store.read { reader in
            var sum = Checksum()
            try reader.scan(.records, from: []) { key, value in
                sum.add(BinaryUser.decode(id: BinaryKey.id(key), value))
                return true
            }
            return sum
        }
    }

    func reopen() throws { try store.reopen() }
    func compact() throws -> Bool { try store.compact() }
    func settle() throws -> Bool { try store.settle() }
    var longestBackgroundHold: (pause: Duration, parts: String)? { store.longestBackgroundHold }
    func close() throws { try store.close() }

    /// Compacts while a thread commits `users` one durable transaction each, as fast as it
    /// can, until the compaction ends; then the thread commits as many again alone, for the
    /// slowest commit without a compaction beside it. Nil when the engine cannot compact
    /// beside writers.
    func compactBesideWriter(_ users: [User]) throws -> CompactionBesideWriter? {
        let stop = Atomic<Bool>(false)
        let finished = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var beside: Result<(commits: Int, worst: Duration), any Error>?
        nonisolated(unsafe) let engine = self
        Thread {
            beside = Result { try engine.commitOneByOne(users, until: { _ in stop.load(ordering: .relaxed) }) }
            finished.signal()
        }.start()
        var outcome: (writerPauseMs: Double, carriedOver: Int)?
        let seconds: Double
        do {
            seconds = try time { outcome = try store.compactBesideWriters() }
        } catch {
            stop.store(true, ordering: .relaxed)
            finished.wait()
            throw error
        }
        stop.store(true, ordering: .relaxed)
        finished.wait()
        let (commits, worst) = try beside!.get()
        guard let outcome else { return nil }
        let alone = try commitOneByOne(users, until: { $0 >= commits })
        return CompactionBesideWriter(seconds: seconds, writerPauseMs: outcome.writerPauseMs, carriedOver: outcome.carriedOver,
                                      commits: commits, worstCommitMs: milliseconds(worst), worstCommitAloneMs: milliseconds(alone.worst))
    }

    /// Reopens the store with the tree `updates` changed and a checkpoint due 256 KiB of
    /// log later, then commits `users` in turn, a durable transaction each, until the
    /// checkpoint is written and a hundred commits more; then as many again with none due.
    func commitAcrossCheckpoint(_ users: [User], dirtying updates: [(id: Int64, score: Double)],
                                progress: Progress) throws -> CommitsAcrossCheckpoint? {
        let dirty = { try self.update(updates, transactionSize: 1_000, progress: progress) }
        guard try store.reopenWithCheckpointDue(afterDirtying: dirty, inLogBytes: 256 << 10) else { return nil }
        let before = store.checkpoints
        var writtenAt: Int?
        let across = try commitOneByOne(users) { commits in
            if writtenAt == nil, store.checkpoints.written > before.written { writtenAt = commits }
            return writtenAt.map { commits >= $0 + 100 } ?? (commits >= 100_000)
        }
        guard writtenAt != nil else { throw BenchError("no checkpoint came due in \(across.commits) commits") }
        let after = store.checkpoints
        let alone = try commitOneByOne(users) { $0 >= across.commits }
        try store.reopen()
        return CommitsAcrossCheckpoint(commits: across.commits, worstCommitMs: milliseconds(across.worst),
                                       worstCommitAloneMs: milliseconds(alone.worst),
                                       inBackground: after.inBackground > before.inBackground,
                                       writerPauseMs: milliseconds(after.longestPause))
    }

    /// Puts `users` in turn, a durable transaction each, until `done(commits so far)`.
    private func commitOneByOne(_ users: [User], until done: (Int) -> Bool) throws -> (commits: Int, worst: Duration) {
        var value: [UInt8] = []
        var commits = 0, worst: Duration = .zero
        while !done(commits) {
            let user = users[commits % users.count]
            let start = ContinuousClock.now
            try store.write { writer in
                BinaryUser.encode(user, into: &value)
                try BinaryKey.withKey(user.id) { key in try value.withUnsafeBytes { try writer.put(key, $0, in: .records) } }
            }
            worst = max(worst, ContinuousClock.now - start)
            commits += 1
        }
        return (commits, worst)
    }
}

final class BinaryW2<Store: KeyValueStore>: W2Engine {
    let store: Store
    init(store: Store) { self.store = store }

    func insert(_ documents: [Document], transactionSize: Int, progress: Progress) throws {
        var value: [UInt8] = []
        try insertInBatches(store, count: documents.count, transactionSize: transactionSize, progress: progress) { writer, i in
            BinaryDocument.encode(documents[i], into: &value)
            try BinaryKey.withKey(documents[i].id) { key in try value.withUnsafeBytes { try writer.put(key, $0, in: .records) } }
        }
    }

    func get(_ ids: [Int64], progress: Progress) throws -> Checksum {
        try store.read { reader in
            try lookUp(ids, progress: progress) { id in
                try BinaryKey.withKey(id) { key in try reader.withValue(key, in: .records) { BinaryDocument.decode(id: id, $0).digest } }
            }
        }
    }

    func scanFilter(tag: String) throws -> Checksum {
        let tagBytes = Array(tag.utf8)
        return try store.read { reader in
            var sum = Checksum()
            try reader.scan(.records, from: []) { key, value in
                if BinaryDocument.hasTag(tagBytes, value) { sum.add(UInt64(BinaryKey.id(key))) }
                return true
            }
            return sum
        }
    }

    func compact() throws -> Bool { try store.compact() }
    func close() throws { try store.close() }
}
