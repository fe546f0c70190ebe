import Foundation
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
    public let database: Database
    /// The newest catalog entry of each collection seen. Field tables only grow, so a
    /// newer table decodes records of any older snapshot.
    private let catalog = Mutex<[String: CollectionState]>([:])

    public convenience init(path: String, options: Database.Options = Database.Options()) throws {
        try self.init(database: Database(path: path, options: options))
    }

    public init(database: Database) {
        self.database = database
    }

    public func close() throws { try database.close() }

    public func read<R>(_ body: (any StorageReader) throws -> R) throws -> R {
        try body(StrataReader(storage: self, engine: try database.snapshot()))
    }

    public func write<R>(_ body: (any StorageWriter) throws -> R) throws -> R {
        let writer = StrataWriter(storage: self, transaction: try database.beginWrite())
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
    func collection(_ name: String, in reader: some TreeReading) throws -> CollectionState? {
        guard reader.hasTree(CatalogEntry.recordsTree(name)) else { return nil }
        if let cached = catalog.withLock({ $0[name] }) { return cached }
        guard let entry = try CatalogEntry.load(name, from: reader) else { return nil }
        let loaded = CollectionState(entry)
        return catalog.withLock { cache in
            if let known = cache[name] { return known }
            cache[name] = loaded
            return loaded
        }
    }

    /// The collection as a write transaction must see it: its own catalog entry (indexes,
    /// id counter), with the largest field table known.
    func collectionForWriting(_ name: String, in transaction: WriteTransaction) throws -> CollectionState? {
        guard transaction.hasTree(CatalogEntry.recordsTree(name)), let entry = try CatalogEntry.load(name, from: transaction) else { return nil }
        var state = CollectionState(entry)
        if let known = catalog.withLock({ $0[name] }), known.fields.names.count > state.fields.names.count {
            state.fields = known.fields
        }
        return state
    }

    /// Makes a committed `state` the newest known, keeping the larger field table.
    func publish(_ state: CollectionState) {
        catalog.withLock { cache in
            if let known = cache[state.entry.collection], known.fields.names.count > state.fields.names.count {
                var merged = state
                merged.fields = known.fields
                cache[state.entry.collection] = merged
            } else {
                cache[state.entry.collection] = state
            }
        }
    }

    /// Makes the larger field table of `state` known, without its other catalog changes.
    func publishFields(_ state: CollectionState) {
        catalog.withLock { cache in
            guard var known = cache[state.entry.collection], known.fields.names.count < state.fields.names.count else { return }
            known.fields = state.fields
            cache[state.entry.collection] = known
        }
    }
}

/// Query execution shared by read and write transactions.
struct CollectionAccess<M: Model> {
    let engine: any TreeReading
    let state: CollectionState

    var name: String { state.entry.collection }

    func decode(_ bytes: UnsafeRawBufferPointer) throws -> M {
        try RecordDecoder.decode(M.self, from: bytes, fields: state.fields, collection: name)
    }

    func get(_ key: [UInt8]) throws -> M? {
        try engine.withValue(key, in: state.entry.recordsTree) { try decode($0) }
    }

    /// Indexes declared by the model that exist in the file as this transaction sees it.
    var builtIndexes: [IndexDefinition<M>] {
        M.schema.indexes.filter { index in
            state.entry.indexes.contains { $0.name == index.name } && engine.hasTree(state.entry.indexTree(index.name))
        }
    }

    func choose(_ query: Query<M>) -> ChosenAccess {
        var candidates = [AccessCandidate(kind: .primaryKey, firstField: M.schema.primaryKey[0].keyPath)]
        for index in builtIndexes {
            candidates.append(AccessCandidate(kind: .index(name: index.name, unique: index.isUnique), firstField: index.fields[0].keyPath))
        }
        return Planner.choose(query, collection: name, candidates: candidates)
    }

    /// Visits the candidates of the chosen access path in its order, with their primary keys.
    private func candidates(_ access: ChosenAccess, _ visit: ([UInt8], M) throws -> Bool) throws {
        switch access.source {
        case nil, .primaryKey?:
            for range in access.reverse ? access.ranges.reversed() : access.ranges {
                var more = true
                try engine.scan(state.entry.recordsTree, in: range, reverse: access.reverse) { key, value in
                    more = try visit(Array(key), try decode(value))
                    return more
                }
                if !more { return }
            }
        case .index(let index)?:
            let fetch = { (key: [UInt8]) throws -> M in
                guard let model = try get(key) else {
                    throw RecordError.corruptRecord(collection: name, reason: "index '\(index)' names primary key \(Key(bytes: key)) which has no record")
                }
                return model
            }
            // Walking backwards, entries with equal index values come in descending
            // primary-key order; each such group is emitted in ascending order, the tie
            // order of every other path.
            // (A unique index has no ties, and its keys do not end with the primary key.)
            let groupsTies = access.reverse && M.schema.indexes.contains { $0.name == index && !$0.isUnique }
            var groupValue: [UInt8]?
            var groupKeys: [[UInt8]] = []
            func flush() throws -> Bool {
                defer { groupKeys.removeAll(keepingCapacity: true) }
                for key in groupKeys.reversed() where try !visit(key, try fetch(key)) { return false }
                return true
            }
            for range in access.reverse ? access.ranges.reversed() : access.ranges {
                var more = true
                try engine.scan(state.entry.indexTree(index), in: range, reverse: access.reverse) { indexKey, primaryKey in
                    let key = Array(primaryKey)
                    guard groupsTies else {
                        more = try visit(key, try fetch(key))
                        return more
                    }
                    let value = Array(indexKey.dropLast(key.count))
                    if value != groupValue {
                        more = try flush()
                        if !more { return false }
                        groupValue = value
                    }
                    groupKeys.append(key)
                    return true
                }
                if !more { return }
            }
            _ = try flush()
        }
    }

    /// Visits the query's results in order, after offset, up to limit.
    func execute(_ query: Query<M>, _ visit: ([UInt8], M) throws -> Bool) throws {
        let access = choose(query)
        if access.plan.sortsInMemory {
            var matches: [([UInt8], M)] = []
            try candidates(access) { key, model in
                if try query.matches(model) { matches.append((key, model)) }
                return true
            }
            // Primary-key order first: it is the result order when unsorted, and breaks
            // ties of the sort keys the same way on every backend.
            matches.sort { $0.0.lexicographicallyPrecedes($1.0) }
            if !query.sortKeys.isEmpty {
                var models = matches.map(\.1)
                query.sort(&models)
                matches = models.map { (M.schema.primaryKey(of: $0).bytes, $0) }
            }
            for (key, model) in query.window(matches) where try !visit(key, model) { return }
            return
        }
        var skipped = 0, emitted = 0
        try candidates(access) { key, model in
            guard try query.matches(model) else { return true }
            if skipped < query.offset {
                skipped += 1
                return true
            }
            if let limit = query.limit, emitted >= limit { return false }
            emitted += 1
            guard try visit(key, model) else { return false }
            return query.limit.map { emitted < $0 } ?? true
        }
    }

    func count(_ query: Query<M>) throws -> Int {
        if !query.hasConditions {
            let total = max(0, try engine.count(in: state.entry.recordsTree) - query.offset)
            return query.limit.map { min($0, total) } ?? total
        }
        var n = 0
        try execute(Query<M>(query: query, droppingSort: true)) { _, _ in
            n += 1
            return true
        }
        return n
    }
}

extension Query {
    /// The same conditions, window and no sort (for counting).
    init(query: Query, droppingSort: Bool) {
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
        try access(type)?.get(Key(primaryKey).bytes)
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
        return access.choose(query).plan
    }
}

/// A read transaction of `StrataStorage`.
struct StrataReader: CollectionReading {
    let storage: StrataStorage
    let engine: any TreeReading

    func access<M: Model>(_ type: M.Type) throws -> CollectionAccess<M>? {
        guard let state = try storage.collection(M.collectionName, in: engine) else { return nil }
        return CollectionAccess(engine: engine, state: state)
    }

    func explain<M: Model>(_ query: Query<M>) throws -> QueryPlan { try plan(query) }
}
