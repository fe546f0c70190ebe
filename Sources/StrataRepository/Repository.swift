/// Items from an ordered list of data sources — fastest first, e.g. memory, disk, network —
/// combined by a strategy (the Data Sources article's Repository).
///
/// ```swift
/// let books = Repository<Book>(
///     sources: [MemoryDataSource(capacity: 500), RepositoryDataSource(disk), HTTPDataSource(baseURL: api)],
///     strategy: .cacheThrough)
/// let book = try await books.getById("978-0")   // memory, else disk, else network; fills the faster ones
///
/// let login = Repository<Session>(sources: [HTTPDataSource(baseURL: auth)], strategy: .networkOnly)
/// ```
public struct Repository<Item: Identifiable & Codable & Sendable>: Sendable where Item.ID == String {
    /// The sources, fastest first; the last is the source of truth.
    public let sources: [any DataSource<Item>]
    /// How reads and writes are spread over the sources.
    public let strategy: any RepositoryStrategy
    /// What empties the caches (every source but the last) when the source of truth
    /// changes behind them; nil: nothing does.
    public let invalidation: CacheInvalidation?

    /// - Parameters:
    ///   - sources: at least one source, fastest first.
    ///   - strategy: `.firstMatch` (the article's), `.cacheThrough`, `.writeThrough`,
    ///     `.networkOnly`, or your own.
    ///   - invalidation: what empties the caches when the source of truth changes behind
    ///     them (`CacheInvalidation(storage:)` follows a Strata storage's commits).
    public init(sources: [any DataSource<Item>], strategy: any RepositoryStrategy = .firstMatch, invalidation: CacheInvalidation? = nil) {
        precondition(!sources.isEmpty, "a repository needs at least one data source")
        (self.sources, self.strategy, self.invalidation) = (sources, strategy, invalidation)
    }

    /// Every item, from the source the strategy reads.
    /// - Throws: the last source's error when no source answers.
    /// - Returns: The items, in id order.
    public func getAll() async throws -> [Item] {
        try await read(ReadOperation(perform: { try await $0.getAll() }, fill: { source, items in
            for item in items { try await source.upsert(item) }
        }))
    }

    /// The item with this id, from the first source that has it (per the strategy).
    /// - Throws: `RepositoryError.recordNotFound` when no source has it; a source's error.
    /// - Parameter id: The item's id.
    /// - Returns: The item.
    public func getById(_ id: String) async throws -> Item {
        try await read(ReadOperation(perform: { try await $0.getById(id) }, fill: { try await $0.upsert($1) }))
    }

    /// Runs a read through the strategy, on caches emptied of what a commit made stale;
    /// a fill that overlapped a commit is undone.
    private func read<Value>(_ operation: ReadOperation<Item, Value>) async throws -> Value {
        guard let invalidation else { return try await strategy.read(sources, operation) }
        let fresh = await invalidation.refresh(sources.dropLast())
        return try await strategy.read(sources, ReadOperation(perform: operation.perform, fill: { source, value in
            try await operation.fill(source, value)
            if invalidation.current != fresh { try await source.clean() }
        }))
    }

    /// Adds an item, to the sources the strategy writes.
    /// - Throws: `RepositoryError.alreadyExists`; `.writeFailed` when a write-through
    ///   source fails (the others are undone); a source's error.
    /// - Parameter item: The new item.
    public func insert(_ item: Item) async throws {
        try await strategy.write(sources, WriteOperation(id: item.id, perform: { try await $0.insert(item) }, prepareUndo: { source in
            { try await source.deleteById(item.id) }
        }))
    }

    /// Replaces an item, in the sources the strategy writes.
    /// - Throws: `RepositoryError.recordNotFound`; `.writeFailed` as for `insert`.
    /// - Parameter item: The item, replacing the one with its id.
    public func update(_ item: Item) async throws {
        try await strategy.write(sources, WriteOperation(id: item.id, perform: { try await $0.update(item) }, prepareUndo: { source in
            let previous = try await source.getById(item.id)
            return { try await source.update(previous) }
        }))
    }

    /// Removes an item from the sources the strategy writes.
    /// - Throws: `RepositoryError.recordNotFound`; `.writeFailed` as for `insert`.
    /// - Parameter id: The id of the item to remove.
    public func deleteById(_ id: String) async throws {
        try await strategy.write(sources, WriteOperation(id: id, perform: { try await $0.deleteById(id) }, prepareUndo: { source in
            let previous = try await source.getById(id)
            return { try await source.insert(previous) }
        }))
    }

    /// Removes every item from the sources the strategy writes.
    /// - Throws: `RepositoryError.writeFailed` as for `insert`; a source's error.
    public func clean() async throws {
        try await strategy.write(sources, WriteOperation(id: nil, perform: { try await $0.clean() }, prepareUndo: { source in
            let previous = try await source.getAll()
            return { for item in previous { try await source.insert(item) } }
        }))
    }
}

/// A read a strategy runs on one source, and how to store its result in another (for
/// strategies that fill caches).
public struct ReadOperation<Item: Identifiable & Codable & Sendable, Value: Sendable>: Sendable where Item.ID == String {
    /// Reads from one source.
    public let perform: @Sendable (any DataSource<Item>) async throws -> Value
    /// Stores what was read in another source (a cache).
    public let fill: @Sendable (any DataSource<Item>, Value) async throws -> Void
}

/// A write a strategy runs on one source, and how to undo it there (for strategies that
/// compensate). `prepareUndo` runs before the write and captures what the undo restores.
public struct WriteOperation<Item: Identifiable & Codable & Sendable>: Sendable where Item.ID == String {
    /// The item written, or nil when the write is about every item (`clean`).
    public let id: String?
    /// Writes to one source.
    public let perform: @Sendable (any DataSource<Item>) async throws -> Void
    /// Reads what the write will replace and returns how to put it back.
    public let prepareUndo: @Sendable (any DataSource<Item>) async throws -> @Sendable () async throws -> Void
}

/// How a `Repository` spreads reads and writes over its sources. The built-in strategies are
/// values (`.firstMatch`, `.cacheThrough`, `.writeThrough`, `.networkOnly`); an app can
/// write its own.
public protocol RepositoryStrategy: Sendable {
    /// Runs `operation` on the sources it picks and returns the value read.
    /// - Throws: what the sources throw, as the strategy decides.
    /// - Parameters:
    ///   - sources: The repository's sources, fastest first.
    ///   - operation: The read, and how to fill a source that lacked the answer.
    /// - Returns: The value read.
    func read<Item, Value>(_ sources: [any DataSource<Item>], _ operation: ReadOperation<Item, Value>) async throws -> Value
    /// Runs `operation` on the sources it picks.
    /// - Throws: what the sources throw, as the strategy decides.
    /// - Parameters:
    ///   - sources: The repository's sources, fastest first.
    ///   - operation: The write, and how to undo it.
    func write<Item>(_ sources: [any DataSource<Item>], _ operation: WriteOperation<Item>) async throws
}

/// Reads from the first source that answers, in order: a source that does not have the
/// item (`recordNotFound`) or fails is skipped. When every source fails, the error of the
/// last is thrown. Shared by the strategies that read this way.
func firstAnswer<Item, Value>(_ sources: [any DataSource<Item>], _ operation: ReadOperation<Item, Value>) async throws -> (value: Value, index: Int) {
    var lastError: (any Error)?
    for (index, source) in sources.enumerated() {
        do { return (try await operation.perform(source), index) } catch { lastError = error }
    }
    throw lastError!
}

/// The article's strategy: read from the first source that has the item; write to the first
/// source only.
public struct FirstMatchStrategy: RepositoryStrategy {
    /// The strategy (it has no settings).
    public init() {}
    /// Reads as the strategy describes above.
    ///
    /// - Parameters:
    ///   - sources: The repository's sources, fastest first.
    ///   - operation: The read, and how to fill a source that lacked the answer.
    /// - Returns: The answer.
    /// - Throws: The last source's error when none answers.
    public func read<Item, Value>(_ sources: [any DataSource<Item>], _ operation: ReadOperation<Item, Value>) async throws -> Value {
        try await firstAnswer(sources, operation).value
    }
    /// Writes as the strategy describes above.
    ///
    /// - Parameters:
    ///   - sources: The repository's sources, fastest first.
    ///   - operation: The write, and how to undo it.
    /// - Throws: The source's error.
    public func write<Item>(_ sources: [any DataSource<Item>], _ operation: WriteOperation<Item>) async throws {
        try await operation.perform(sources[0])
    }
}

/// Read from the first source that has the item, then copy it into every faster source
/// before it (filling the caches). Writes go to the last source — the source of truth — and
/// then to each cache; a cache that cannot take the write (it evicted the item, say) drops
/// its copy instead, so it never serves a stale one.
public struct CacheThroughStrategy: RepositoryStrategy {
    /// The strategy (it has no settings).
    public init() {}
    /// Reads as the strategy describes above.
    ///
    /// - Parameters:
    ///   - sources: The repository's sources, fastest first.
    ///   - operation: The read, and how to fill a source that lacked the answer.
    /// - Returns: The answer.
    /// - Throws: The last source's error when none answers.
    public func read<Item, Value>(_ sources: [any DataSource<Item>], _ operation: ReadOperation<Item, Value>) async throws -> Value {
        let (value, index) = try await firstAnswer(sources, operation)
        // A cache that cannot be filled is no reason to fail the read.
        for source in sources[..<index] { try? await operation.fill(source, value) }
        return value
    }
    /// Writes as the strategy describes above.
    ///
    /// - Parameters:
    ///   - sources: The repository's sources, fastest first.
    ///   - operation: The write, and how to undo it.
    /// - Throws: The source's error.
    public func write<Item>(_ sources: [any DataSource<Item>], _ operation: WriteOperation<Item>) async throws {
        try await operation.perform(sources[sources.count - 1])
        for cache in sources.dropLast() {
            do { try await operation.perform(cache) } catch {
                if let id = operation.id { try? await cache.deleteById(id) } else { try? await cache.clean() }
            }
        }
    }
}

/// Write to every source, in order; when one fails, undo the write on the sources already
/// written and throw `RepositoryError.writeFailed` naming the failing source and what was
/// undone. Reads come from the first source that answers.
public struct WriteThroughStrategy: RepositoryStrategy {
    /// The strategy (it has no settings).
    public init() {}
    /// Reads as the strategy describes above.
    ///
    /// - Parameters:
    ///   - sources: The repository's sources, fastest first.
    ///   - operation: The read, and how to fill a source that lacked the answer.
    /// - Returns: The answer.
    /// - Throws: The last source's error when none answers.
    public func read<Item, Value>(_ sources: [any DataSource<Item>], _ operation: ReadOperation<Item, Value>) async throws -> Value {
        try await firstAnswer(sources, operation).value
    }
    /// Writes as the strategy describes above.
    ///
    /// - Parameters:
    ///   - sources: The repository's sources, fastest first.
    ///   - operation: The write, and how to undo it.
    /// - Throws: `RepositoryError.writeFailed` naming the source that failed, after the others
    ///   were undone.
    public func write<Item>(_ sources: [any DataSource<Item>], _ operation: WriteOperation<Item>) async throws {
        var undos: [(source: String, undo: @Sendable () async throws -> Void)] = []
        for source in sources {
            do {
                let undo = try await operation.prepareUndo(source)
                try await operation.perform(source)
                undos.append((source.name, undo))
            } catch {
                var compensated: [String] = [], failures: [String] = []
                for (name, undo) in undos.reversed() {
                    do {
                        try await undo()
                        compensated.append(name)
                    } catch let undoError {
                        failures.append("\(name) (\(undoError))")
                    }
                }
                throw RepositoryError.writeFailed(source: source.name, underlying: error, compensated: compensated, compensationFailures: failures)
            }
        }
    }
}

/// Every read and write goes to one source (the article's login example: credentials are
/// always checked with the backend). `.networkOnly` uses the last source.
public struct SingleSourceStrategy: RepositoryStrategy {
    /// The source's position; nil means the last.
    public let index: Int?
    /// - Parameter index: the source's position; nil for the last.
    public init(index: Int? = nil) { self.index = index }

    /// Reads as the strategy describes above.
    ///
    /// - Parameters:
    ///   - sources: The repository's sources, fastest first.
    ///   - operation: The read.
    /// - Returns: The answer of the one source this strategy reads.
    /// - Throws: That source's error.
    public func read<Item, Value>(_ sources: [any DataSource<Item>], _ operation: ReadOperation<Item, Value>) async throws -> Value {
        try await operation.perform(sources[index ?? sources.count - 1])
    }
    /// Writes as the strategy describes above.
    ///
    /// - Parameters:
    ///   - sources: The repository's sources, fastest first.
    ///   - operation: The write.
    /// - Throws: That source's error.
    public func write<Item>(_ sources: [any DataSource<Item>], _ operation: WriteOperation<Item>) async throws {
        try await operation.perform(sources[index ?? sources.count - 1])
    }
}

extension RepositoryStrategy where Self == FirstMatchStrategy {
    /// Read from the first source that has the item; write to the first source.
    public static var firstMatch: FirstMatchStrategy { FirstMatchStrategy() }
}

extension RepositoryStrategy where Self == CacheThroughStrategy {
    /// Read through the caches, filling them; write to the source of truth, then the caches.
    public static var cacheThrough: CacheThroughStrategy { CacheThroughStrategy() }
}

extension RepositoryStrategy where Self == WriteThroughStrategy {
    /// Write to every source, undoing on failure; read from the first that answers.
    public static var writeThrough: WriteThroughStrategy { WriteThroughStrategy() }
}

extension RepositoryStrategy where Self == SingleSourceStrategy {
    /// Every read and write goes to the last source.
    public static var networkOnly: SingleSourceStrategy { SingleSourceStrategy() }
}
