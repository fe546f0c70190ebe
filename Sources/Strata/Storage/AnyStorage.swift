/// A type-erased `Storage`, for code that picks its backend at run time:
///
/// ```swift
/// let storage = AnyStorage(inTests ? try MemoryStorage() : try StrataStorage(path: path))
/// ```
public struct AnyStorage: Storage {
    /// The storage every call goes to.
    public let base: any Storage

    /// Wraps `base`.
    public init(_ base: any Storage) { self.base = base }

    public func read<R>(_ body: (any StorageReader) throws -> R) throws -> R { try base.read(body) }
    @discardableResult
    public func write<R>(_ body: (any StorageWriter) throws -> R) throws -> R { try base.write(body) }
    public func close() throws { try base.close() }
    public func refresh() throws { try base.refresh() }
    public func observeCommits(_ observer: @escaping @Sendable (CommitEvent) -> Void) -> CommitObservation { base.observeCommits(observer) }
}
