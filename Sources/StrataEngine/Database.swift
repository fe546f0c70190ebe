import Dispatch
import Foundation
import Logging
import Synchronization

/// A Strata database file: named trees of byte-string keys and values, with atomic,
/// durable transactions, snapshot reads, crash recovery and compaction.
///
/// ```swift
/// let db = try Database(path: "app.strata")
/// try db.write { tx in
///     try tx.createTree("users", ifNotExists: true)
///     try tx.put(Array("Ada".utf8), forKey: Key(1).bytes, in: "users")
/// }
/// let name = try db.read { try $0.get(Key(1).bytes, in: "users") }
/// try db.close()
/// ```
///
/// One process may open a file for writing at a time (an advisory `flock`); a second
/// writer gets `StrataError.locked`. Read-only handles take no lock.
public final class Database: Sendable {
    /// How hard `commit()` works to make a transaction survive a power loss.
    public enum Durability: Sendable, Equatable {
        /// `commit()` returns after fdatasync: a committed transaction survives a crash of
        /// the process, the OS or the machine. The default.
        case full
        /// `commit()` returns after the write reaches the OS: it survives a crash of the
        /// process, not of the OS or machine (the last commits may be lost). Checkpoints
        /// and `close()` still sync. Choose it explicitly, for bulk loads.
        case relaxed
    }

    /// What opening does with a damaged frame that is followed by valid commits.
    public enum RecoveryMode: Sendable, Equatable {
        /// Refuse to open with `StrataError.corruption` naming the offset. The default.
        case strict
        /// Keep the commits before the damage and drop everything from it on. For salvage.
        case truncateAtFirstBadFrame
    }

    /// How a database is opened: durability, cache, read-only, page size, checkpoints,
    /// recovery and logging.
    ///
    /// ```swift
    /// var options = Database.Options(durability: .relaxed)
    /// options.cacheSize = 256 << 20
    /// let db = try Database(path: "bulk.strata", options: options)
    /// ```
    public struct Options: Sendable {
        /// An eighth of physical memory, at least 64 MiB and at most 4 GiB.
        public static let defaultCacheSize: Int = {
            let eighth = ProcessInfo.processInfo.physicalMemory / 8
            return Int(min(max(eighth, 64 << 20), 4 << 30))
        }()

        /// When `commit()` returns: after fdatasync (`.full`, the default) or after the
        /// write reaches the OS (`.relaxed`).
        public var durability: Durability = .full
        /// The byte budget of the decoded-page cache. Defaults to `defaultCacheSize`: an
        /// eighth of the machine's memory, so a tree of a few million records stays decoded
        /// in memory (a miss costs a read, a checksum and an LZ4 decompression). Values
        /// stored out of line (over a quarter of a page) are cached in a budget of their own,
        /// a quarter of this one, so reading them never evicts a page of the tree. Both are
        /// ceilings, not allocations: the caches grow only with what is read or written.
        /// While a compaction writes a new file, that file's tree keeps its leaves in a
        /// share of its own, beside the old tree's, until the old one's readers are done:
        /// up to twice this budget for the length of a compaction. Every commit it carries
        /// over changes the new tree, in the writers' holds too, and sharing one budget left
        /// those leaves on disk (a hold of 2.96 s at 10M records, against 9.4 ms).
        /// Branches a checkpoint or compaction wrote are kept in memory outside the budget
        /// (a branch per hundred or so leaves). The leaves it wrote are kept in memory too,
        /// inside the budget, while they take at most three quarters of it
        /// (`Statistics.keptLeafBytes`); the cache holds what they leave. A lookup through
        /// nodes kept in memory asks the cache for nothing: after a checkpoint, reads of a
        /// tree that fits take no lock shared with other readers. After a reopen, pages are
        /// read through the cache until a checkpoint writes them again.
        ///
        /// Scans do not evict what lookups use: pages a cursor, a compaction or a verify
        /// reads enter the cache as older than every page a lookup used, so a scan of a tree
        /// larger than the cache drops its own pages first, and a tree that fits stays
        /// cached for the next scan.
        public var cacheSize: Int = Options.defaultCacheSize
        /// Open without writing or locking; the file must exist.
        public var readOnly = false
        /// How long a writable open waits while another handle or process holds the file's
        /// write lock, before it throws `StrataError.locked`: zero (the default) fails at
        /// once, as SQLite's default busy timeout and GRDB's `.immediateError` do. Waiting
        /// polls the lock, 1 ms apart at first and at most 50 ms apart later, as SQLite's
        /// busy handler does; a process that closes and reopens at once can still win the
        /// lock ahead of a waiter, so keep the wait generous.
        ///
        /// ```swift
        /// var options = Database.Options()
        /// options.lockTimeout = .seconds(5)   // an app extension may be writing
        /// let db = try Database(path: path, options: options)
        /// ```
        public var lockTimeout: Duration = .zero
        /// Page size for a new file (512 ... 65536, a power of two); an existing file keeps its own.
        public var pageSize = 4096
        /// After a commit, checkpoint when the log since the last checkpoint exceeds this
        /// many bytes, or, on a store whose live data is larger, as many bytes as that data
        /// (estimated from the file's size after its last compaction and the entries added
        /// since), up to `checkpointLogBytesLimit`. Bounds memory and the work of the next
        /// open.
        public var checkpointLogBytes: UInt64 = 64 << 20
        /// The most log an automatic checkpoint lets pass on a large store: what an open
        /// after a crash may have to replay. nil (the default): four times
        /// `checkpointLogBytes`, 256 MiB at its default.
        ///
        /// A checkpoint writes every leaf changed since the last, about the whole tree when
        /// writes are scattered, so an interval that grows with the data keeps the bytes
        /// written per byte committed from growing with the store (W1's load of 10M
        /// records: 3.65× the records' bytes at a fixed 64 MiB, 2.29× at 256 MiB, and
        /// 1.2–1.5× the records per second). Set it to `checkpointLogBytes` for a fixed
        /// interval.
        ///
        /// ```swift
        /// var options = Database.Options()
        /// options.checkpointLogBytesLimit = options.checkpointLogBytes   // open fast after a crash
        /// ```
        public var checkpointLogBytesLimit: UInt64?
        /// Whether automatic checkpoints write their pages on a thread of their own while
        /// commits go on (`BackgroundCheckpoints`): by default when the commits are sparse
        /// enough that the writer would otherwise stall for nothing.
        public var backgroundCheckpoints: BackgroundCheckpoints = .whenCommitsAreSparse
        /// When the file is compacted without a call to `compact()`: by default, once it has
        /// grown to twice its compacted size and 64 MiB (`AutoCompaction`). nil: never.
        public var autoCompaction: AutoCompaction? = AutoCompaction()
        /// Buffer the writes that would copy a leaf a snapshot shares, and merge them into
        /// their tree in key order once a tree's buffer holds more than this many entries or
        /// an eighth of the tree's (at most 2,097,152), or once the buffers of all trees
        /// together hold more than a sixteenth of `cacheSize` in bytes (the largest are
        /// merged first). nil: every write goes straight into its tree.
        ///
        /// A write transaction copies a leaf the first time it changes one that the
        /// committed tree shares, so a transaction of scattered keys copies about one leaf
        /// per key. Buffered, those writes are sorted at commit and reach the tree in
        /// batches, about one copy per leaf per merge, made beside the writer
        /// (`mergesWriteBufferInBackground`). W1's load of a million records in commits of
        /// a thousand ran 1.4–2.1× as fast as with no buffer. Reads look at the buffer first
        /// (a filter check per run, and a search where it passes); a checkpoint, a
        /// compaction or `verify()` reads the buffer merged. Nothing changes on disk: every
        /// buffered write is in the log. A transaction that finds a tree empty gathers its
        /// writes to it the same way and builds the tree from them in key order, full
        /// leaves and all, when it is done with them. See docs/WRITE-BUFFER.md.
        ///
        /// ```swift
        /// var options = Database.Options()
        /// options.writeBufferEntries = nil   // every write reaches its tree at commit
        /// ```
        public var writeBufferEntries: Int? = 65_536
        /// Whether a buffer past its limit is merged into its tree on a thread of its own
        /// while commits go on (the default), or by the commit that filled it.
        ///
        /// Beside the writer, the merge copies the leaves it changes into a new version of
        /// the tree, and the first commit after it finished puts that version in place. A
        /// writer that fills the buffer to twice its limit (or the buffers together to an
        /// eighth of `cacheSize` in bytes) before then waits for it. In the commit, a
        /// buffer never passes its limit, and that commit pays for the merge.
        public var mergesWriteBufferInBackground = true
        /// How long after the last commit a handle merges what its write buffers still
        /// hold into their trees, beside the writer; nil: a buffer is merged only once it
        /// passes its limit, and by a checkpoint, a compaction or `close()`.
        ///
        /// A read of a buffered tree looks at each run as well as the tree, and a scan
        /// merges them as it goes (about a quarter of W2's scan of a million documents
        /// right after its load; docs/WRITE-BUFFER.md). Once commits stop for this long, a
        /// merge of every buffer starts on a thread of its own and is put in place as soon
        /// as the writer is free, so a store whose writes have stopped reads its trees
        /// alone. A commit meanwhile only postpones it. Needs
        /// `mergesWriteBufferInBackground`.
        ///
        /// ```swift
        /// var options = Database.Options()
        /// options.writeBufferIdleMerge = .seconds(1)   // wait longer for a pause in the writes
        /// ```
        public var writeBufferIdleMerge: Duration? = .milliseconds(50)
        /// Checkpoint in `close()`, so the next open replays nothing.
        public var checkpointOnClose = true
        /// What opening does with damage followed by valid commits: refuse (`.strict`, the
        /// default) or keep what precedes it (`.truncateAtFirstBadFrame`).
        public var recovery: RecoveryMode = .strict
        /// Where the engine reports what it repaired or could not do: a torn tail dropped
        /// at open (warning), a salvage that dropped valid commits, a failed automatic
        /// checkpoint, a handle poisoned by an I/O error (errors). Each is also counted in
        /// `statistics()`. Bootstrap swift-log's `LoggingSystem` to route them.
        public var logger = Logger(label: "strata.engine")

        /// The defaults, with the durability and read-only choice given.
        ///
        /// - Parameters:
        ///   - durability: `.full` syncs every commit to disk before it returns; `.none` leaves it
        ///     to the OS (a crash may lose recent commits, never corrupt the file).
        ///   - readOnly: Open without the write lock: many processes may read while one writes.
        public init(durability: Durability = .full, readOnly: Bool = false) {
            self.durability = durability
            self.readOnly = readOnly
        }
    }

    /// The largest value `put` accepts.
    public static let maxValueSize = 1 << 30

    /// The file's path (`memory.strata` for `Database.inMemory`, whose file is in memory).
    public let path: String
    /// The options the database was opened with.
    public let options: Options
    let fileSystem: any FileSystem
    let gate = WriteGate()
    let writer: WriterState
    /// The writer's counters as the gate was last left (`lastWriterCounters()`).
    private let counterCopy: Mutex<WriterCounters>
    private let published: Mutex<Snapshot?>
    /// Durable commits from concurrent threads share syncs (`GroupCommit`).
    let group: GroupCommit
    /// The last owner id handed out (`nextOwner`): transactions, replays and compactions
    /// each change only nodes of their own id. Id 0 marks nodes read from pages (never
    /// changed in place: they are shared through the page cache), and 1 is the replay at
    /// open (`openingOwner`).
    private let owners = Atomic<UInt64>(Database.openingOwner)
    /// The owner of the nodes the replay at open makes. Not 0: with 0, the replay changed
    /// in place the cached pages of the checkpoint it started from, and a later checkpoint
    /// frame in the log that names some of the same pages (its slot lost to a power cut)
    /// was then read with those changes in it (found by the power-loss test once replay
    /// applied operations in key order).
    static let openingOwner: UInt64 = 1
    /// Held by the compaction running on this handle: they take turns.
    let compactions = Mutex<Void>(())
    /// The compaction `Options.autoCompaction` runs on a thread of its own.
    let background = BackgroundCompaction()
    /// The checkpoint `Options.backgroundCheckpoints` runs on a thread of its own.
    let checkpointPass = BackgroundCheckpointState()
    /// The merges of write buffers `Options.mergesWriteBufferInBackground` runs on a thread
    /// of their own; nil when the writer merges them itself.
    let bufferMerges: BackgroundBufferMerges?
    /// Commits that have left the gate and not yet returned: waiting for their sync, or
    /// releasing the state their publish replaced. Their writers are at work still
    /// (`mergeBuffersWhileIdle`).
    let commitsFinishing = Atomic<Int>(0)
    /// When commits stop, merges what the write buffers hold (`Options.writeBufferIdleMerge`).
    let idleWatch: IdleWatch?
    let openReport: OpenReport

    /// Opens (creating when missing, unless read-only) the database at `path`.
    ///
    /// - Parameters:
    ///   - path: The file's path.
    ///   - options: Durability, read-only, cache size and the other choices.
    /// - Throws: `StrataError.locked` when another handle writes the file (after waiting
    ///   up to `Options.lockTimeout`); `.notAStrataFile`;
    ///   `.unsupportedFormat` for a newer format; `.corruption` when recovery finds damage
    ///   before the last commit; `.io`.
    public convenience init(path: String, options: Options = Options()) throws {
        try self.init(path: path, options: options, fileSystem: POSIXFileSystem())
    }

    /// A new, empty database held in memory: the same engine, format and checks as a file,
    /// gone when the database is released. For tests and caches.
    ///
    /// ```swift
    /// let database = try Database.inMemory()
    /// ```
    ///
    /// - Parameter options: The engine's options; durability and read-only do not apply.
    /// - Returns: The database.
    /// - Throws: `StrataError.io` only when memory runs out.
    public static func inMemory(options: Options = Options()) throws -> Database {
        var options = options
        options.readOnly = false
        return try Database(path: "memory.strata", options: options, fileSystem: MemoryFileSystem())
    }

    init(path: String, options: Options, fileSystem: any FileSystem) throws {
        guard options.pageSize >= 512, options.pageSize <= 65536, options.pageSize.nonzeroBitCount == 1 else {
            throw StrataError.invalidOption("pageSize must be a power of two from 512 to 65536, not \(options.pageSize)")
        }
        self.path = path
        self.options = options
        self.fileSystem = fileSystem
        let merges = options.writeBufferEntries != nil && options.mergesWriteBufferInBackground
        idleWatch = merges ? options.writeBufferIdleMerge.map(IdleWatch.init(delay:)) : nil
        bufferMerges = merges ? BackgroundBufferMerges(logger: options.logger, idleWatch: idleWatch) : nil
        let file = try Self.openFile(path, options: options, fileSystem: fileSystem)
        let recovered: RecoveredState
        do {
            recovered = try Recovery.open(file, options: options, owner: Self.openingOwner)
        } catch {
            file.close()
            throw error
        }
        writer = WriterState(recovered, checkpointInterval: CheckpointInterval(options), logger: options.logger)
        if !options.readOnly {
            // Zeros a previous handle preallocated (and did not get to trim: a crash) are
            // space the log can use.
            writer.allocatedEnd = max(writer.end, (try? file.size()) ?? writer.end)
        }
        published = Mutex(writer.latest)
        counterCopy = Mutex(WriterCounters(writer))
        group = GroupCommit(sequence: recovered.sequence, end: recovered.end)
        openReport = OpenReport(
            bytesRead: recovered.store.bytesRead, replayedCommits: recovered.replayedCommits, tornBytes: recovered.tornBytes,
            salvagedFrom: recovered.salvagedFrom)
        compactInBackgroundIfGrownSinceLastCompaction(writer)
        idleWatch?.attach { [weak self] in self?.mergeBuffersWhileIdle() ?? .done }
    }

    /// How many times opening for writing retries when the file it locked was replaced.
    static let maxOpenAttempts = 1000

    /// Opens the file at `path`, creating it when missing (unless read-only). For writing,
    /// takes the lock and then checks that the locked descriptor is still the file at
    /// `path`: a compaction in another process renames its new file over the path and only
    /// then releases the lock of the old one, so a handle that opened the old file just
    /// before the rename would otherwise hold the lock of an unlinked file, and every
    /// commit it acknowledged would be lost. It retries then. Only a handle that passed
    /// this check removes a leftover `PATH.compact`: otherwise it could delete the file a
    /// live compaction is writing.
    private static func openFile(_ path: String, options: Options, fileSystem: any FileSystem) throws -> any StorageFile {
        var lockWait = LockWait(timeout: options.lockTimeout)
        var attempts = 0
        while attempts < maxOpenAttempts {
            if try !fileSystem.exists(path) {
                if options.readOnly { throw StrataError.io(operation: "open", path: path, errno: ENOENT) }
                try Recovery.create(path, fileSystem: fileSystem, pageSize: options.pageSize)
            }
            let file = try fileSystem.open(path, mode: options.readOnly ? .readOnly : .readWrite)
            if options.readOnly { return file }
            do {
                guard try file.tryLockExclusive() else {
                    file.close()
                    // Another handle writes the file: wait, then start over (it may have
                    // been replaced by a compaction meanwhile), until the timeout passes.
                    guard lockWait.pause() else { throw StrataError.locked(path: path) }
                    continue
                }
                attempts += 1
                if try fileSystem.identity(of: path) == file.identity() {
                    // A compaction that did not reach its rename left this; the original is intact.
                    try fileSystem.remove(path + ".compact")
                    return file
                }
            } catch {
                file.close()
                throw error
            }
            file.unlock()
            file.close()
        }
        throw StrataError.io(operation: "open (the file kept being replaced while it was locked)", path: path, errno: EAGAIN)
    }

    /// The waits between attempts to take a write lock another handle holds, until
    /// `Options.lockTimeout` has passed: 1, 2, 5, 10, 20 ms, then 50 ms apart (SQLite's
    /// busy handler backs off alike), the last one cut to end at the timeout.
    struct LockWait {
        private let deadline: ContinuousClock.Instant
        private var step = 0
        private static let pauses: [Duration] = [.milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10), .milliseconds(20), .milliseconds(50)]

        init(timeout: Duration) {
            deadline = .now + max(timeout, .zero)
        }

        /// Waits before the next attempt; false when the timeout has passed (no wait).
        mutating func pause() -> Bool {
            let left = deadline - .now
            guard left > .zero else { return false }
            let pause = min(Self.pauses[min(step, Self.pauses.count - 1)], left)
            step += 1
            Thread.sleep(forTimeInterval: Double(pause.components.seconds) + Double(pause.components.attoseconds) / 1e18)
            return true
        }
    }

    var isReadOnly: Bool { options.readOnly }

    /// A fresh owner id for copy-on-write: nodes of older owners are never changed in place.
    func nextOwner() -> UInt64 { owners.add(1, ordering: .relaxed).newValue }

    // MARK: Reading

    /// The latest committed state. Cheap: no I/O, no copying of data.
    ///
    /// - Returns: The snapshot; it stays as it is while later commits happen.
    /// - Throws: `StrataError.closed` after `close()`.
    public func snapshot() throws -> Snapshot {
        guard let snapshot = published.withLock({ $0 }) else { throw StrataError.closed(path: path) }
        return snapshot
    }

    /// Runs `body` on a snapshot of the latest committed state.
    ///
    /// - Parameter body: Reads through the snapshot.
    /// - Returns: What `body` returns.
    /// - Throws: `StrataError.closed`; what `body` throws.
    public func read<R>(_ body: (Snapshot) throws -> R) throws -> R {
        try body(try snapshot())
    }

    // MARK: Refreshing

    /// What `refresh()` found.
    public struct Refresh: Sendable, Equatable {
        /// The commit sequence before and after.
        public var previousSequence: UInt64
        /// The commit sequence after.
        public var sequence: UInt64
        /// The trees the new commits changed; nil when that cannot be told (the file was
        /// replaced by another process's compaction after commits this handle had not seen).
        public var changedTrees: Set<String>?

        /// Whether new commits became visible.
        public var hasChanges: Bool { sequence != previousSequence }

        /// A refresh from `previousSequence` to `sequence` that changed `changedTrees`.
        ///
        /// - Parameters:
        ///   - previousSequence: The commit sequence the handle saw before.
        ///   - sequence: The commit sequence it sees now.
        ///   - changedTrees: The trees the new commits changed; nil when unknown (the file was
        ///     replaced by a compaction).
        public init(previousSequence: UInt64, sequence: UInt64, changedTrees: Set<String>?) {
            (self.previousSequence, self.sequence, self.changedTrees) = (previousSequence, sequence, changedTrees)
        }

        static func unchanged(at sequence: UInt64) -> Refresh { Refresh(previousSequence: sequence, sequence: sequence, changedTrees: []) }
    }

    /// Makes the commits that other handles — in this process or another — appended since
    /// this read-only handle opened or last refreshed visible to new snapshots. Snapshots
    /// taken before stay as they were.
    ///
    /// A read-only handle sees the file as it was when it opened until it refreshes; a
    /// writable handle holds the file's lock, so no one else commits, and refreshing it
    /// does nothing. Refreshing takes no lock and never waits for the writer: it replays
    /// the complete commits appended since, stops before a commit still being written (the
    /// next refresh takes it), and reopens the file when another process's compaction
    /// replaced it.
    ///
    /// ```swift
    /// let reader = try Database(path: "app.strata", options: .init(readOnly: true))
    /// // ... another process commits ...
    /// if try reader.refresh().hasChanges { reload() }
    /// ```
    ///
    /// - Throws: `StrataError.corruption` when the new frames are damaged (valid commits
    ///   follow a bad one), `.io` when the file is gone or unreadable, `.closed` after `close()`.
    /// - Returns: What changed; `hasChanges` is false when no commit was added.
    @discardableResult
    public func refresh() throws -> Refresh {
        guard isReadOnly else { return .unchanged(at: try snapshot().sequence) }
        try enterGate()
        defer { leaveGate() }
        let before = try snapshot()
        let store = writer.store
        guard let identity = try fileSystem.identity(of: path) else {
            throw StrataError.io(operation: "refresh (the file was removed)", path: path, errno: ENOENT)
        }
        if try identity == store.file.identity() {
            let size = try store.file.size()
            if size == writer.end { return .unchanged(at: before.sequence) }
            if size > writer.end {
                var state = RecoveredState(
                    store: store, trees: before.trees, sequence: writer.sequence, checkpoint: writer.checkpoint,
                    checkpointSequence: writer.checkpointSequence, slotGeneration: writer.slotGeneration, end: writer.end,
                    tornBytes: 0, replayedCommits: 0)
                let touched = try Recovery.catchUp(&state, fileSize: size, owner: nextOwner(), options: options)
                replaceStore(state)
                return Refresh(previousSequence: before.sequence, sequence: state.sequence, changedTrees: touched)
            }
        }
        // Replaced by a compaction (or cut short by a writer's failed append): open it anew.
        let file = try fileSystem.open(path, mode: .readOnly)
        let state: RecoveredState
        do {
            state = try Recovery.open(file, options: options, owner: nextOwner())
        } catch {
            file.close()
            throw error
        }
        replaceStore(state)
        // A compaction keeps the sequence and the contents.
        let changed: Set<String>? = state.sequence == before.sequence ? [] : nil
        return Refresh(previousSequence: before.sequence, sequence: state.sequence, changedTrees: changed)
    }

    // MARK: Writing

    /// Starts the write transaction, waiting while another one is open.
    ///
    /// - Returns: The transaction; commit it or roll it back.
    /// - Throws: `StrataError.readOnly`; `.poisoned` after a failed commit; `.closed`;
    ///   `.nestedTransaction` when this thread already has one open.
    public func beginWrite() throws -> WriteTransaction {
        if isReadOnly { throw StrataError.readOnly(path: path) }
        try enterGate()
        do {
            try checkWritable()
            // Large values go to value frames with the commit in files of format 2 on; a
            // format 1 file keeps carrying them in its log (older code reads it).
            let values = writer.store.header.storesValuesAtCommit
                ? PendingValueFrames(start: writer.end, salt: writer.store.salt, durableUpTo: durableHorizon()) : nil
            // The newest state written, which a sync in flight may not have published yet.
            return WriteTransaction(database: self, snapshot: writer.latest, owner: nextOwner(), values: values)
        } catch {
            leaveGate()
            throw error
        }
    }

    /// Runs `body` in a write transaction and commits it when `body` returns; rolls back
    /// when it throws.
    ///
    /// ```swift
    /// try db.write { tx in
    ///     try tx.put(value, forKey: key, in: "users")
    /// }
    /// ```
    ///
    /// - Parameter body: Writes through the transaction.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws (nothing is committed then); as `beginWrite()` and
    ///   `WriteTransaction.commit()`.
    @discardableResult
    public func write<R>(_ body: (WriteTransaction) throws -> R) throws -> R {
        let tx = try beginWrite()
        do {
            let result = try body(tx)
            if !tx.isFinished { try tx.commit() }
            return result
        } catch {
            tx.rollback()
            throw error
        }
    }

    func finishWrite() { leaveGate() }

    /// Whether the handle has closed (a compaction running beside it stops then).
    func isClosed() -> Bool { published.withLock { $0 == nil } }

    /// Takes the writer's gate, or throws `nestedTransaction` when this thread holds it:
    /// waiting would deadlock.
    func enterGate() throws {
        guard gate.enter() else { throw StrataError.nestedTransaction(path: path) }
    }

    /// Called with the gate held.
    func checkWritable() throws {
        if isClosed() { throw StrataError.closed(path: path) }
        absorbSyncFailure()
        if let poison = writer.poison { throw poison }
    }

    /// With the gate held: a group sync that failed (outside the gate) poisons the handle
    /// here, and the file is cut back to its last durable commit, as a failed write is.
    private func absorbSyncFailure() {
        guard writer.poison == nil, let failure = group.currentFailure else { return }
        writer.poison(failure.error, rollingBackTo: failure.durableEnd)
    }

    /// With the gate held: waits until every commit written is durable and published, so
    /// a checkpoint, compaction or close starts from the state readers see.
    func settleHoldingGate() throws {
        do {
            try group.settle(publish: publish)
        } catch {
            absorbSyncFailure()
            throw error
        }
    }

    /// Waits until the commit with `sequence` is durable and visible; called by
    /// `WriteTransaction.commit()` after it left the gate, so that the commits of other
    /// threads written meanwhile share its sync.
    func waitUntilDurable(_ sequence: UInt64) throws {
        try group.waitUntilDurable(sequence, publish: publish)
    }

    /// Durable commits made and the syncs they took, for `statistics()`.
    var groupCommitCounters: (commits: UInt64, syncs: UInt64) { group.counters }

    /// Appends the transaction's value frames and log frame. In a format 3 file with `.full`
    /// durability it returns the commit's sequence, for `waitUntilDurable`, which syncs and
    /// publishes it; otherwise it syncs (`.full`, older files) or not (`.relaxed`),
    /// publishes the new state and returns nil. Called by
    /// `WriteTransaction.commit()` with the gate held; the log's payload is taken from it,
    /// leaving it empty.
    func commit(log: inout LogBatchWriter, values: PendingValueFrames?, trees: [String: TreeState]) throws -> UInt64? {
        try checkWritable()
        let sequence = writer.sequence + 1
        let operations = log.operationCount
        let payload = log.takePayload(sequence: sequence, timeMilliseconds: Self.now())
        guard payload.count <= FrameHeader.maxPayload else {
            throw StrataError.valueTooLarge(size: payload.count, limit: FrameHeader.maxPayload)
        }
        // The value frames were laid out from the end as the transaction began; the gate has
        // been held since, so the end is still there. (Were it not, their checksums, seeded
        // with their offsets, would fail: refuse the commit rather than write frames that
        // cannot verify.)
        let valueBytes = values?.bytes ?? []
        if let values, values.start != writer.end {
            throw StrataError.poisoned(cause: "a write transaction's value frames were laid out at offset \(values.start), but the log ends at \(writer.end); the commit was not written")
        }
        let logOffset = writer.end + UInt64(valueBytes.count)
        let frame = Frame.encode(.log, payload: payload, offset: logOffset, salt: writer.store.salt, compress: true,
                                 durableUpTo: durableHorizon())
        let frameEnd = logOffset + UInt64(frame.count)
        // Past the preallocated space: write the frames and the next stretch of zeros in one
        // call, so the commits after it overwrite written blocks and their fdatasync has no
        // file size (no metadata) to flush.
        let written = valueBytes.count + frame.count
        let allocated = frameEnd <= writer.allocatedEnd ? writer.allocatedEnd
            : options.durability == .full && written <= Self.preallocationFrameLimit ? frameEnd + Self.preallocation
            : frameEnd
        let zeros = allocated == writer.allocatedEnd ? 0 : Int(allocated - frameEnd)
        var bytes = valueBytes.isEmpty ? frame : valueBytes + frame
        if zeros > 0 { bytes += [UInt8](repeating: 0, count: zeros) }
        // Format 3 files share syncs among concurrent commits (`GroupCommit`); older files
        // sync each commit before the next is written, as their recovery assumes.
        let durable = options.durability == .full
        let grouped = durable && writer.store.header.groupsCommits
        try writer.guarded(rollingBackTo: writer.end) {
            try writer.store.file.write(bytes, at: writer.end)
            if durable && !grouped { try writer.store.file.sync() }
        }
        writer.allocatedEnd = allocated
        writer.end = frameEnd
        writer.sequence = sequence
        writer.logBytes += UInt64(frame.count)
        writer.operations += UInt64(operations)
        if writer.nearlyDue == nil, writer.logBytes >= writer.checkpointDueBytes - writer.checkpointDueBytes / 16 {
            writer.nearlyDue = (.now, writer.operations)
        }
        writer.latest = Snapshot(store: writer.store, trees: trees, sequence: sequence)
        if grouped {
            group.wrote(sequence: sequence, end: frameEnd, snapshot: writer.latest)
        } else {
            if durable { group.syncedAlone(sequence: sequence, end: frameEnd) }
            publish(writer.latest)
        }
        if checkpointIsDue() {
            // The checkpoint starts from a durable state: this commit's sync, whose failure
            // fails the commit.
            if grouped { try settleHoldingGate() }
            // The commit is durable already, so it still succeeds; the failed checkpoint
            // poisons the handle, the next write reports it, and the log says so now.
            do {
                try checkpointDueHoldingGate()
            } catch {
                writer.failedCheckpoints += 1
                options.logger.error("automatic checkpoint failed; the commit is durable, but this handle refuses further writes until reopened",
                                     metadata: ["path": "\(path)", "error": "\(error)"])
            }
        }
        return grouped ? sequence : nil
    }

    /// The offset known synced, recorded in the frames a format 3 file's writer appends
    /// (`FrameHeader.pendingBefore`); nil for older files, whose writer syncs each commit
    /// before the next. Called with the gate held.
    func durableHorizon() -> UInt64? {
        writer.store.header.groupsCommits ? group.currentDurableEnd : nil
    }

    /// Makes `snapshot` the latest state, unless the handle closed meanwhile (a read-only
    /// handle closes without the gate). Returns the state it replaced, for the caller to
    /// drop once it holds no lock another thread waits on (`GroupCommit`).
    ///
    /// The committing thread releases replaced states itself. Handed to a thread of their
    /// own, their frees (the old leaves' buffers) met the writer's allocations on glibc's
    /// arena lock: the writer spent a fifth of a W1 load waking the reclaiming thread
    /// (perf), and freeing on the thread that allocates next reuses warm memory. W1 at 1M,
    /// one run: insert.batch 131k → 206k records/s, update 136k → 149k. What the release
    /// costs is small since a branch's copy takes its children over (`BranchChildren`): an
    /// old branch version frees its own buffers, not ~120 children's counts.
    @discardableResult
    func publish(_ snapshot: Snapshot) -> Snapshot? {
        published.withLock { current -> Snapshot? in
            guard let old = current else { return nil }
            current = snapshot
            return old
        }
    }

    static func now() -> Int64 { Int64(Date().timeIntervalSince1970 * 1000) }

    /// Zero bytes written ahead of the log when a commit runs past the preallocated space
    /// (FORMAT.md, "Preallocated space"). A commit that lands inside it overwrites written
    /// blocks, so its fdatasync need not also flush the file's size: measured here, the
    /// difference between appending and overwriting is most of commit.durable's gap to the
    /// disk's limit. One commit per MiB of log pays for writing the zeros.
    static let preallocation: UInt64 = 1 << 20
    /// Only small durable commits preallocate. A large frame's sync is dominated by its own
    /// data, and zeros written ahead of bulk loads would double their bytes written (write
    /// amplification); without a sync (`.relaxed`) there is nothing to save.
    static let preallocationFrameLimit = 16 << 10

    // MARK: Checkpoints

    /// Writes every tree node changed since the last checkpoint and a checkpoint frame
    /// naming the roots, so the next open replays no log. Runs automatically (see
    /// `Options.checkpointLogBytes`) and on `close()`.
    ///
    /// - Throws: `StrataError.readOnly`; `.io` when the checkpoint cannot be written (the
    ///   database is poisoned then); `.closed`.
    public func checkpoint() throws {
        if isReadOnly { throw StrataError.readOnly(path: path) }
        try enterGate()
        defer { leaveGate() }
        try checkWritable()
        checkpointPass.cancel()
        try checkpointHoldingGate()
    }

    /// - Parameters:
    ///   - closing: The handle is closing: no background compaction is started (it would
    ///     only be stopped at once).
    ///   - known: Nodes a background pass wrote already (`CheckpointPass`): referred to,
    ///     not written again.
    ///   - startedAt: When the checkpoint's work began (its pass's, for one in the
    ///     background): the policy of `BackgroundCheckpoints.whenCommitsAreSparse`
    ///     measures how long checkpoints take.
    ///   - merges: Write buffers a background pass merged before it wrote (in order),
    ///     installed where they still apply.
    func checkpointHoldingGate(closing: Bool = false, known: [ObjectIdentifier: NodeWriter.Written] = [:],
                               startedAt: ContinuousClock.Instant = .now, merges: [[String: BufferMerge]] = []) throws {
        try settleHoldingGate()
        let latest = writer.latest
        guard writer.logBytes > 0 || writer.checkpoint == nil && !latest.trees.isEmpty else { return }
        let store = writer.store
        // A checkpoint names trees as of a log position, and replay after it starts there:
        // writes still in a write buffer would be lost to it, so they go into their trees
        // first: by the merges made beside the writer where they apply (waiting for the one
        // running costs less than doing its work again), the rest here (copies by an owner
        // of their own: the published trees stay as they are).
        bufferMerges?.waitUntilIdle()
        var installed = bufferMerges?.takeFinished().installed(in: latest.trees, store: store) ?? latest.trees
        for merge in merges { installed = merge.installed(in: installed, store: store) }
        let merged = try TreeChanges.mergingBuffers(of: installed, mutator: TreeMutator(store: store, owner: nextOwner()))
        let current = Snapshot(store: store, trees: merged, sequence: latest.sequence)
        let start = writer.end
        var nodes = NodeWriter(store: store, appender: FrameAppender(file: store.file, salt: store.salt, position: start,
                                                                     durableUpTo: durableHorizon()))
        nodes.known = known
        var record = CheckpointRecord(sequence: current.sequence, timeMilliseconds: Self.now(), previous: writer.checkpoint, trees: [])
        var trees: [String: TreeState] = [:]
        try writer.guarded(rollingBackTo: start) {
            for name in current.trees.keys.sorted() {
                let state = current.trees[name]!
                let root = try state.root.map { try nodes.write($0) }
                record.trees.append(.init(name: name, entryCount: state.entryCount, root: root?.address))
                trees[name] = TreeState(root: root?.kept, entryCount: state.entryCount)
            }
            // Pages are durable before the checkpoint frame that names them is written, so
            // a valid checkpoint frame never points at pages a crash could lose.
            try nodes.appender.flush()
            try store.file.sync()
            nodes.appender.durableUpTo = nil   // everything before the checkpoint frame is synced
            let address = try nodes.appender.append(.checkpoint, payload: record.encoded())
            try nodes.appender.flush()
            try store.file.sync()
            let slot = CheckpointSlot(generation: writer.slotGeneration + 1, checkpoint: address, sequence: record.sequence)
            try store.file.write(slot.encoded(salt: store.salt), at: slot.fileOffset)
            try store.file.sync()
            writer.slotGeneration = slot.generation
            writer.checkpoint = address
        }
        writer.end = nodes.appender.position
        writer.allocatedEnd = max(writer.allocatedEnd, writer.end)
        writer.checkpointSequence = record.sequence
        writer.logBytes = 0
        writer.nearlyDue = nil
        writer.scheduleNextCheckpoint()
        writer.lastCheckpoint = (.now - startedAt, nodes.pages + known.count)
        writer.latest = Snapshot(store: store, trees: trees, sequence: current.sequence)
        group.settled(sequence: current.sequence, end: writer.end)
        publish(writer.latest)
        if !closing { compactInBackgroundIfDue(writer) }
    }

    // MARK: Closing

    /// Checkpoints (unless disabled or poisoned), releases the write lock and closes the
    /// handle. Waits for an open write transaction to finish, and stops a background
    /// compaction (`Options.autoCompaction`). Snapshots taken before stay
    /// readable.
    ///
    /// - Throws: `StrataError.io` when the final checkpoint cannot be written (the log still
    ///   holds every commit: nothing is lost).
    public func close() throws {
        if isReadOnly {
            published.withLock { $0 = nil }
            return
        }
        // After the gate is left: a background compaction sees the handle closed, stops and
        // removes its unfinished file; a background checkpoint stops at its next batch.
        defer {
            background.wait()
            checkpointPass.wait()
            bufferMerges?.waitUntilIdle()
        }
        try enterGate()
        defer { leaveGate() }
        guard published.withLock({ $0 != nil }) else { return }
        checkpointPass.cancel()
        defer {
            published.withLock { $0 = nil }
            writer.store.file.unlock()
        }
        // Commits still waiting for their sync get it (or its failure poisons the handle).
        try? settleHoldingGate()
        if options.checkpointOnClose, writer.poison == nil {
            try checkpointHoldingGate(closing: true)
        }
        // A closed file ends at its last frame: the preallocated zeros go.
        if writer.poison == nil, writer.allocatedEnd > writer.end {
            try writer.store.file.truncate(to: writer.end)
            writer.allocatedEnd = writer.end
        }
    }

    deinit {
        if !isReadOnly { writer.store.file.unlock() }
    }

    // MARK: Internals for compaction and statistics

    /// Runs `body` with the gate held and the handle checked writable.
    func withWriter<R>(_ body: (WriterState) throws -> R) throws -> R {
        if isReadOnly { throw StrataError.readOnly(path: path) }
        try enterGate()
        defer { leaveGate() }
        try checkWritable()
        try settleHoldingGate()
        return try body(writer)
    }

    /// - Parameters:
    ///   - state: The new file's state.
    ///   - allocatedEnd: Where zeros written ahead of the new file's log end
    ///     (`Database.preallocation`); `state.end` when there are none.
    func replaceStore(_ state: RecoveredState, allocatedEnd: UInt64 = 0) {
        writer.adopt(state)
        writer.allocatedEnd = max(state.end, allocatedEnd)
        group.settled(sequence: state.sequence, end: state.end)
        publish(writer.latest)
    }

    /// Zero bytes after the last frame, preallocated for the log (by this handle, or by a
    /// writer another handle follows); 0 when the bytes after the last frame are not all
    /// zero (a torn write) or there are none.
    func preallocatedBytes() throws -> UInt64 { try preallocation().zeros }

    /// Where the frames end: the file's size less its preallocated zeros, both from one
    /// reading of the size. (Subtracting `preallocatedBytes()` from a size read before it
    /// overflowed when a commit grew the file in between: the verifier beside a writer.)
    func framesEnd() throws -> UInt64 {
        let (size, zeros) = try preallocation()
        return size - zeros
    }

    private func preallocation() throws -> (size: UInt64, zeros: UInt64) {
        let end = writerCounters().end
        let size = try writer.store.file.size()
        guard size > end, try Recovery.isZeroTail(from: end, to: size, store: writer.store) else { return (size, 0) }
        return (size, size - end)
    }

    /// A consistent copy of the writer's counters (taken under the gate for writers).
    func writerCounters() -> WriterCounters {
        // `enter()` fails only inside this thread's own transaction (or refresh): the
        // counters are stable then.
        guard gate.enter() else { return WriterCounters(writer) }
        defer { leaveGate() }
        return WriterCounters(writer)
    }

    /// The writer's counters as the gate was last left, without waiting for it: what
    /// `statistics()` reports. (Taken under the gate, it waited for the transaction, merge
    /// or checkpoint under way: seconds beside a 10M-record load.) Inside this thread's own
    /// transaction, the counters as they are.
    func lastWriterCounters() -> WriterCounters {
        if gate.isHeldByCurrentThread { return WriterCounters(writer) }
        return counterCopy.withLock { $0 }
    }

    /// Leaves the gate, first copying the writer's counters for `lastWriterCounters()`.
    /// Every holder of the gate leaves through here.
    func leaveGate() {
        let counters = WriterCounters(writer)
        counterCopy.withLock { $0 = counters }
        gate.leave()
    }
}

/// A copy of the writer's position and sequences, for statistics.
struct WriterCounters {
    var end: UInt64
    var logBytes: UInt64
    var checkpointDueBytes: UInt64
    var sequence: UInt64
    var checkpointSequence: UInt64
    var checkpoint: FrameAddress?
    var poisoned: Bool
    var failedCheckpoints: UInt64
    var compactedSize: UInt64

    init(_ writer: WriterState) {
        end = writer.end
        compactedSize = writer.compactedSize
        logBytes = writer.logBytes
        checkpointDueBytes = writer.checkpointDueBytes
        sequence = writer.sequence
        checkpointSequence = writer.checkpointSequence
        checkpoint = writer.checkpoint
        poisoned = writer.poison != nil
        failedCheckpoints = writer.failedCheckpoints
    }
}

/// What opening the file cost and found.
struct OpenReport: Sendable {
    var bytesRead: UInt64
    var replayedCommits: Int
    var tornBytes: UInt64
    /// Where a salvaging open (`.truncateAtFirstBadFrame`) cut off damage followed by
    /// valid commits; nil when it did not.
    var salvagedFrom: UInt64?
}

/// The writer's view of the file. Touched only while holding the database's gate.
final class WriterState: @unchecked Sendable {
    var store: PageStore
    var end: UInt64
    var sequence: UInt64
    var checkpoint: FrameAddress?
    var checkpointSequence: UInt64
    var slotGeneration: UInt64
    var logBytes: UInt64
    /// The newest state written: what the next write transaction builds on. Readers see it
    /// once it is durable (`GroupCommit`).
    var latest: Snapshot
    /// Set by the first failed write or sync; every later write reports it.
    var poison: StrataError?
    /// Automatic checkpoints that failed after their commit had succeeded.
    var failedCheckpoints: UInt64 = 0
    /// Where the file's preallocated zeros end (`Database.preallocation`); `end` when none.
    var allocatedEnd: UInt64
    /// The file's end after its last compaction (read back along the checkpoint chain in
    /// the background after opening; until then, the end at opening): what
    /// `Options.autoCompaction` measures growth against.
    var compactedSize: UInt64
    /// The entries the trees held when `compactedSize` was taken: at opening, or after the
    /// handle's last compaction.
    var compactedEntries: UInt64
    /// How long the handle's last checkpoint took, from the start of its work to its slot,
    /// and the pages it wrote (`BackgroundCheckpoints.whenCommitsAreSparse`); nil before
    /// the first.
    var lastCheckpoint: (duration: Duration, pages: Int)?
    /// Puts and deletes this handle committed.
    var operations: UInt64 = 0
    /// When the log since the last checkpoint reached fifteen sixteenths of
    /// `checkpointDueBytes`, and `operations` then: the pace of the commits as the
    /// checkpoint falls due.
    var nearlyDue: (at: ContinuousClock.Instant, operations: UInt64)?
    /// The running checkpoint pass as the writer measures it (that of the last pass once
    /// it ends: read only while `Database.checkpointPass.isRunning`).
    var pass = PassProgress()
    let logger: Logger
    /// How much log the automatic checkpoints let pass (`Options.checkpointLogBytes`).
    let checkpointInterval: CheckpointInterval
    /// The log bytes after which the next automatic checkpoint is due: set when the last
    /// one was written (or the file opened or replaced), from the live data then.
    private(set) var checkpointDueBytes: UInt64 = 0

    init(_ state: RecoveredState, checkpointInterval: CheckpointInterval, logger: Logger) {
        self.logger = logger
        self.checkpointInterval = checkpointInterval
        store = state.store
        end = state.end
        allocatedEnd = state.end
        compactedSize = state.end
        compactedEntries = Self.entries(of: state.trees)
        sequence = state.sequence
        checkpoint = state.checkpoint
        checkpointSequence = state.checkpointSequence
        slotGeneration = state.slotGeneration
        logBytes = state.end - (state.checkpoint?.end ?? FileHeader.dataStart)
        latest = Snapshot(store: state.store, trees: state.trees, sequence: state.sequence)
        scheduleNextCheckpoint()
    }

    /// The entries the trees hold now over those they held at `compactedSize`, for
    /// `AutoCompaction.isOverdue`; 1 when they held none.
    var entryGrowthSinceCompaction: Double {
        guard compactedEntries > 0 else { return 1 }
        return Double(Self.entries(of: latest.trees)) / Double(compactedEntries)
    }

    /// The store's live data, estimated as its size after its last compaction grown with
    /// the entries added since (`entryGrowthSinceCompaction`).
    var estimatedLiveData: UInt64 {
        UInt64(Self.liveData(baseline: compactedSize, entryGrowth: entryGrowthSinceCompaction))
    }

    /// The live data of a store `baseline` bytes long after its last compaction whose
    /// entries have since grown `entryGrowth` times, that growth taken between 1 and `cap`:
    /// the one estimate the checkpoint interval and `AutoCompaction.isOverdue` share.
    static func liveData(baseline: UInt64, entryGrowth: Double, cap: Double = .infinity) -> Double {
        Double(baseline) * min(max(entryGrowth, 1), cap)
    }

    /// Sets when the next automatic checkpoint is due (`CheckpointInterval`), from the live
    /// data now: after a checkpoint, and when the file is opened or replaced.
    func scheduleNextCheckpoint() {
        checkpointDueBytes = checkpointInterval.logBytes(liveData: estimatedLiveData)
    }

    /// The entries of `trees` together, a tree's count below zero (`TreeState.entryCount`,
    /// while buffered writes are unresolved) taken as none.
    private static func entries(of trees: [String: TreeState]) -> UInt64 {
        trees.values.reduce(0) { total, tree in total &+ (tree.entryCount > UInt64(Int64.max) ? 0 : tree.entryCount) }
    }

    func adopt(_ state: RecoveredState) {
        store = state.store
        end = state.end
        allocatedEnd = state.end
        compactedSize = state.end
        compactedEntries = Self.entries(of: state.trees)
        sequence = state.sequence
        checkpoint = state.checkpoint
        checkpointSequence = state.checkpointSequence
        slotGeneration = state.slotGeneration
        logBytes = state.end - (state.checkpoint?.end ?? FileHeader.dataStart)
        latest = Snapshot(store: state.store, trees: state.trees, sequence: state.sequence)
        scheduleNextCheckpoint()
    }

    /// Runs file writes; on failure poisons the handle (an fsync error is not retryable:
    /// the kernel may have dropped the dirty pages) and cuts the file back to `end`, best
    /// effort, so a reopen shows the last good commit.
    func guarded(rollingBackTo end: UInt64, _ body: () throws -> Void) throws {
        do {
            try body()
        } catch {
            let cause = (error as? StrataError) ?? .io(operation: "write", path: store.path, errno: EIO)
            poison(cause, rollingBackTo: end)
            throw cause
        }
    }

    /// Refuses every later write, logs why, and cuts the file back to `end`, best effort,
    /// so a reopen shows the last good commit.
    func poison(_ cause: StrataError, rollingBackTo end: UInt64) {
        poison = .poisoned(cause: cause.description)
        logger.error("write failed; the handle refuses further writes until reopened (the file keeps its last good commit)",
                     metadata: ["path": "\(store.path)", "error": "\(cause)"])
        try? store.file.truncate(to: end)
        allocatedEnd = end
    }
}
