import Synchronization

/// What a storage tells its observers.
public enum CommitEvent: Sendable, Equatable {
    /// A transaction committed and is visible to new reads; these collections changed.
    case committed(collections: Set<String>)
    /// The storage closed: no more commits will come.
    case closed
    /// The storage can no longer follow commits made through other handles or processes
    /// (their frames could not be read; the reason says why). Observations end with
    /// `StorageError.observationFailed`.
    case failed(reason: String)
}

/// A registered commit observer; cancelling (or releasing) it unregisters the observer.
public final class CommitObservation: Sendable {
    private let onCancel: Mutex<(@Sendable () -> Void)?>

    /// An observation that runs `cancel` once, when cancelled.
    ///
    /// - Parameter cancel: What stops the observing; run at most once.
    public init(cancel: @escaping @Sendable () -> Void) { onCancel = Mutex(cancel) }

    /// Stops the observer; later calls do nothing.
    public func cancel() { onCancel.withLock { $0.take() }?() }

    deinit { cancel() }
}

/// The observers of one storage: what a backend keeps to implement
/// `Storage.observeCommits`. Observers are called outside the lock, after the commit is
/// visible, on the committing thread, in the order they were registered: they must only
/// schedule work.
public final class CommitObservers: Sendable {
    private struct Registry {
        var next: UInt64 = 0
        var observers: [UInt64: @Sendable (CommitEvent) -> Void] = [:]
        var closed = false
    }

    private let registry = Mutex(Registry())

    /// No observers yet.
    public init() {}

    /// How many observers are registered (for tests and statistics).
    public var count: Int { registry.withLock { $0.observers.count } }

    /// Registers `observer`; on a closed storage it is told `.closed` at once.
    ///
    /// - Parameter observer: Called after each commit, on the committing thread.
    /// - Returns: The registration; cancelling or releasing it removes the observer.
    public func add(_ observer: @escaping @Sendable (CommitEvent) -> Void) -> CommitObservation {
        let id: UInt64? = registry.withLock { registry in
            guard !registry.closed else { return nil }
            registry.next += 1
            registry.observers[registry.next] = observer
            return registry.next
        }
        guard let id else {
            observer(.closed)
            return CommitObservation {}
        }
        return CommitObservation { [weak self] in _ = self?.registry.withLock { $0.observers.removeValue(forKey: id) } }
    }

    /// The observers, in the order they were registered.
    private var inOrder: [@Sendable (CommitEvent) -> Void] {
        registry.withLock { $0.observers.sorted { $0.key < $1.key }.map(\.value) }
    }

    /// Tells every observer that these collections changed.
    ///
    /// - Parameter collections: The names of the collections the commit changed; nothing is sent
    ///   when it is empty.
    public func committed(_ collections: Set<String>) {
        guard !collections.isEmpty else { return }
        for observer in inOrder { observer(.committed(collections: collections)) }
    }

    /// Tells every observer that following commits failed.
    ///
    /// - Parameter reason: Why, in words an app can show or log.
    public func failed(_ reason: String) {
        for observer in inOrder { observer(.failed(reason: reason)) }
    }

    /// Tells every observer the storage closed, and forgets them.
    public func close() {
        let observers = registry.withLock { registry in
            registry.closed = true
            defer { registry.observers = [:] }
            return Array(registry.observers.values)
        }
        for observer in observers { observer(.closed) }
    }
}
