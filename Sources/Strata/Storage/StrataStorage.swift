import Foundation
import Logging
import StrataEngine
import Synchronization

/// `Storage` on a Strata database file: each collection is a B-tree of records keyed by
/// primary key, plus one B-tree per index, all changed in the same transaction.
///
/// ```swift
/// let storage = try StrataStorage(path: "app.strata")
/// try storage.create(User(id: 1, name: "Ada", email: "ada@example.com", age: 36))
/// let plan = try storage.explain(User.filter(\.age > 30))   // .indexRange(index: "age")
/// ```
public final class StrataStorage: Storage {
    /// The engine database underneath: for its statistics, checkpoints and compaction, or
    /// for trees of your own beside the collections.
    public let database: Database
    /// The newest catalog entry of each collection seen, with the commit sequence of the
    /// snapshot it was read in. Field tables only grow, so a newer table decodes records of
    /// any older snapshot. A writable handle makes every catalog change itself and keeps
    /// this current as it commits; a read-only handle's catalog changes when it refreshes,
    /// so it uses an entry only in the snapshot it was read in.
    private let catalog = Mutex<[String: (state: CollectionState, sequence: UInt64)]>([:])
    /// The last catalog entry decoded for writing, by collection, with its stored bytes.
    private let decodedEntries = Mutex<[String: (bytes: [UInt8], state: CollectionState)]>([:])

    /// Opens (or creates) the file at `path`.
    ///
    /// - Parameters:
    ///   - path: the database file.
    ///   - options: durability, cache size, read-only, checkpoint policy
    ///     (`Database.Options`).
    /// - Throws: `StrataError.locked` when another process writes the file;
    ///   `StrataError.corruption` naming the offset of damage that stops it opening;
    ///   `StrataError.unsupportedFormat` for a file written by a newer Strata; `.io` for
    ///   operating-system failures.
    public convenience init(path: String, options: Database.Options = Database.Options()) throws {
        try self.init(database: Database(path: path, options: options))
    }

    /// Typed storage on a database you opened yourself (in memory, say).
    ///
    /// - Parameter database: An open database; the storage owns it from now on and closes it.
    public init(database: Database) {
        self.database = database
    }

    /// Releases the storage; later calls fail with a closed-storage error.
    ///
    /// - Throws: What releasing runs into (a final checkpoint that cannot be written).
    public func close() throws {
        follower.stop()
        try database.close()
        observers.close()
    }

    /// Observers of this storage's commits (`observeCommits`, `observe`).
    let observers = CommitObservers()
    /// Follows other handles' commits while a read-only storage has observers.
    let follower = FileFollower()

    /// Calls `observer` after each commit with the collections it changed.
    ///
    /// - Parameter observer: Called on a background thread after each commit, then once with
    ///   `.closed`.
    /// - Returns: The registration; observing stops when it is cancelled or released.
    public func observeCommits(_ observer: @escaping @Sendable (CommitEvent) -> Void) -> CommitObservation {
        let observation = observers.add(observer)
        guard database.options.readOnly else { return observation }
        follower.retain(self)
        return CommitObservation { [follower] in
            observation.cancel()
            follower.release()
        }
    }

    /// How many commit observers are registered: each live `observe` sequence holds one until
    /// it ends.
    public var activeObservers: Int { observers.count }

    /// Runs `body` on a consistent snapshot.
    /// - Throws: what `body` or the storage throws.
    /// - Parameter body: Reads through the reader it is given, valid only during the call.
    /// - Returns: What `body` returns.
    public func read<R>(_ body: (any StorageReader) throws -> R) throws -> R {
        let snapshot = try database.snapshot()
        return try body(StrataReader(storage: self, engine: snapshot, catalogSequence: database.options.readOnly ? snapshot.sequence : nil,
                                     accesses: AccessCache()))
    }

    /// Runs `body` in one write transaction: committed when it returns, rolled back when it throws.
    /// - Throws: what `body` or the storage throws; nothing is committed then.
    /// - Parameter body: Writes through the writer it is given, valid only during the call.
    /// - Returns: What `body` returns.
    @discardableResult
    public func write<R>(_ body: (any StorageWriter) throws -> R) throws -> R {
        try transact { try body($0) }
    }

    /// Runs `body` in a write transaction: commits when it returns, rolls back when it throws.
    func transact<R>(_ body: (StrataWriter) throws -> R) throws -> R {
        let transaction: WriteTransaction
        do {
            transaction = try database.beginWrite()
        } catch StrataError.nestedTransaction {
            throw StorageError.nestedTransaction
        }
        let writer = StrataWriter(storage: self, transaction: transaction)
        do {
            let result = try body(writer)
            try writer.commit()
            return result
        } catch {
            writer.transaction.rollback()
            throw error
        }
    }

    /// The collection for reading through `reader`, or nil when it does not exist there.
    /// Served from the cache: its field table decodes every record, and the indexes it
    /// lists are used only when `reader` has their trees.
    /// `sequence` is the reader's snapshot's on a read-only handle (an entry cached from
    /// another snapshot is read again), nil on a writable one (the cache is current).
    func collection(_ name: String, in reader: some TreeReading, sequence: UInt64?) throws -> CollectionState? {
        guard reader.hasTree(CatalogEntry.recordsTree(name)) else { return nil }
        func serves(_ cached: (state: CollectionState, sequence: UInt64)) -> Bool { sequence.map { cached.sequence == $0 } ?? true }
        if let cached = catalog.withLock({ $0[name] }), serves(cached) { return cached.state }
        guard let entry = try CatalogEntry.load(name, from: reader) else { return nil }
        let loaded = CollectionState(entry)
        return catalog.withLock { cache in
            if let known = cache[name], serves(known) { return known.state }
            if sequence ?? 0 >= cache[name]?.sequence ?? 0 { cache[name] = (loaded, sequence ?? 0) }
            return loaded
        }
    }

    /// The collection as a write transaction must see it: its own catalog entry (indexes,
    /// id counter), with the largest field table known.
    func collectionForWriting(_ name: String, in transaction: WriteTransaction) throws -> CollectionState? {
        guard transaction.hasTree(CatalogEntry.recordsTree(name)), transaction.hasTree(CatalogEntry.tree),
              let bytes = try transaction.get(Key(name).bytes, in: CatalogEntry.tree) else { return nil }
        // Decoding the JSON entry costs more than a small write transaction: reuse the
        // state decoded from the same bytes.
        var state: CollectionState
        if let decoded = decodedEntries.withLock({ $0[name] }), decoded.bytes == bytes {
            state = decoded.state
        } else {
            state = CollectionState(try CatalogEntry.decode(bytes, collection: name))
            decodedEntries.withLock { $0[name] = (bytes, state) }
        }
        if let known = catalog.withLock({ $0[name]?.state }), known.fields.names.count > state.fields.names.count {
            state.fields = known.fields
        }
        return state
    }

    /// Tells the database's logger that a declared rename moved a field's values.
    func reportRename(collection: String, from: String, to: String, records: Int) {
        database.options.logger.notice("moved a renamed field's values", metadata: [
            "collection": "\(collection)", "from": "\(from)", "to": "\(to)", "records": "\(records)",
        ])
    }

    /// Makes a committed `state` the newest known, keeping the larger field table.
    func publish(_ state: CollectionState) {
        catalog.withLock { cache in
            if let known = cache[state.entry.collection]?.state, known.fields.names.count > state.fields.names.count {
                var merged = state
                merged.fields = known.fields
                cache[state.entry.collection] = (merged, 0)
            } else {
                cache[state.entry.collection] = (state, 0)
            }
        }
    }

    /// Makes the larger field table of `state` known, without its other catalog changes.
    func publishFields(_ state: CollectionState) {
        catalog.withLock { cache in
            guard var known = cache[state.entry.collection], known.state.fields.names.count < state.fields.names.count else { return }
            known.state.fields = state.fields
            cache[state.entry.collection] = known
        }
    }
}

/// A query's projection, widened as records show which left-out fields the model needs.
/// Used by one query execution on one thread.
package final class WidenedProjection<M: Model> {
    var projection: Query<M>.Projection
    package init(_ projection: Query<M>.Projection) { self.projection = projection }
}

/// Decodes a collection's records as `M`, whole or in part (a query's projection): shared
/// by every backend that stores Strata records.
package struct ModelDecoding<M: Model> {
    package let collection: String
    /// The collection's field table as `M` reads it: a field `M` declares renamed, not yet
    /// moved in this snapshot, is found under its original name.
    package let fields: FieldTable
    /// `M`'s own record codec when it is `RecordCodable`, found once here rather than by a
    /// dynamic cast per record.
    private let recordCodec: RecordDecoder.Codec<M>?

    package init(_ state: CollectionState) {
        collection = state.entry.collection
        let renames = M.schema.description.renames
        fields = renames.isEmpty ? state.fields : state.fields.readingRenamed(renames)
        recordCodec = RecordDecoder.codec(of: M.self)
    }

    var name: String { collection }

    // Inlined, as `CollectionAccess.decode` is: in a query's unspecialized code, calling a
    // generic struct's method passes the struct's metadata, which the runtime looks up on
    // every call (a third of a typed scan's per-match instructions before; callgrind).
    @inline(__always)
    package func decode(_ bytes: UnsafeRawBufferPointer) throws -> M {
        try RecordDecoder.decode(M.self, from: bytes, fields: fields, collection: name, codec: recordCodec)
    }

    /// `decode` as a closure that decodes through one reused context (see
    /// `ReusableDecodingContext`) and holds the table, name and codec itself: calling it
    /// allocates no context and needs no metadata of this generic struct (which
    /// unspecialized code looks up on every call).
    ///
    /// A `RecordCodable` model's closure holds its codec itself, not as an optional: unwrapping
    /// a captured optional closure copied it, a retain and a release per record (~90
    /// instructions of each W1 user a typed scan decodes; callgrind).
    package func reusingDecoder() -> (UnsafeRawBufferPointer) throws -> M {
        let shared = ReusableDecodingContext(fields: fields, collection: collection)
        if let codec = recordCodec {
            return { bytes in try shared.withContext { try RecordDecoder.decode(from: bytes, in: $0, codec: codec) } }
        }
        return { bytes in try shared.withContext { try RecordDecoder.decode(M.self, from: bytes, in: $0, codec: nil) } }
    }

    /// Decodes only the fields the projection keeps. A left-out field the model cannot do
    /// without (no zero value: `RecordError.missingField`) is added to the projection, for
    /// this record and the rest of the query, and the record decoded again.
    package func decode(_ bytes: UnsafeRawBufferPointer, keeping widened: WidenedProjection<M>) throws -> M {
        while true {
            do {
                return try decode(bytes, keeping: widened.projection)
            } catch let error as RecordError {
                guard case .missingField(_, let field, _) = error else { throw error }
                let topLevel = String(field.prefix { $0 != "." && $0 != "[" })
                // Kept already: the record itself lacks the field; that is the error.
                guard !widened.projection.keeps(topLevel) else { throw error }
                widened.projection = widened.projection.keeping(topLevel)
            }
        }
    }

    /// Decodes only the top-level fields `projection` keeps: the record is rewritten without
    /// the others (copying their bytes, never decoding them) and decoded.
    package func decode(_ bytes: UnsafeRawBufferPointer, keeping projection: Query<M>.Projection) throws -> M {
        let context = DecodingContext(buffer: bytes, fields: fields, collection: name)
        guard try context.tag(at: 0) == .keyed else { return try decode(bytes) }
        var p = 1
        let count = try context.varint(at: &p)
        let header = p
        // Kept fields follow the tag and the stored count's varint, which is overwritten with
        // the kept count at the same width (a padded varint: this record is only decoded,
        // never stored), so the record is built in one buffer.
        var record: [UInt8] = []
        record.reserveCapacity(bytes.count)
        record.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[0 ..< p]))
        var keptCount: UInt64 = 0
        for _ in 0 ..< count {
            let fieldStart = p
            let id = try context.varint(at: &p)
            p = try context.skip(at: p)
            if let name = fields.name(of: UInt32(truncatingIfNeeded: id)), projection.keeps(name) {
                record.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[fieldStart ..< p]))
                keptCount += 1
            }
        }
        for i in 1 ..< header {
            record[i] = UInt8(truncatingIfNeeded: keptCount & 0x7F) | (i < header - 1 ? 0x80 : 0)
            keptCount >>= 7
        }
        return try record.withUnsafeBytes { try decode($0) }
    }

}

/// Query execution shared by read and write transactions.
struct CollectionAccess<M: Model> {
    let engine: any TreeReading
    let state: CollectionState
    /// Decodes the collection's records as `M` reads them.
    let decoding: ModelDecoding<M>

    /// The records tree's name, built once (every get names it).
    let recordsTree: String

    init(engine: any TreeReading, state: CollectionState) {
        (self.engine, self.state) = (engine, state)
        decoding = ModelDecoding(state)
        recordsTree = state.entry.recordsTree
    }

    var name: String { state.entry.collection }
    var fields: FieldTable { decoding.fields }

    @inline(__always)
    func decode(_ bytes: UnsafeRawBufferPointer) throws -> M { try decoding.decode(bytes) }

    func decode(_ bytes: UnsafeRawBufferPointer, keeping widened: WidenedProjection<M>) throws -> M {
        try decoding.decode(bytes, keeping: widened)
    }

    func get(_ key: [UInt8]) throws -> M? {
        try engine.withValue(key, in: recordsTree) { try decode($0) }
    }

    /// The record whose primary key is `primaryKey`, decoded.
    func get(primaryKey: some KeyComponent) throws -> M? {
        try engine.withValue(forKey: primaryKey, in: recordsTree) { try decode($0) }
    }

    /// Indexes declared by the model that exist in the file as this transaction sees it.
    var builtIndexes: [IndexDefinition<M>] {
        M.schema.indexes.filter { index in
            state.entry.indexes.contains { $0.name == index.name } && engine.hasTree(state.entry.indexTree(index.name))
        }
    }

    func choose(_ query: Query<M>) throws -> ChosenAccess { try choose(query.planRequest(collection: name)) }

    private func choose(_ request: PlanRequest<AnyKeyPath>) throws -> ChosenAccess {
        var candidates = [AccessCandidate<AnyKeyPath>(kind: .primaryKey, fields: M.schema.primaryKey.map(\.keyPath))]
        for index in builtIndexes {
            candidates.append(AccessCandidate(kind: .index(name: index.name, unique: index.isUnique), fields: index.fields.map(\.keyPath)))
        }
        return try Planner.choose(request, candidates: candidates, statistics: try PlannerStatistics(engine: engine, entry: state.entry))
    }

    /// A query planned once: the access chosen and the checks of its conditions on record bytes.
    struct Planned {
        let access: ChosenAccess
        /// What the access leaves to check, checked on record bytes where it can be; nil when
        /// the access answers every condition or no check can be made on bytes.
        let prefilter: RecordPrefilter?
        /// The prefilter, when its decisions are the query's (every condition is checked on
        /// bytes and nothing opaque remains).
        let decider: RecordPrefilter?
        /// Whether the access path's keys answer every condition: what it reads matches,
        /// with nothing to check on the records (false when a condition is left over, or its
        /// keys cannot decide it — see `FieldBounds.keysDecide`).
        let accessDecides: Bool
    }

    /// - Parameter counting: only the matches' number is wanted (the planner then prefers
    ///   accesses whose keys decide every condition: no record is read).
    func plan(_ query: Query<M>, counting: Bool = false) throws -> Planned {
        // The request is built once: it walks the query's filters and predicate trees.
        var request = query.planRequest(collection: name)
        request.counting = counting
        let access = try choose(request)
        let prefilter = access.plan.residualFilter
            ? RecordPrefilter(request.conditions, elements: request.elementConditions, of: M.schema.description, fields: fields, collection: name) : nil
        // The bytes decide the query when they check every condition and nothing else (OR,
        // NOT, a closure) remains: conditions on array elements are theirs to check too.
        let bytesDecide = (!request.hasOpaque || request.onlyFieldAndElementConditions) && prefilter?.checksAll == true
        return Planned(access: access, prefilter: prefilter, decider: bytesDecide ? prefilter : nil,
                       accessDecides: !access.plan.residualFilter && request.keysDecide)
    }

    private var uniqueIndexes: Set<String> { Set(M.schema.indexes.filter(\.isUnique).map(\.name)) }

    /// Visits the query's results in order, after offset, up to limit, with their primary
    /// keys (the key buffer is valid only during the call).
    func execute(_ query: Query<M>, planned: Planned? = nil, _ visit: (UnsafeRawBufferPointer, M) throws -> Bool) throws {
        let planned = try planned ?? plan(query)
        let access = planned.access
        // Every path checks what conditions it can on the stored bytes before decoding.
        let projection = query.storedProjection
        let order: ((M, M) -> ComparisonResult)? = query.sortKeys.isEmpty ? nil : { query.compare($0, $1) }
        // When the bytes decide every condition, a record they accept is a match: it is not
        // checked again after decoding (the key-path reads of `matches` cost more than the
        // byte check). The byte check runs just before the same record is decoded and matched.
        let bytesCheck: ByteCheck?
        let matches: (M) throws -> Bool
        if let decider = planned.decider {
            let accepted = AcceptedByBytes()
            bytesCheck = ByteCheck(prefilter: decider, accepted: accepted)
            matches = { accepted.value ? true : try query.matches($0) }
        } else if planned.accessDecides {
            // The tree's keys answered every condition (an index range, say): nothing to
            // check per record (measured: the conditions' key-path reads were a sixth of an
            // index query's instructions, unspecialized generic code looking up metadata).
            bytesCheck = nil
            matches = { _ in true }
        } else {
            bytesCheck = planned.prefilter.map { ByteCheck(prefilter: $0, accepted: nil) }
            matches = query.matches
        }
        let execution = QueryExecution<M>(
            engine: engine, entry: state.entry, uniqueIndexes: uniqueIndexes,
            decode: projection.map { projection in
                let widened = WidenedProjection(projection)
                return { try decode($0, keeping: widened) }
            } ?? decoding.reusingDecoder(), bytesCheck: bytesCheck, matches: matches,
            order: order,
            byteOrder: access.plan.keepsTop == nil ? nil
                : ByteOrder(query, residual: access.plan.residualFilter, decider: planned.decider, fields: fields, collection: name),
            offset: query.offset, limit: query.limit)
        try execution.run(access, visit)
    }

    func count(_ query: Query<M>) throws -> Int {
        if !query.hasConditions {
            let total = max(0, try engine.count(in: state.entry.recordsTree) - query.offset)
            return query.limit.map { min($0, total) } ?? total
        }
        let unsorted = Query<M>(query: query, droppingSort: true)
        let planned = try plan(unsorted, counting: true)
        let access = planned.access
        // When the tree ranges answer every condition, count their entries: no record is
        // fetched or decoded.
        if planned.accessDecides, access.keySets != nil {
            let total = max(0, try access.primaryKeys(engine: engine, entry: state.entry).count - query.offset)
            return query.limit.map { min($0, total) } ?? total
        }
        if planned.accessDecides {
            let tree: String
            switch access.source {
            case .index(let name)?: tree = state.entry.indexTree(name)
            case nil, .primaryKey?: tree = state.entry.recordsTree
            }
            var entries = 0
            for range in access.ranges {
                try engine.scan(tree, in: range) { _, _ in
                    entries += 1
                    return true
                }
            }
            let total = max(0, entries - query.offset)
            return query.limit.map { min($0, total) } ?? total
        }
        var n = 0
        // When the record bytes decide every condition, nothing is decoded: a record is
        // decoded only when its bytes leave a condition unsure.
        if let decider = planned.decider {
            let decodes = decoding.reusingDecoder()
            let execution = QueryExecution<Bool>(
                engine: engine, entry: state.entry, uniqueIndexes: uniqueIndexes,
                decode: { bytes in try decider.decides(bytes) ?? query.matches(decodes(bytes)) },
                bytesCheck: nil, matches: { $0 }, order: nil, offset: query.offset, limit: query.limit)
            try execution.run(access) { _, _ in
                n += 1
                return true
            }
            return n
        }
        try execute(unsorted, planned: planned) { _, _ in
            n += 1
            return true
        }
        return n
    }
}

extension Query {
    /// The same conditions, window and no sort (for counting).
    package init(query: Query, droppingSort: Bool) {
        self = query
        if droppingSort { sortKeys = [] }
    }
}

/// Reads through `CollectionAccess`: shared by read and write transactions, which differ
/// only in how they find a collection.
protocol CollectionReading: StorageReader {
    func access<M: Model>(_ type: M.Type) throws -> CollectionAccess<M>?
}

extension CollectionReading {
    func read<M: Model>(_ type: M.Type, primaryKey: some KeyComponent) throws -> M? {
        try access(type)?.get(primaryKey: primaryKey)
    }

    func read<M: Model>(_ query: Query<M>) throws -> [M] {
        var models: [M] = []
        try forEach(query) { models.append($0); return true }
        return models
    }

    func forEach<M: Model>(_ query: Query<M>, _ body: (M) throws -> Bool) throws {
        try access(M.self)?.execute(query) { try body($1) }
    }

    func count<M: Model>(_ query: Query<M>) throws -> Int {
        try access(M.self)?.count(query) ?? 0
    }

    func plan<M: Model>(_ query: Query<M>) throws -> QueryPlan {
        guard let access = try access(M.self) else {
            return QueryPlan(collection: M.collectionName, access: .fullScan, range: nil, residualFilter: query.hasConditions, sortsInMemory: false, stopsAfter: nil)
        }
        return try access.choose(query).plan
    }
}

/// A read transaction of `StrataStorage`.
struct StrataReader: CollectionReading {
    let storage: StrataStorage
    let engine: any TreeReading
    /// The snapshot's commit sequence on a read-only handle, whose catalog can change
    /// under it when it refreshes; nil on a writable one.
    let catalogSequence: UInt64?
    /// Each model's access, resolved once per read transaction (nil for a write transaction,
    /// whose catalog its own writes change).
    let accesses: AccessCache?

    func access<M: Model>(_ type: M.Type) throws -> CollectionAccess<M>? {
        guard let accesses else { return try makeAccess(type) }
        return try accesses.entry(type) { try makeAccess(type) }?.access
    }

    func read<M: Model>(_ type: M.Type, primaryKey: some KeyComponent) throws -> M? {
        guard let accesses else { return try makeAccess(type)?.get(primaryKey: primaryKey) }
        // Through the cached entry, not a returned copy of the access: copying it (and its
        // optional) in this unspecialized code cost more than the tree lookup.
        return try accesses.entry(type) { try makeAccess(type) }?.get(primaryKey: primaryKey)
    }

    private func makeAccess<M: Model>(_ type: M.Type) throws -> CollectionAccess<M>? {
        guard let state = try storage.collection(M.collectionName, in: engine, sequence: catalogSequence) else { return nil }
        return CollectionAccess(engine: engine, state: state)
    }

    func explain<M: Model>(_ query: Query<M>) throws -> QueryPlan { try plan(query) }
}
