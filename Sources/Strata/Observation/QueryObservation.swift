import Dispatch
import Synchronization

/// Live queries: a query's current result, then a fresh one after every commit that may
/// change it — on every `Storage`, built on `observeCommits`.
///
/// ```swift
/// for try await overdue in storage.observe(Chore.filter(\.due < now).sorted(by: \.due)) {
///     render(overdue)              // first the current result, then one per relevant commit
/// }
/// ```
///
/// - Each result is read in one snapshot: a committed state, never a mix of two commits.
/// - Only commits that changed one of the query's collections re-run it.
/// - Results equal to the previous one are dropped (for `Equatable` models, counts and
///   optional lookups).
/// - A slow consumer gets the latest result, never a backlog: at most one result waits, and
///   at most one read runs per observation however fast commits come.
/// - The sequence ends when the consuming task is cancelled (or stops iterating) and when
///   the storage closes; a read error ends it with that error. Ending releases the observer.
///
/// Reads run on Strata's dispatch queue, never on the cooperative pool.
extension Storage {
    /// The query's results now and after each commit that changes its collection.
    ///
    /// - Parameter query: The query to follow.
    /// - Returns: A sequence of result arrays; it ends with an error when a read fails or the
    ///   storage stops following commits, and finishes when the storage closes.
    public func observe<M: Model>(_ query: Query<M>) -> AsyncThrowingStream<[M], Error> {
        observe(collections: [M.collectionName], isDuplicate: nil) { try $0.read(query) }
    }

    /// The query's results now and after each commit that changes them.
    ///
    /// - Parameter query: The query to follow.
    /// - Returns: A sequence of result arrays, each different from the one before.
    public func observe<M: Model & Equatable>(_ query: Query<M>) -> AsyncThrowingStream<[M], Error> {
        observe(collections: [M.collectionName], isDuplicate: ==) { try $0.read(query) }
    }

    /// How many models match, now and after each commit that changes the count.
    ///
    /// - Parameter query: The conditions to count.
    /// - Returns: A sequence of counts, each different from the one before.
    public func observeCount<M: Model>(_ query: Query<M>) -> AsyncThrowingStream<Int, Error> {
        observe(collections: [M.collectionName], isDuplicate: ==) { try $0.count(query) }
    }

    /// The model with this primary key (nil while there is none), now and after each commit
    /// that changes it.
    ///
    /// - Parameters:
    ///   - type: The model type, which names the collection.
    ///   - primaryKey: The key of the model to follow.
    /// - Returns: A sequence of the model's states (nil while it does not exist).
    public func observe<M: Model & Equatable, K: KeyComponent & Sendable>(_ type: M.Type, primaryKey: K) -> AsyncThrowingStream<M?, Error> {
        observe(collections: [M.collectionName], isDuplicate: ==) { try $0.read(type, primaryKey: primaryKey) }
    }

    /// The general form: `fetch` is read in one snapshot now and after each commit that
    /// changes any of `collections` (nil: after every commit); a result `isDuplicate` of the
    /// last one sent is dropped.
    ///
    /// - Parameters:
    ///   - collections: The collections whose commits trigger a new read; nil for every commit.
    ///   - isDuplicate: Whether a new result repeats the last one sent (then it is not sent);
    ///     nil sends every read.
    ///   - fetch: Reads the result in one snapshot.
    /// - Returns: A sequence of `fetch`'s results.
    public func observe<R: Sendable>(collections: Set<String>?, isDuplicate: (@Sendable (R, R) -> Bool)?,
                                     fetch: @escaping @Sendable (any StorageReader) throws -> R) -> AsyncThrowingStream<R, Error> {
        let (stream, continuation) = AsyncThrowingStream<R, Error>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let observation = LiveQuery(storage: self, continuation: continuation, isDuplicate: isDuplicate, fetch: fetch)
        // Registered before the first read, so no commit between the two is missed.
        let token = observeCommits { event in
            switch event {
            case .committed(let changed): if collections.map({ !changed.isDisjoint(with: $0) }) ?? true { observation.refresh() }
            case .closed: continuation.finish()
            case .failed(let reason): continuation.finish(throwing: StorageError.observationFailed(reason))
            }
        }
        continuation.onTermination = { _ in
            token.cancel()
            observation.stop()
        }
        observation.refresh()
        return stream
    }
}

/// One observation's state: whether a read runs, whether another is wanted, the last result.
final class LiveQuery<R: Sendable>: Sendable {
    private struct State {
        var running = false
        var wanted = false
        var stopped = false
        var last: R?
    }

    private let storage: any Storage
    private let continuation: AsyncThrowingStream<R, Error>.Continuation
    private let isDuplicate: (@Sendable (R, R) -> Bool)?
    private let fetch: @Sendable (any StorageReader) throws -> R
    private let state = Mutex(State())

    init(storage: any Storage, continuation: AsyncThrowingStream<R, Error>.Continuation,
         isDuplicate: (@Sendable (R, R) -> Bool)?, fetch: @escaping @Sendable (any StorageReader) throws -> R) {
        (self.storage, self.continuation, self.isDuplicate, self.fetch) = (storage, continuation, isDuplicate, fetch)
    }

    func stop() { state.withLock { $0.stopped = true } }

    /// Asks for a fresh result: starts a read, or marks one wanted after the running read
    /// (coalescing any number of commits into one read).
    func refresh() {
        let start = state.withLock { state -> Bool in
            guard !state.stopped else { return false }
            if state.running {
                state.wanted = true
                return false
            }
            state.running = true
            return true
        }
        if start { storageQueue.async { self.run() } }
    }

    private func run() {
        while true {
            do {
                let result = try storage.read(fetch)
                let send = state.withLock { state -> Bool in
                    if let last = state.last, let isDuplicate, isDuplicate(last, result) { return false }
                    state.last = result
                    return true
                }
                if send { continuation.yield(result) }
            } catch {
                state.withLock { $0.stopped = true }
                continuation.finish(throwing: error)
            }
            let again = state.withLock { state -> Bool in
                guard state.wanted, !state.stopped else {
                    state.running = false
                    return false
                }
                state.wanted = false
                return true
            }
            if !again { return }
        }
    }
}
