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
public final class Cursor {
    let store: PageStore
    let root: NodeRef?
    private var path: [(branch: BranchNode, index: Int)] = []
    private var leaf: LeafNode?
    private var index = 0

    init(store: PageStore, root: NodeRef?) {
        self.store = store
        self.root = root
        path.reserveCapacity(8)
    }

    /// Whether the cursor is on an entry.
    public var isValid: Bool { leaf != nil }

    /// Moves to the first entry; false when the tree is empty.
    ///
    /// - Returns: Whether the cursor is on an entry.
    /// - Throws: `StrataError.corruption` for damaged pages; `.io`.
    @discardableResult
    public func first() throws -> Bool {
        try descend(from: root, toFirst: true)
    }

    /// Moves to the last entry; false when the tree is empty.
    ///
    /// - Returns: Whether the cursor is on an entry.
    /// - Throws: `StrataError.corruption` for damaged pages; `.io`.
    @discardableResult
    public func last() throws -> Bool {
        try descend(from: root, toFirst: false)
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
        // The leaf holds every key of the tree between its first and last: for a key in
        // that span, the first entry at or after it is in the leaf.
        if let current = leaf, index < current.count {
            // Forward (the common case: ascending lookups): search from here on.
            if let found = current.search(key, onFrom: index) {
                index = found.index
                return true
            }
            if current.compareKey(at: index, with: key) > 0, current.compareKey(at: 0, with: key) <= 0 {
                index = current.search(key).index
                return true
            }
        }
        path.removeAll(keepingCapacity: true)
        leaf = nil
        guard var ref = root else { return false }
        while true {
            switch try store.resolve(ref, for: .scan) {
            case .branch(let branch):
                let i = branch.childIndex(for: key)
                path.append((branch, i))
                ref = branch.child(at: i)
            case .leaf(let found):
                leaf = found
                index = found.search(key).index
                if index < found.count { return true }
                index = found.count - 1
                return try next()
            }
        }
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
    @discardableResult
    public func next() throws -> Bool {
        guard let current = leaf else { return false }
        if index + 1 < current.count {
            index += 1
            return true
        }
        while let (branch, i) = path.popLast() {
            if i + 1 < branch.childCount {
                path.append((branch, i + 1))
                if try descend(from: branch.child(at: i + 1), toFirst: true, resetPath: false) { return true }
                return try next()
            }
        }
        leaf = nil
        return false
    }

    /// Moves to the previous entry; false (and invalid) before the first one.
    ///
    /// - Returns: Whether the cursor is on an entry.
    /// - Throws: `StrataError.corruption` for damaged pages; `.io`.
    @discardableResult
    public func previous() throws -> Bool {
        guard leaf != nil else { return false }
        if index > 0 {
            index -= 1
            return true
        }
        while let (branch, i) = path.popLast() {
            if i > 0 {
                path.append((branch, i - 1))
                if try descend(from: branch.child(at: i - 1), toFirst: false, resetPath: false) { return true }
                return try previous()
            }
        }
        leaf = nil
        return false
    }

    private func descend(from start: NodeRef?, toFirst: Bool, resetPath: Bool = true) throws -> Bool {
        if resetPath { path.removeAll(keepingCapacity: true) }
        leaf = nil
        guard var ref = start else { return false }
        while true {
            switch try store.resolve(ref, for: .scan) {
            case .branch(let branch):
                let i = toFirst ? 0 : branch.childCount - 1
                path.append((branch, i))
                ref = branch.child(at: i)
            case .leaf(let found):
                leaf = found
                index = toFirst ? 0 : found.count - 1
                if found.count > 0 { return true }
                // An empty leaf is only transient; step over it.
                return toFirst ? try next() : try previous()
            }
        }
    }

    /// The current key. Only valid while `isValid`.
    public var key: [UInt8] { withKey { Array($0) } }

    /// The current value, read from its value frame when stored out of line.
    ///
    /// - Returns: A copy of the value; empty when the cursor is not on an entry.
    /// - Throws: `StrataError.corruption` for a damaged value frame; `.io`.
    public func value() throws -> [UInt8] {
        guard let leaf else { return [] }
        return try leaf.withEntry(index) { _, value in try store.value(value) }
    }

    /// Lends the current key's bytes to `body` without copying. Empty when invalid.
    ///
    /// - Parameter body: Reads the key; the buffer is valid only during the call.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws.
    public func withKey<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        guard let leaf else { return try body(UnsafeRawBufferPointer(start: nil, count: 0)) }
        return try leaf.withEntry(index) { key, _ in try body(key) }
    }

    /// Lends the current value's bytes to `body`; inline values are not copied.
    ///
    /// - Parameter body: Reads the value; the buffer is valid only during the call.
    /// - Returns: What `body` returns.
    /// - Throws: `StrataError.corruption` for a damaged value frame; what `body` throws.
    public func withValue<R>(_ body: (UnsafeRawBufferPointer) throws -> R) throws -> R {
        guard let leaf else { return try body(UnsafeRawBufferPointer(start: nil, count: 0)) }
        return try leaf.withEntry(index) { _, slot in
            switch slot {
            case .inline(let bytes): return try body(bytes)
            case .overflow: return try store.value(slot).withUnsafeBytes(body)
            }
        }
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
        while more, let leaf {
            let keepGoing = try leaf.storage.withUnsafeBytes { raw -> Bool? in
                // Walk the rest of this leaf with one buffer borrow.
                while true {
                    let e = LeafNode.entry(in: raw, at: Int(leaf.starts[index]))
                    if reverse ? !range.isWithinLower(e.key) : !range.isWithinUpper(e.key) { return false }
                    let wantsMore: Bool
                    switch e.value {
                    case .inline(let value): wantsMore = try body(e.key, value)
                    case .overflow: wantsMore = try store.value(e.value).withUnsafeBytes { try body(e.key, $0) }
                    }
                    if !wantsMore { return false }
                    if reverse {
                        if index == 0 { return nil }
                        index -= 1
                    } else {
                        if index + 1 == leaf.count { return nil }
                        index += 1
                    }
                }
            }
            if keepGoing == false { return }
            more = reverse ? try previous() : try next()
        }
    }
}
