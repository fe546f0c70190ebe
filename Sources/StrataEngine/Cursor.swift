/// A position in one tree of a snapshot, moving forward and backward in key order.
///
/// ```swift
/// let cursor = try snapshot.cursor("users")
/// var more = try cursor.seek(to: Key(1000).bytes)
/// while more {
///     print(cursor.key, try cursor.value())
///     more = try cursor.next()
/// }
/// ```
///
/// A cursor sees the tree as it was when the cursor was made, even in a write
/// transaction that keeps changing it. Moving a cursor allocates nothing; `key` and
/// `value()` copy the bytes out, `withKey`/`withValue` lend them without copying.
///
/// Over a tree with buffered writes (`Database.Options.writeBufferEntries`) the cursor
/// merges the buffer's sorted runs with the tree, the newest write of each key winning and
/// deletes hiding their keys (`CursorMerge.swift`); over any other tree it walks the tree
/// alone.
public final class Cursor {
    let store: PageStore
    @exclusivity(unchecked) var tree: TreeCursor
    /// The merge of the write buffer's runs with `tree`; nil when the tree has no buffer.
    @exclusivity(unchecked) var merge: RunMerge?

    init(store: PageStore, state: TreeState) {
        assert(state.pending == nil, "a cursor reads sorted runs: pending writes are sorted first (WriteTransaction.treeHandle)")
        self.store = store
        self.tree = TreeCursor(store: store, root: state.root)
        let runs = state.sortedRuns
        self.merge = runs.isEmpty ? nil : RunMerge(runs: runs)
    }

    /// Whether the cursor is on an entry.
    public var isValid: Bool { merge?.isValid ?? tree.isValid }

    /// The entry the cursor is on: in the tree or in a buffered run.
    private var location: TreeReader.Location? {
        guard let merge else { return tree.location }
        return merge.location(tree: tree)
    }

    /// Moves to the first entry; false when the tree is empty.
    ///
    /// - Returns: Whether the cursor is on an entry.
    /// - Throws: `StrataError.corruption` for damaged pages; `.io`.
    @discardableResult
    public func first() throws -> Bool {
        guard merge != nil else { return try tree.first() }
        return try mergedFirst()
    }

    /// Moves to the last entry; false when the tree is empty.
    ///
    /// - Returns: Whether the cursor is on an entry.
    /// - Throws: `StrataError.corruption` for damaged pages; `.io`.
    @discardableResult
    public func last() throws -> Bool {
        guard merge != nil else { return try tree.last() }
        return try mergedLast()
    }

    /// Moves to the first entry whose key is `>= key`; false when there is none.
    ///
    /// - Parameter key: The encoded key to look for.
    /// - Returns: Whether the cursor is on an entry.
    /// - Throws: `StrataError.corruption` for damaged pages; `.io`.
    @discardableResult
    public func seek(to key: [UInt8]) throws -> Bool {
        try key.withUnsafeBytes { try seek(to: $0) }
    }

    /// `seek(to:)` for a key the caller holds in a buffer. A key within the leaf the cursor
    /// is on is found in that leaf, without descending from the root: a run of lookups in
    /// ascending order (the records an index names, fetched in primary-key order) reads
    /// each leaf once.
    ///
    /// - Parameter key: The encoded key to look for.
    /// - Returns: Whether the cursor is on an entry.
    /// - Throws: `StrataError.corruption` for damaged pages; `.io`.
    @discardableResult
    public func seek(to key: UnsafeRawBufferPointer) throws -> Bool {
        guard merge != nil else { return try tree.seek(to: key) }
        return try mergedSeek(to: key)
    }

    /// Moves to the last entry whose key is `<= key` (or `< key` when `inclusive` is
    /// false); false when there is none.
    ///
    /// - Parameters:
    ///   - key: The encoded key to look for.
    ///   - inclusive: Whether an entry equal to `key` counts.
    /// - Returns: Whether the cursor is on an entry.
    /// - Throws: `StrataError.corruption` for damaged pages; `.io`.
    @discardableResult
    public func seek(toLast key: [UInt8], inclusive: Bool = true) throws -> Bool {
        guard try seek(to: key) else { return try last() }
        let beyond = withKey { current in key.withUnsafeBytes { compareBytes(current, $0) } }
        if beyond > 0 || (beyond == 0 && !inclusive) { return try previous() }
        return true
    }

    /// Moves to the next entry; false (and invalid) past the last one.
    ///
    /// - Returns: Whether the cursor is on an entry.
    /// - Throws: `StrataError.corruption` for damaged pages; `.io`.
    @discardableResult
    public func next() throws -> Bool {
        guard merge != nil else { return try tree.next() }
        return try mergedNext()
    }

    /// Moves to the previous entry; false (and invalid) before the first one.
    ///
    /// - Returns: Whether the cursor is on an entry.
    /// - Throws: `StrataError.corruption` for damaged pages; `.io`.
    @discardableResult
    public func previous() throws -> Bool {
        guard merge != nil else { return try tree.previous() }
        return try mergedPrevious()
    }

    /// The current key. Only valid while `isValid`.
    public var key: [UInt8] { withKey { Array($0) } }

    /// The current value, read from its value frame when stored out of line.
    ///
    /// - Returns: A copy of the value; empty when the cursor is not on an entry.
    /// - Throws: `StrataError.corruption` for a damaged value frame; `.io`.
    public func value() throws -> [UInt8] {
        guard let (leaf, index) = location else { return [] }
        return try leaf.withEntry(index) { _, value in try store.value(value) }
    }

    /// Lends the current key's bytes to `body` without copying. Empty when invalid.
    ///
    /// - Parameter body: Reads the key; the buffer is valid only during the call.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws.
    public func withKey<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        guard let (leaf, index) = location else { return try body(UnsafeRawBufferPointer(start: nil, count: 0)) }
        return try leaf.withEntry(index) { key, _ in try body(key) }
    }

    /// Lends the current value's bytes to `body`; inline values are not copied.
    ///
    /// - Parameter body: Reads the value; the buffer is valid only during the call.
    /// - Returns: What `body` returns.
    /// - Throws: `StrataError.corruption` for a damaged value frame; what `body` throws.
    public func withValue<R>(_ body: (UnsafeRawBufferPointer) throws -> R) throws -> R {
        guard let location else { return try body(UnsafeRawBufferPointer(start: nil, count: 0)) }
        return try TreeReader.lend(location, from: store, unchanging: false, to: body)
    }

    /// Visits the entries of `range` in order (or reverse order) until `body` returns
    /// false. Keys and inline values are lent, not copied.
    func scan(_ range: KeyRange, reverse: Bool, _ body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Bool) throws {
        var more: Bool
        if reverse {
            switch range.upper {
            case .unbounded: more = try last()
            case .included(let key): more = try seek(toLast: key, inclusive: true)
            case .excluded(let key): more = try seek(toLast: key, inclusive: false)
            }
        } else {
            switch range.lower {
            case .unbounded: more = try first()
            case .included(let key): more = try seek(to: key)
            case .excluded(let key):
                more = try seek(to: key)
                if more, withKey({ compareBytes(key, $0) == 0 }) { more = try next() }
            }
        }
        guard merge != nil else { return try tree.walk(range, reverse: reverse, body) }
        // The entry's place taken once for its key and value (each retains its leaf).
        while more, let location {
            let wantsMore = try TreeReader.lendEntry(location, from: store, unchanging: false) { key, value in
                guard reverse ? range.isWithinLower(key) : range.isWithinUpper(key) else { return false }
                return try body(key, value)
            }
            guard wantsMore else { return }
            more = reverse ? try previous() : try next()
        }
    }
}
