import Synchronization

/// The state of one tree in a snapshot or transaction.
struct TreeState: @unchecked Sendable {
    var root: NodeRef?
    /// Every entry the tree holds, its write buffer's included, but for what buffered puts
    /// whose keys were not looked up add (`exactCount` adds them). In wrapping arithmetic:
    /// a delete of a key such a put added takes one away that was never counted, and the
    /// sum with what they add comes out exact.
    var entryCount: UInt64
    /// The tree's write buffer: sorted runs newer than the tree (docs/WRITE-BUFFER.md); nil
    /// when nothing is buffered.
    var runs: SortedRuns? = nil
    /// The buffer's newest writes, small commits' as they wrote them, newer than `runs`
    /// (`BufferTail`); nil when there are none.
    var tail: BufferTail.View? = nil
    /// A write transaction's own buffered writes, newer than `tail`; nil in a snapshot.
    var pending: PendingWrites? = nil

    /// The number of entries: `entryCount`, and what the buffered puts whose keys were not
    /// looked up add (the keys of those the tree lacks). Those are looked up in the tree
    /// once per run, the answer kept with the run; a transaction's pending ones at each call.
    func exactCount(store: PageStore) throws -> UInt64 {
        var count = entryCount
        if let runs { for run in runs.runs { count &+= UInt64(try run.countOfUnresolved(store: store, root: root)) } }
        if let tail { count &+= UInt64(try tail.tail.countOfUnresolved(in: tail, store: store, root: root)) }
        if let pending {
            try pending.forEachCurrent { i in
                guard pending.unresolved[i] else { return }
                let key = pending.entries.withUnchangingEntry(i) { key, _ in key }
                // A tombstone carrying the count of a put of a key new to the tree adds back
                // what its delete took; a put of such a key adds it.
                if try TreeReader.locate(store: store, root: root, key: key) == nil { count &+= 1 }
            }
        }
        return count
    }

    /// Whether reads must look at buffered writes before the tree.
    @inline(__always)
    var isBuffered: Bool { runs != nil || tail != nil || pending != nil }

    /// The buffer's sorted runs, newest first: the tail's as one (`BufferTail.run`), then
    /// `runs`. What a cursor and a merge into the tree read.
    var sortedRuns: [BufferRun] {
        guard let tail else { return runs?.runs ?? [] }
        return [tail.run] + (runs?.runs ?? [])
    }

    /// The newest write of `key` in the tail and the runs (a transaction's pending writes
    /// aside); `hash` is its `BloomFilter.hash`.
    @inline(__always)
    func findCommitted(_ key: UnsafeRawBufferPointer, hash: UInt64) -> BufferHit {
        if let tail {
            let hit = tail.tail.find(key, hash: hash, in: tail)
            if case .absent = hit {} else { return hit }
        }
        return runs?.find(key, hash: hash) ?? .absent
    }

    /// The entries the runs and the tail hold (tombstones and a key's older writes in
    /// other runs included), and their bytes as encoded: what the merge policy weighs.
    var bufferedEntries: Int { (runs?.entries ?? 0) + (tail?.count ?? 0) }
    var bufferedBytes: Int { (runs?.bytes ?? 0) + (tail?.bytes ?? 0) }
}

/// One tree of a snapshot or transaction, as handed to the shared read operations.
public struct TreeHandle {
    let store: PageStore
    let state: TreeState
    /// Whether the tree is a snapshot's, whose nodes nothing changes (a write transaction's
    /// may change under a reader that writes as it reads). Set by whoever makes the handle:
    /// no default, since lending a changing tree's bytes unretained would be unsafe.
    let unchanging: Bool

    /// `TreeReading.withValue(forKey:in:_:)` on this handle's tree, without finding the tree
    /// by name: for a caller that reads one tree of a snapshot many times.
    ///
    /// A handle from a `Snapshot` reads that snapshot as long as it lives; one from a
    /// `WriteTransaction` is good only until the transaction's next write.
    ///
    /// - Parameters:
    ///   - key: The key's one element.
    ///   - body: Reads the value; the buffer is valid only during the call.
    /// - Returns: What `body` returns, or nil when the key is absent.
    /// - Throws: `StrataError.corruption`; what `body` throws.
    public func withValue<R>(forKey key: some KeyComponent, _ body: (UnsafeRawBufferPointer) throws -> R) throws -> R? {
        guard let location = try key.withKeyBytes({ try TreeReader.locate(store: store, state: state, key: $0) }) else { return nil }
        return try TreeReader.lend(location, from: store, unchanging: unchanging, to: body)
    }

    /// `withValue(forKey:_:)` for a key already encoded, in a buffer the caller holds: what
    /// an index lookup has in hand (the record's key, read from the index entry).
    ///
    /// ```swift
    /// let users = try snapshot.treeHandle("users", forIteration: false)
    /// try snapshot.scan("users_by_age") { indexKey, _ in
    ///     _ = try users.withValue(UnsafeRawBufferPointer(rebasing: indexKey[1...])) { decode($0) }
    ///     return true
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - key: The encoded key.
    ///   - body: Reads the value; the buffer is valid only during the call.
    /// - Returns: What `body` returns, or nil when the key is absent.
    /// - Throws: `StrataError.corruption`; what `body` throws.
    public func withValue<R>(_ key: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) throws -> R) throws -> R? {
        guard let location = try TreeReader.locate(store: store, state: state, key: key) else { return nil }
        return try TreeReader.lend(location, from: store, unchanging: unchanging, to: body)
    }

    /// Looks up every key of `keys` and lends each value to `body` with the key's position
    /// in `keys`, in that order; nil for a key the tree lacks.
    ///
    /// Many lookups in one call run faster than one call each in a tree larger than the
    /// CPU's caches: a snapshot's lookups walk down the tree eight at a time, each step of
    /// one walk asking for the memory its next step reads while the other walks take
    /// theirs, so their waits for memory overlap instead of adding up (<doc:UsingTheEngine>,
    /// "Many lookups at once"). What an index query does with the records its index entries
    /// name. A write transaction's handle looks the keys up one by one and, like any of its
    /// handles, is good only until the transaction's next write: to write in `body`, call
    /// the transaction's `withValues(_:in:_:)`.
    ///
    /// ```swift
    /// let users = try snapshot.treeHandle("users", forIteration: false)
    /// var batch = KeyBatch()
    /// for id: Int64 in [3, 5, 8] { batch.append(id) }
    /// var bytes = 0
    /// try users.withValues(batch) { i, value in
    ///     bytes += value?.count ?? 0   // value is nil when the tree lacks key i
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - keys: The encoded keys, any number (duplicates too).
    ///   - body: Reads the value of the key at its first argument, or nil when the tree
    ///     lacks it; the buffer is valid only during the call.
    /// - Throws: `StrataError.corruption` for a damaged page; what `body` throws, after which
    ///   no more keys are looked up.
    public func withValues(_ keys: KeyBatch, _ body: (_ index: Int, _ value: UnsafeRawBufferPointer?) throws -> Void) throws {
        try TreeReader.withValues(store: store, state: state, unchanging: unchanging, keys: keys, body)
    }
}

/// Reading operations shared by `Snapshot` and `WriteTransaction`.
public protocol TreeReading {
    /// The named tree; plumbing for the operations below.
    ///
    /// - Parameters:
    ///   - name: The tree's name.
    ///   - forIteration: Whether the handle will walk many entries.
    /// - Returns: The handle.
    /// - Throws: `StrataError.treeNotFound`.
    func treeHandle(_ name: String, forIteration: Bool) throws -> TreeHandle
    /// The names of all trees, sorted.
    var treeNames: [String] { get }
    /// Whether a tree with this name exists.
    ///
    /// - Parameter name: The tree's name.
    /// - Returns: True when the tree exists.
    func hasTree(_ name: String) -> Bool
}

extension TreeReading {
    /// The value stored for `key` in `tree`, or nil.
    ///
    /// ```swift
    /// let bytes = try snapshot.get(Key(42).bytes, in: "users")
    /// ```
    ///
    /// - Parameters:
    ///   - key: The encoded key.
    ///   - tree: The tree's name.
    /// - Returns: A copy of the value, or nil when the key is absent.
    /// - Throws: `StrataError.treeNotFound`; `.corruption` for damaged pages; `.io`.
    public func get(_ key: [UInt8], in tree: String) throws -> [UInt8]? {
        let handle = try treeHandle(tree, forIteration: false)
        return try key.withUnsafeBytes { try TreeReader.get(store: handle.store, state: handle.state, key: $0) }
    }

    /// Lends the value stored for `key` to `body` without copying it (when it is stored
    /// inline); returns nil when the key is absent.
    ///
    /// - Parameters:
    ///   - key: The encoded key.
    ///   - tree: The tree's name.
    ///   - body: Reads the value; the buffer is valid only during the call.
    /// - Returns: What `body` returns, or nil when the key is absent.
    /// - Throws: `StrataError.treeNotFound`; `.corruption`; what `body` throws.
    public func withValue<R>(_ key: [UInt8], in tree: String, _ body: (UnsafeRawBufferPointer) throws -> R) throws -> R? {
        // The key's buffer serves only the (non-generic) search: a `withUnsafeBytes` whose
        // result were `R?` would cost a metadata lookup per call in unspecialized callers.
        let handle = try treeHandle(tree, forIteration: false)
        guard let location = try key.withUnsafeBytes({ try TreeReader.locate(store: handle.store, state: handle.state, key: $0) }) else { return nil }
        return try TreeReader.lend(location, from: handle.store, unchanging: handle.unchanging, to: body)
    }

    /// `withValue(_:in:_:)` for a key the caller already holds in a buffer (no array needed).
    ///
    /// - Parameters:
    ///   - key: The encoded key.
    ///   - tree: The tree's name.
    ///   - body: Reads the value; the buffer is valid only during the call.
    /// - Returns: What `body` returns, or nil when the key is absent.
    /// - Throws: `StrataError.treeNotFound`; `.corruption`; what `body` throws.
    public func withValue<R>(_ key: UnsafeRawBufferPointer, in tree: String, _ body: (UnsafeRawBufferPointer) throws -> R) throws -> R? {
        try treeHandle(tree, forIteration: false).withValue(key, body)
    }

    /// `withValue(_:in:_:)` for the one-element key made of `key`, encoded where it costs
    /// least (on the stack for numbers and dates; see `KeyComponent.withKeyBytes`).
    ///
    /// ```swift
    /// let name = try snapshot.withValue(forKey: Int64(42), in: "users") { String(decoding: $0, as: UTF8.self) }
    /// ```
    ///
    /// - Parameters:
    ///   - key: The key's one element.
    ///   - tree: The tree's name.
    ///   - body: Reads the value; the buffer is valid only during the call.
    /// - Returns: What `body` returns, or nil when the key is absent.
    /// - Throws: `StrataError.treeNotFound`; `.corruption`; what `body` throws.
    public func withValue<R>(forKey key: some KeyComponent, in tree: String, _ body: (UnsafeRawBufferPointer) throws -> R) throws -> R? {
        try treeHandle(tree, forIteration: false).withValue(forKey: key, body)
    }

    /// `TreeHandle.withValues(_:_:)` on the tree called `tree`: every key of `keys` looked
    /// up, a snapshot's together, each value lent to `body` with the key's position. In a
    /// write transaction each key is looked up in the tree as it is at the key's turn, so
    /// `body` may write to it (a read-modify-write of each record).
    ///
    /// ```swift
    /// var batch = KeyBatch()
    /// for id: Int64 in ids { batch.append(id) }
    /// try snapshot.withValues(batch, in: "users") { i, value in
    ///     if let value { print(ids[i], value.count) }
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - keys: The encoded keys.
    ///   - tree: The tree's name.
    ///   - body: Reads the value of the key at its first argument, or nil when the tree
    ///     lacks it; the buffer is valid only during the call.
    /// - Throws: `StrataError.treeNotFound`; `.corruption`; what `body` throws.
    public func withValues(_ keys: KeyBatch, in tree: String, _ body: (_ index: Int, _ value: UnsafeRawBufferPointer?) throws -> Void) throws {
        let handle = try treeHandle(tree, forIteration: false)
        if handle.unchanging { return try handle.withValues(keys, body) }
        // A write transaction: `body` may change the tree, splitting nodes a handle taken
        // before would still read, so each key finds the tree afresh.
        try keys.withKeys { key in
            for i in 0 ..< keys.count where try withValue(key(i), in: tree, { try body(i, $0) }) == nil {
                try body(i, nil)
            }
        }
    }

    /// Whether `tree` holds `key`, without reading its value.
    /// - Throws: `StrataError.treeNotFound`; `.corruption` for damaged pages.
    /// - Parameters:
    ///   - key: The encoded key.
    ///   - tree: The tree's name.
    /// - Returns: True when the tree holds the key.
    public func contains(_ key: [UInt8], in tree: String) throws -> Bool {
        let handle = try treeHandle(tree, forIteration: false)
        return try key.withUnsafeBytes { try TreeReader.withValue(store: handle.store, state: handle.state, key: $0) { _ in true } } ?? false
    }

    /// The number of entries in `tree`.
    ///
    /// - Parameter tree: The tree's name.
    /// - Returns: Its entry count, kept in the tree's state: no pages are read, unless the
    ///   tree's write buffer holds puts whose keys were not looked up (`Options.writeBufferEntries`):
    ///   the first count after such a commit looks each up once.
    /// - Throws: `StrataError.treeNotFound`.
    public func count(in tree: String) throws -> Int {
        let handle = try treeHandle(tree, forIteration: false)
        return Int(try handle.state.exactCount(store: handle.store))
    }

    /// A cursor over `tree`, unpositioned; call `first()`, `last()` or `seek(to:)`.
    ///
    /// - Parameter tree: The tree's name.
    /// - Returns: A cursor valid as long as this transaction or snapshot.
    /// - Throws: `StrataError.treeNotFound`.
    public func cursor(_ tree: String) throws -> Cursor {
        let handle = try treeHandle(tree, forIteration: true)
        return Cursor(store: handle.store, state: handle.state)
    }

    /// Visits the entries of `range` in key order (or reverse) until `body` returns false.
    /// Keys and inline values are lent to `body`, not copied: scanning allocates nothing
    /// per entry.
    ///
    /// ```swift
    /// var total = 0
    /// try snapshot.scan("users", in: .prefix(Key("a").bytes)) { key, value in
    ///     total += value.count
    ///     return true
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - tree: The tree's name.
    ///   - range: The keys to visit; every key by default.
    ///   - reverse: Visit from the largest key down.
    ///   - body: Called with each key and value (valid only during the call); returns whether
    ///     to go on.
    /// - Throws: `StrataError.treeNotFound`; `.corruption` for damaged pages; what `body` throws.
    public func scan(_ tree: String, in range: KeyRange = .all, reverse: Bool = false,
                     _ body: (_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) throws -> Bool) throws {
        try cursor(tree).scan(range, reverse: reverse, body)
    }
}

/// A consistent, read-only view of the database as of one commit. Many snapshots can be
/// used at once, from any thread, while a writer commits: a snapshot never changes.
public final class Snapshot: TreeReading, Sendable {
    let store: PageStore
    let trees: [String: TreeState]
    /// The commit sequence number this snapshot shows.
    public let sequence: UInt64

    /// The trees again as a list when there are few of them (most files): finding a name
    /// among a handful by comparison costs less than hashing it (callgrind, W1 get: ~300 of
    /// the engine's ~2,300 instructions per lookup saved).
    private let fewTrees: [NamedTree]?
    private static let listedTreesLimit = 8

    /// A struct rather than a tuple: an array of tuples is destroyed through the runtime's
    /// generic tuple witness, element by element; every commit frees the snapshot it
    /// replaced, and that was most of the release (perf, W1 commit.durable: 1.7 µs a commit).
    private struct NamedTree {
        let name: String
        let state: TreeState
    }

    init(store: PageStore, trees: [String: TreeState], sequence: UInt64) {
        self.store = store
        self.trees = trees
        self.sequence = sequence
        self.fewTrees = trees.count <= Self.listedTreesLimit ? trees.map { NamedTree(name: $0.key, state: $0.value) } : nil
    }

    /// The state of the tree called `name`, or nil when the snapshot has none.
    private func state(ofTree name: String) -> TreeState? {
        guard let fewTrees else { return trees[name] }
        for tree in fewTrees where tree.name == name { return tree.state }
        return nil
    }

    /// The tree's root and page store, for the reading operations `TreeReading` provides.
    /// - Throws: `StrataError.treeNotFound`.
    /// - Parameters:
    ///   - name: The tree's name.
    ///   - forIteration: Whether the handle will walk many entries (it may then read ahead).
    /// - Returns: The handle.
    public func treeHandle(_ name: String, forIteration: Bool) throws -> TreeHandle {
        guard let state = state(ofTree: name) else { throw StrataError.treeNotFound(name) }
        return TreeHandle(store: store, state: state, unchanging: true)
    }

    /// Every tree's name, sorted.
    public var treeNames: [String] { trees.keys.sorted() }

    /// Whether a tree of this name exists.
    ///
    /// - Parameter name: The tree's name.
    /// - Returns: True when the snapshot has the tree.
    public func hasTree(_ name: String) -> Bool { state(ofTree: name) != nil }
}

/// The one read-write transaction of a database. Changes are visible to this transaction
/// at once and to everyone else after `commit()`; `rollback()` (or letting the transaction
/// go) discards them.
///
/// ```swift
/// let tx = try db.beginWrite()
/// try tx.createTree("users", ifNotExists: true)
/// try tx.put(Array("Ada".utf8), forKey: Key(1).bytes, in: "users")
/// try tx.commit()
/// ```
///
/// Only one write transaction exists at a time per database: `beginWrite()` waits until
/// the current one finishes. A transaction belongs to one thread at a time.
public final class WriteTransaction: TreeReading {
    let database: Database
    // The state every put reads and changes opts out of dynamic exclusivity checks: a
    // transaction belongs to one thread at a time, and no operation holds an access across
    // a call into the caller's code (a put inside a scan's or a lookup's closure is
    // supported: BTreeTests). The checks were ~6 `swift_beginAccess` calls per put, 3.4% of
    // its instructions (callgrind, W1 insert at 100k).
    @exclusivity(unchecked) var changes: TreeChanges
    @exclusivity(unchecked) var log = LogBatchWriter()
    /// The large values written with the commit; nil for a format 1 file, whose log carries
    /// them (FORMAT.md §5.1).
    @exclusivity(unchecked) var values: PendingValueFrames?
    @exclusivity(unchecked) private(set) var isFinished = false

    init(database: Database, snapshot: Snapshot, owner: UInt64, values: PendingValueFrames?) {
        self.database = database
        self.changes = TreeChanges(trees: snapshot.trees, mutator: TreeMutator(store: snapshot.store, owner: owner))
        self.changes.buffer = WriteBufferPolicy(database.options, merges: database.bufferMerges)
        self.values = values
    }

    deinit {
        if !isFinished {
            releasePendingValues(committed: false)
            database.finishWrite()
        }
    }

    /// The pending values are in the value cache, pinned, so this transaction reads them
    /// before they are on disk: a commit unpins them, anything else removes them (their
    /// offsets will hold other frames).
    private func releasePendingValues(committed: Bool) {
        guard let offsets = values?.offsets, !offsets.isEmpty else { return }
        if committed { store.values.unpin(offsets) } else { store.values.remove(offsets) }
    }

    var store: PageStore { changes.mutator.store }

    /// The tree's root and page store, for the reading operations `TreeReading` provides.
    /// - Throws: `StrataError.treeNotFound`.
    /// - Parameters:
    ///   - name: The tree's name.
    ///   - forIteration: Whether the handle will walk many entries (it may then read ahead).
    /// - Returns: The handle, showing this transaction's uncommitted changes.
    public func treeHandle(_ name: String, forIteration: Bool) throws -> TreeHandle {
        guard changes.trees[name] != nil else { throw StrataError.treeNotFound(name) }
        if forIteration {
            // Freeze what the cursor sees: later writes copy nodes instead of changing them,
            // and buffered writes go on in pending writes of their own.
            try changes.flushPending(tree: name)
            changes.mutator = TreeMutator(store: store, owner: database.nextOwner())
        }
        let state = changes.trees[name]!
        return TreeHandle(store: store, state: state, unchanging: false)
    }

    /// Every tree's name, sorted.
    public var treeNames: [String] { changes.trees.keys.sorted() }

    /// Whether a tree of this name exists.
    ///
    /// - Parameter name: The tree's name.
    /// - Returns: True when the tree exists, counting this transaction's changes.
    public func hasTree(_ name: String) -> Bool { changes.trees[name] != nil }

    private func checkOpen() throws {
        if isFinished { throw StrataError.transactionFinished }
        if let cause = changes.failedMerge { throw StrataError.transactionFailed(cause: cause) }
    }

    /// Creates an empty tree. Names are 1 to 255 bytes of UTF-8.
    ///
    /// - Parameters:
    ///   - name: The new tree's name.
    ///   - ifNotExists: Do nothing when it exists (instead of throwing).
    /// - Throws: `StrataError.treeAlreadyExists` unless `ifNotExists`; `.invalidTreeName`;
    ///   `.transactionFinished` after commit or rollback.
    public func createTree(_ name: String, ifNotExists: Bool = false) throws {
        try checkOpen()
        guard !name.isEmpty, name.utf8.count <= 255 else { throw StrataError.invalidTreeName(name) }
        if ifNotExists, changes.trees[name] != nil { return }
        try changes.createTree(name)
        log.createTree(name)
    }

    /// Deletes a tree and all its entries.
    ///
    /// - Parameter name: The tree's name.
    /// - Throws: `StrataError.treeNotFound`; `.transactionFinished`.
    public func dropTree(_ name: String) throws {
        try checkOpen()
        try changes.dropTree(name)
        log.dropTree(name)
    }

    /// Stores `value` under `key` in `tree`, replacing any previous value.
    ///
    /// - Parameters:
    ///   - value: The value; up to `Database.maxValueSize` bytes (large ones are stored out
    ///     of line).
    ///   - key: The encoded key, not empty and within the key size limit.
    ///   - tree: The tree's name.
    /// - Throws: `StrataError.treeNotFound`; `.emptyKey`, `.keyTooLarge`, `.valueTooLarge`;
    ///   `.transactionFinished`.
    public func put(_ value: [UInt8], forKey key: [UInt8], in tree: String) throws {
        try key.withUnsafeBytes { key in try value.withUnsafeBytes { try put($0, forKey: key, in: tree) } }
    }

    /// Stores `value` under `key` without copying either into an intermediate array.
    ///
    /// - Parameters:
    ///   - value: The value, copied into the tree.
    ///   - key: The encoded key, copied into the tree.
    ///   - tree: The tree's name.
    /// - Throws: As the array form.
    public func put(_ value: UnsafeRawBufferPointer, forKey key: UnsafeRawBufferPointer, in tree: String) throws {
        _ = try write(value, forKey: key, in: tree, replacing: true)
    }

    /// Stores `value` under `key` unless `tree` already has the key, in one descent of the
    /// tree (LMDB's `MDB_NOOVERWRITE`): a present key keeps its value and nothing is
    /// written or logged.
    ///
    /// ```swift
    /// guard try tx.insert(record, forKey: Key(id).bytes, in: "users") else {
    ///     throw AppError.duplicate(id)
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - value: The value, copied into the tree.
    ///   - key: The encoded key, copied into the tree.
    ///   - tree: The tree's name.
    /// - Returns: True when the key was new and the value is stored; false when the key was
    ///   there already (the tree is unchanged).
    /// - Throws: As `put(_:forKey:in:)`.
    public func insert(_ value: [UInt8], forKey key: [UInt8], in tree: String) throws -> Bool {
        try key.withUnsafeBytes { key in
            try value.withUnsafeBytes { try write($0, forKey: key, in: tree, replacing: false) }
        }
    }

    /// The one path by which `put` and `insert` write a value: small values go in their
    /// leaf, larger ones in a value frame with the leaf pointing at it.
    ///
    /// - Returns: False only when `replacing` is false and the key was there (nothing is
    ///   written or logged then); a replacing write always returns true.
    private func write(_ value: UnsafeRawBufferPointer, forKey key: UnsafeRawBufferPointer, in tree: String, replacing: Bool) throws -> Bool {
        try checkOpen()
        try validate(key: key)
        guard value.count <= Database.maxValueSize else { throw StrataError.valueTooLarge(size: value.count, limit: Database.maxValueSize) }
        guard value.count > store.limits.maxInlineValue, values != nil else {
            let isNew = try changes.put(tree: tree, key: key, value: .inline(value), replacing: replacing)
            guard isNew || replacing else { return false }
            log.put(tree: tree, key: key, value: value)
            return true
        }
        guard changes.trees[tree] != nil else { throw StrataError.treeNotFound(tree) }
        // A large value is laid out in a value frame before the tree learns of it: look
        // first, so a refused insert costs no frame.
        if !replacing, try withValue(key, in: tree, { _ in true }) == true { return false }
        let address = values!.append(value)
        let copy = Array(value)
        store.values.insert(copy, at: address.offset, cost: PageStore.cost(ofValue: copy), pinned: true)
        try changes.put(tree: tree, key: key, value: .overflow(address, length: UInt32(value.count)))
        log.put(tree: tree, key: key, storedAt: address, length: UInt32(value.count))
        return true
    }

    /// Removes `key` from `tree`; returns whether it was there.
    ///
    /// - Parameters:
    ///   - key: The encoded key.
    ///   - tree: The tree's name.
    /// - Returns: True when the key was there.
    /// - Throws: `StrataError.treeNotFound`; `.transactionFinished`.
    @discardableResult
    public func delete(_ key: [UInt8], in tree: String) throws -> Bool {
        try checkOpen()
        return try key.withUnsafeBytes { key in
            try validate(key: key)
            guard try changes.delete(tree: tree, key: key) else { return false }
            log.delete(tree: tree, key: key)
            return true
        }
    }

    private func validate(key: UnsafeRawBufferPointer) throws {
        if key.isEmpty { throw StrataError.emptyKey }
        if key.count > store.limits.maxKey { throw StrataError.keyTooLarge(size: key.count, limit: store.limits.maxKey) }
    }

    /// Makes the changes durable and visible. With `.full` durability the data is on disk
    /// when this returns, and readers see it only from then on. If it throws, nothing of the
    /// transaction is visible and the database refuses further writes until reopened (see
    /// `StrataError.poisoned`).
    ///
    /// Threads committing at the same time share fdatasyncs (group commit): the gate for
    /// the next write transaction opens as soon as this one's frames are written, and the
    /// commits written while a sync runs are made durable together by the next one
    /// (`Statistics.commitSyncs` counts them).
    ///
    /// - Throws: `StrataError.io` when the commit cannot be written or synced (the database is
    ///   then poisoned); `.closed`.
    public func commit() throws {
        try checkOpen()
        isFinished = true
        guard !log.isEmpty else {
            releasePendingValues(committed: false)
            database.finishWrite()
            return
        }
        let written: UInt64?
        do {
            if let policy = changes.buffer { try changes.settleBuffers(policy: policy, newOwner: database.nextOwner) }
            written = try database.commit(log: &log, values: values, trees: changes.trees)
            // What reads through this transaction see from here: the same entries, as the
            // writer holds them now. When the commit wrote a checkpoint, the trees it built
            // are an older version of the leaves the checkpoint let go, and this is their
            // last holder: released here, with the gate held, rather than whenever the
            // caller drops the transaction (after `Database.write` returned, at 10M records
            // 0.4–1.4 s of frees that an idle look took for commits having paused).
            changes.trees = database.writer.latest.trees
        } catch {
            releasePendingValues(committed: false)
            database.finishWrite()
            throw error
        }
        releasePendingValues(committed: true)
        database.commitsFinishing.add(1, ordering: .relaxed)
        defer {
            database.commitsFinishing.subtract(1, ordering: .relaxed)
            database.idleWatch?.committed(leftBuffered: changes.trees.values.contains(where: \.isBuffered))
        }
        database.finishWrite()
        // With the gate left, so that other threads' commits written meanwhile share the sync.
        if let written { try database.waitUntilDurable(written) }
    }

    /// Discards every change made in this transaction.
    public func rollback() {
        guard !isFinished else { return }
        isFinished = true
        releasePendingValues(committed: false)
        database.finishWrite()
    }
}
