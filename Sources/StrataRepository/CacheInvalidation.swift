import Strata
import Synchronization

/// Keeps a `Repository`'s caches from serving items that changed behind them: when the
/// storage under its source of truth commits (through this repository, another handle, or
/// — for a Strata file opened read-only — another process), the caches are emptied before
/// the next read, which then fills them again from the storage.
///
/// ```swift
/// let storage = try StrataStorage(path: "books.strata")
/// let books = Repository<Book>(
///     sources: [MemoryDataSource(capacity: 500),
///               RepositoryDataSource(StrataCRUDRepository(backend: StorageBackend(storage: storage, table: "books")))],
///     strategy: .cacheThrough,
///     invalidation: CacheInvalidation(observing: storage))
/// ```
///
/// Commits name only the collections they changed, not the items, so a commit empties the
/// caches whole. Invalidation is lazy: a commit only marks the caches stale (the storage's
/// observers must not wait on async work), and the next read of the repository empties
/// them first. A read that overlapped a commit does not leave what it read in the caches:
/// its fill is undone when the caches became stale meanwhile.
public final class CacheInvalidation: Sendable {
    /// The generation the caches were last emptied for.
    private let cleaned = Mutex<UInt64>(0)
    private let observation: CommitObservation?

    /// Invalidates on every commit to `storage` that changes `collections` (by default the
    /// collection the Strata repository backend stores items in), and when it closes or
    /// can no longer follow commits.
    ///
    /// - Parameters:
    ///   - storage: The storage whose commits invalidate the cache.
    ///   - collections: The collections whose changes count.
    public init(observing storage: any Storage, collections: Set<String> = [StorageBackend.collectionName]) {
        let generation = Generation()
        self.observation = storage.observeCommits { event in
            switch event {
            case .committed(let changed): if !changed.isDisjoint(with: collections) { generation.advance() }
            case .closed, .failed: generation.advance()
            }
        }
        self.shared = generation
    }

    /// Invalidates only when `invalidate()` is called: for sources that are not a `Storage`.
    public init() {
        observation = nil
        shared = Generation()
    }

    /// The counter shared with the commit observer (which must not hold `self`).
    private final class Generation: Sendable {
        let value = Atomic<UInt64>(0)
        func advance() { value.add(1, ordering: .releasing) }
    }

    private let shared: Generation

    /// Marks the caches stale: the next read empties them.
    public func invalidate() { shared.advance() }

    var current: UInt64 { shared.value.load(ordering: .acquiring) }

    /// Empties `caches` if a commit made them stale since they were last emptied; returns
    /// the generation they are fresh for.
    func refresh<Item>(_ caches: ArraySlice<any DataSource<Item>>) async -> UInt64 {
        let now = current
        guard cleaned.withLock({ $0 }) != now else { return now }
        // A cache that cannot be emptied is no reason to fail the read; it is tried again.
        var emptied = true
        for cache in caches {
            do { try await cache.clean() } catch { emptied = false }
        }
        if emptied { cleaned.withLock { $0 = max($0, now) } }
        return now
    }

    deinit { observation?.cancel() }
}
