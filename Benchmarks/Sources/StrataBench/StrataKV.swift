// Strata's engine as a KeyValueStore: one tree per key space, full durability.
import BenchmarkSupport
import Foundation
import StrataEngine

final class StrataKV: KeyValueStore {
    private let path: String
    private var database: Database

    /// Full durability; the cache at its default (sized from the machine's memory), as an
    /// app gets it.
    static func options() -> Database.Options {
        var options = Database.Options(durability: .full)
        options.autoCompaction = autoCompaction
        if let checkpointLogBytes { options.checkpointLogBytes = checkpointLogBytes }
        if let checkpointLogBytesLimit { options.checkpointLogBytesLimit = checkpointLogBytesLimit }
        if let backgroundCheckpoints { options.backgroundCheckpoints = backgroundCheckpoints }
        if let writeBuffer { options.writeBufferEntries = writeBuffer.entries }
        if let mergesWriteBufferInBackground { options.mergesWriteBufferInBackground = mergesWriteBufferInBackground }
        if let writeBufferIdleMerge { options.writeBufferIdleMerge = writeBufferIdleMerge }
        return options
    }

    /// `--checkpoint-log-bytes`: nil keeps the engine's default. Set once, before any engine
    /// opens (and passed to the loader open.after-crash kills).
    nonisolated(unsafe) static var checkpointLogBytes: UInt64?
    /// `--checkpoint-log-bytes-limit`, likewise.
    nonisolated(unsafe) static var checkpointLogBytesLimit: UInt64?

    /// `--write-buffer`: nil keeps the engine's default (a buffer of 65,536 entries). Set
    /// once, before any engine opens (and passed to the loader open.after-crash kills).
    nonisolated(unsafe) static var writeBuffer: WriteBufferSetting?

    /// What `--write-buffer` asked for: `off`, or a number of entries.
    struct WriteBufferSetting {
        /// `Options.writeBufferEntries`: nil for no buffer.
        let entries: Int?
        let argument: String

        init?(_ argument: String) {
            if argument == "off" {
                entries = nil
            } else if let entries = Int(argument), entries > 0 {
                self.entries = entries
            } else {
                return nil
            }
            self.argument = argument
        }
    }

    /// `--write-buffer-merges`: nil keeps the engine's default (beside the writer). Set
    /// once, before any engine opens.
    nonisolated(unsafe) static var mergesWriteBufferInBackground: Bool?

    /// `--write-buffer-idle-merge`: nil keeps the engine's default (50 ms); `.some(nil)`
    /// turns the merge once commits stop off. Set once, before any engine opens.
    nonisolated(unsafe) static var writeBufferIdleMerge: Duration??

    /// `--background-checkpoints`: nil keeps the engine's default. Set once, before any
    /// engine opens.
    nonisolated(unsafe) static var backgroundCheckpoints: Database.BackgroundCheckpoints?

    /// The background compaction policy (`--no-auto-compaction`: none). Set once, before
    /// any engine opens.
    nonisolated(unsafe) static var autoCompaction: Database.AutoCompaction? = Database.AutoCompaction()

    init(directory: String) throws {
        path = directory + "/bench.strata"
        database = try Database(path: path, options: Self.options())
        try database.write { tx in
            for space in KeySpace.allCases { try tx.createTree(Self.tree(space), ifNotExists: true) }
        }
        MemoryTrace.shared?.watch(database)
    }

    static func tree(_ space: KeySpace) -> String {
        switch space {
        case .records: "records"
        case .ageIndex: "age"
        }
    }

    func write(_ body: (Writer) throws -> Void) throws {
        try database.write { try body(Writer(base: $0)) }
    }

    func read<R>(_ body: (Reader) throws -> R) throws -> R {
        try body(try Reader(base: try database.snapshot()))
    }

    func reopen() throws {
        try database.close()
        database = try Database(path: path, options: Self.options())
        MemoryTrace.shared?.watch(database)
    }

    func compact() throws -> Bool {
        try database.compact()
        return true
    }

    func compactBesideWriters() throws -> (writerPauseMs: Double, carriedOver: Int)? {
        // A compaction the load started in the background is not this measurement's.
        database.waitForBackgroundCompaction()
        let result = try database.compact()
        return (milliseconds(result.writerPause), result.commitsCarriedOver)
    }

    func reopenWithCheckpointDue(afterDirtying dirty: () throws -> Void, inLogBytes bytes: UInt64) throws -> Bool {
        try database.close()
        // Changed by `dirty` and closed without a checkpoint: the next open replays it, and
        // its tree holds every change again, unwritten.
        // No background compaction: one would write the whole tree into a new file and
        // leave nothing for the checkpoint to write.
        var dirtying = Self.options()
        dirtying.autoCompaction = nil
        dirtying.checkpointOnClose = false
        database = try Database(path: path, options: dirtying)
        try dirty()
        let log = try database.statistics().logBytesSinceCheckpoint
        try database.close()
        var due = Self.options()
        due.autoCompaction = nil
        due.checkpointLogBytes = log + bytes
        due.checkpointLogBytesLimit = log + bytes
        database = try Database(path: path, options: due)
        return true
    }

    var checkpoints: (written: UInt64, inBackground: UInt64, longestPause: Duration) {
        guard let statistics = try? database.statistics() else { return (0, 0, .zero) }
        return (statistics.checkpointSequence, statistics.backgroundCheckpoints, statistics.longestBackgroundCheckpointPause)
    }

    func settle() throws -> Bool {
        database.waitForBackgroundCompaction()
        return true
    }

    var longestBackgroundHold: (pause: Duration, parts: String)? { database.longestBackgroundHold }

    func waitForBackgroundWork() { database.waitForBackgroundCheckpoint() }

    func close() throws { try database.close() }

    typealias Writer = View<WriteTransaction>

    /// A snapshot, with each key space's tree found once: an app holds a tree's handle for
    /// its lookups, as LMDB's users hold a database handle (`MDB_dbi`), rather than finding
    /// the tree by name for each one.
    struct Reader: KeyValueReader {
        let base: Snapshot
        // One property per key space, not an array: `handles[i]` copied the handle out of
        // the array, a retain and release of its store and root per lookup, contended when
        // two threads read the same tree.
        private let records: TreeHandle
        private let ageIndex: TreeHandle

        init(base: Snapshot) throws {
            self.base = base
            records = try base.treeHandle(StrataKV.tree(.records), forIteration: false)
            ageIndex = try base.treeHandle(StrataKV.tree(.ageIndex), forIteration: false)
        }

        func withValue<R>(_ key: UnsafeRawBufferPointer, in space: KeySpace, _ body: (UnsafeRawBufferPointer) throws -> R) throws -> R? {
            switch space {
            case .records: return try records.withValue(key, body)
            case .ageIndex: return try ageIndex.withValue(key, body)
            }
        }

        func scan(_ space: KeySpace, from start: [UInt8], _ body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Bool) throws {
            try base.scan(StrataKV.tree(space), in: KeyRange(lower: .included(start)), body)
        }

        func withRecords(_ ids: ArraySlice<Int64>, _ body: (_ id: Int64, _ value: UnsafeRawBufferPointer?) throws -> Void) throws {
            var batch = KeyBatch()
            for id in ids { BinaryKey.withKey(id) { batch.append($0) } }
            try records.withValues(batch) { i, value in try body(ids[ids.startIndex + i], value) }
        }
    }

    /// A write transaction, seen as the key spaces' trees (found by name for each call: a
    /// handle is good only until the transaction's next write).
    struct View<Base: TreeReading>: KeyValueReader {
        let base: Base

        func withValue<R>(_ key: UnsafeRawBufferPointer, in space: KeySpace, _ body: (UnsafeRawBufferPointer) throws -> R) throws -> R? {
            try base.withValue(key, in: StrataKV.tree(space), body)
        }

        func scan(_ space: KeySpace, from start: [UInt8], _ body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Bool) throws {
            try base.scan(StrataKV.tree(space), in: KeyRange(lower: .included(start)), body)
        }
    }
}

extension StrataKV.View: KeyValueWriter where Base == WriteTransaction {
    func put(_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer, in space: KeySpace) throws {
        try base.put(value, forKey: key, in: StrataKV.tree(space))
    }
}

extension Database {
    /// `Statistics.longestBackgroundHold`: how long the longest hold was and what its time
    /// went on; nil until a background compaction has finished (a zero would read as a
    /// measured pause). `compact.background-pause`, for the engine and the typed layer alike.
    var longestBackgroundHold: (pause: Duration, parts: String)? {
        guard let statistics = try? statistics(), statistics.backgroundCompactions > 0,
              let hold = statistics.longestBackgroundHold else { return nil }
        return (hold.duration, hold.description)
    }
}

extension StrataKV {
    /// Opens `path` read-only, replaying its log without writing, and prints the time and
    /// the commits replayed (`--time-open`).
    static func timeReadOnlyOpen(_ path: String) throws {
        var options = Database.Options()
        options.readOnly = true
        let start = ContinuousClock.now
        let database = try Database(path: path, options: options)
        let elapsed = ContinuousClock.now - start
        print("opened in \(elapsed), \(try database.statistics().commitsReplayedAtOpen) commits replayed")
        try database.close()
    }
}
