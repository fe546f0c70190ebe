/// A type-erased `Storage`, for code that picks its backend at run time:
///
/// ```swift
/// let storage = AnyStorage(inTests ? try MemoryStorage() : try StrataStorage(path: path))
/// ```
public struct AnyStorage: Storage {
    /// The storage every call goes to.
    public let base: any Storage

    /// Wraps `base`.
    ///
    /// - Parameter base: The storage every call goes to.
    public init(_ base: any Storage) { self.base = base }

    /// Runs `body` on a consistent snapshot.
    /// - Throws: what `body` or the storage throws.
    /// - Parameter body: Reads through the reader it is given, valid only during the call.
    /// - Returns: What `body` returns.
    public func read<R>(_ body: (any StorageReader) throws -> R) throws -> R { try base.read(body) }
    /// Runs `body` in one write transaction: committed when it returns, rolled back when it throws.
    /// - Throws: what `body` or the storage throws; nothing is committed then.
    /// - Parameter body: Writes through the writer it is given, valid only during the call.
    /// - Returns: What `body` returns.
    @discardableResult
    public func write<R>(_ body: (any StorageWriter) throws -> R) throws -> R { try base.write(body) }
    /// Releases the storage; later calls fail with a closed-storage error.
    ///
    /// - Throws: What releasing runs into (a final checkpoint that cannot be written).
    public func close() throws { try base.close() }
    /// Makes commits made elsewhere visible.
    ///
    /// - Throws: What `base` throws.
    public func refresh() throws { try base.refresh() }
    /// Calls `observer` after each commit with the collections it changed.
    ///
    /// - Parameter observer: Called on a background thread after each commit, then once with
    ///   `.closed`.
    /// - Returns: The registration; observing stops when it is cancelled or released.
    public func observeCommits(_ observer: @escaping @Sendable (CommitEvent) -> Void) -> CommitObservation { base.observeCommits(observer) }
}
