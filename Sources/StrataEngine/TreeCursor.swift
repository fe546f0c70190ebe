/// A position in one B-tree (without its write buffer): `Cursor`'s walk of the tree, and
/// the tree's source in a cursor that merges a write buffer (`CursorMerge.swift`).
struct TreeCursor {
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

    /// The entry the cursor is on (only while `isValid`): its leaf and index.
    var location: TreeReader.Location? { leaf.map { ($0, index) } }

    /// Whether the cursor is on an entry.
    var isValid: Bool { leaf != nil }

    /// Moves to the first entry; false when the tree is empty.
    ///
    /// - Returns: Whether the cursor is on an entry.
    /// - Throws: `StrataError.corruption` for damaged pages; `.io`.
    @discardableResult
    mutating func first() throws -> Bool {
        try descend(from: root, toFirst: true)
    }

    /// Moves to the last entry; false when the tree is empty.
    ///
    /// - Returns: Whether the cursor is on an entry.
    /// - Throws: `StrataError.corruption` for damaged pages; `.io`.
    @discardableResult
    mutating func last() throws -> Bool {
        try descend(from: root, toFirst: false)
    }

    /// Moves to the first entry whose key is `>= key`; false when there is none.
    ///
    /// - Parameter key: The encoded key to look for.
    /// - Returns: Whether the cursor is on an entry.
    /// - Throws: `StrataError.corruption` for damaged pages; `.io`.

    /// `seek(to:)` for a key the caller holds in a buffer. A key within the leaf the cursor
    /// is on is found in that leaf, without descending from the root: a run of lookups in
    /// ascending order (the records an index names, fetched in primary-key order) reads
    /// each leaf once.
    ///
    /// - Parameter key: The encoded key to look for.
    /// - Returns: Whether the cursor is on an entry.
    /// - Throws: `StrataError.corruption` for damaged pages; `.io`.
    @discardableResult
    mutating func seek(to key: UnsafeRawBufferPointer) throws -> Bool {
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

    /// Moves to the last entry whose key is `< key`; false when there is none.
    @discardableResult
    mutating func seek(before key: UnsafeRawBufferPointer) throws -> Bool {
        guard try seek(to: key) else { return try last() }
        return try previous()
    }

    /// Moves to the first entry whose key is `> key`; false when there is none.
    @discardableResult
    mutating func seek(after key: UnsafeRawBufferPointer) throws -> Bool {
        guard try seek(to: key) else { return false }
        return withKey({ compareBytes($0, key) }) == 0 ? try next() : true
    }

    /// Moves to the next entry; false (and invalid) past the last one.
    @discardableResult
    mutating func next() throws -> Bool {
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
    mutating func previous() throws -> Bool {
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

    private mutating func descend(from start: NodeRef?, toFirst: Bool, resetPath: Bool = true) throws -> Bool {
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

    /// Lends the current key's bytes to `body` without copying. Empty when invalid.
    ///
    /// - Parameter body: Reads the key; the buffer is valid only during the call.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws.
    func withKey<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        guard let leaf else { return try body(UnsafeRawBufferPointer(start: nil, count: 0)) }
        return try leaf.withEntry(index) { key, _ in try body(key) }
    }

    /// Visits the entries from the current one on, in order (or reverse order), until one
    /// is out of `range` or `body` returns false: the part of `Cursor.scan` that walks. Keys
    /// and inline values are lent, not copied.
    mutating func walk(_ range: KeyRange, reverse: Bool, _ body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Bool) throws {
        var more = isValid
        while more, let leaf {
            // In a leaf a transaction wrote, entries may lie in the order they were written,
            // not in key order (`LeafNode`): the processor's stream prefetch does not see the
            // walk's order, so such a leaf is asked for whole. (W1 scan.filter at 1M over the
            // leaves of its single-transaction load: 29.7M → 22.4M records/s without this.)
            leaf.prefetchForWalk()
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
