/// Copy-on-write B-tree mutation for one write transaction.
///
/// Nodes whose `owner` is this transaction were created by it and are changed in place;
/// every other node (committed, possibly shared by snapshots, or loaded from disk) is
/// copied before it changes, so readers never see a change.
struct TreeMutator {
    let store: PageStore
    let owner: UInt64
    var limits: NodeLimits { store.limits }

    private func mutable(_ leaf: LeafNode) -> LeafNode { leaf.owner == owner ? leaf : leaf.copy(owner: owner) }
    private func mutable(_ branch: BranchNode) -> BranchNode { branch.owner == owner ? branch : branch.copy(owner: owner) }

    /// Inserts or replaces `key`; returns the new root and whether the key is new. With
    /// `replacing` false a present key is left as it is: nothing changes and nothing is
    /// copied (LMDB's `MDB_NOOVERWRITE`), so a create needs one descent, not a lookup and a put.
    func put(root: NodeRef?, key: UnsafeRawBufferPointer, value: ValueSlot, replacing: Bool = true) throws -> (root: NodeRef, inserted: Bool) {
        guard let root else {
            let leaf = LeafNode(owner: owner)
            leaf.insert(at: 0, key: key, value: value, limits: limits)
            return (.leaf(leaf), true)
        }
        let result = try insert(into: root, key: key, value: value, replacing: replacing)
        guard let split = result.split else { return (result.node, result.inserted) }
        let newRoot = BranchNode(owner: owner, keys: [split.separator], children: [result.node, split.right])
        return (.branch(newRoot), result.inserted)
    }

    private func insert(into ref: NodeRef, key: UnsafeRawBufferPointer, value: ValueSlot, replacing: Bool)
        throws -> (node: NodeRef, split: (separator: [UInt8], right: NodeRef)?, inserted: Bool)
    {
        switch try store.resolve(ref) {
        case .leaf(let original):
            let (index, found) = original.search(key)
            if found, !replacing { return (ref, nil, false) }
            let leaf = mutable(original)
            if found {
                leaf.replaceValue(at: index, with: value, limits: limits)
            } else {
                leaf.insert(at: index, key: key, value: value, limits: limits)
            }
            guard leaf.pageBytes > limits.pageSize, leaf.count >= 2 else { return (.leaf(leaf), nil, !found) }
            let right = leaf.splitOff(from: leaf.balancedSplitIndex(), owner: owner, limits: limits)
            return (.leaf(leaf), (right.key(at: 0), .leaf(right)), !found)
        case .branch(let original):
            let index = original.childIndex(for: key)
            let child = try insert(into: original.children[index], key: key, value: value, replacing: replacing)
            if !child.inserted, !replacing { return (ref, nil, false) }
            let branch = mutable(original)
            branch.children[index] = child.node
            if let split = child.split {
                branch.insert(separator: split.separator, child: split.right, at: index + 1)
            }
            guard branch.pageBytes > limits.pageSize, branch.children.count >= 4 else { return (.branch(branch), nil, child.inserted) }
            let (separator, right) = branch.splitOff(owner: owner)
            return (.branch(branch), (separator, .branch(right)), child.inserted)
        }
    }

    /// Removes `key`; returns the new root (nil when the tree became empty) and whether
    /// the key was present. An absent key changes nothing and copies nothing.
    func delete(root: NodeRef?, key: UnsafeRawBufferPointer) throws -> (root: NodeRef?, removed: Bool) {
        guard let root else { return (nil, false) }
        let result = try remove(from: root, key: key)
        guard result.removed else { return (root, false) }
        var newRoot = result.node
        while true {
            switch try store.resolve(newRoot) {
            case .branch(let branch) where branch.children.count == 1:
                newRoot = branch.children[0]
            case .leaf(let leaf) where leaf.count == 0:
                return (nil, true)
            default:
                return (newRoot, true)
            }
        }
    }

    private func remove(from ref: NodeRef, key: UnsafeRawBufferPointer) throws -> (node: NodeRef, removed: Bool, underfull: Bool) {
        switch try store.resolve(ref) {
        case .leaf(let original):
            let (index, found) = original.search(key)
            guard found else { return (ref, false, false) }
            let leaf = mutable(original)
            leaf.removeEntry(at: index, limits: limits)
            return (.leaf(leaf), true, leaf.pageBytes < limits.minFill)
        case .branch(let original):
            let index = original.childIndex(for: key)
            let child = try remove(from: original.children[index], key: key)
            guard child.removed else { return (ref, false, false) }
            let branch = mutable(original)
            branch.children[index] = child.node
            if child.underfull, branch.children.count > 1 {
                try rebalance(branch, around: index)
            }
            return (.branch(branch), true, branch.pageBytes < limits.minFill || branch.children.count < 2)
        }
    }

    /// Merges the underfull child `index` with a neighbour, or, when both together are too
    /// big for one page, redistributes their entries evenly.
    private func rebalance(_ parent: BranchNode, around index: Int) throws {
        let left = index > 0 ? index - 1 : index
        let right = left + 1
        let separatorIndex = left
        switch (try store.resolve(parent.children[left]), try store.resolve(parent.children[right])) {
        case (.leaf(let l), .leaf(let r)):
            let merged = mutable(l)
            merged.append(contentsOf: r)
            parent.children[left] = .leaf(merged)
            if merged.pageBytes <= limits.pageSize || merged.count < 2 {
                parent.removeChild(at: right)
            } else {
                let newRight = merged.splitOff(from: merged.balancedSplitIndex(), owner: owner, limits: limits)
                parent.pageBytes -= BranchNode.keyCost(parent.keys[separatorIndex])
                parent.keys[separatorIndex] = newRight.key(at: 0)
                parent.pageBytes += BranchNode.keyCost(parent.keys[separatorIndex])
                parent.children[right] = .leaf(newRight)
            }
        case (.branch(let l), .branch(let r)):
            let merged = mutable(l)
            merged.keys.append(parent.keys[separatorIndex])
            merged.keys.append(contentsOf: r.keys)
            merged.children.append(contentsOf: r.children)
            merged.recomputePageBytes()
            parent.children[left] = .branch(merged)
            if merged.pageBytes <= limits.pageSize || merged.children.count < 4 {
                parent.removeChild(at: right)
            } else {
                let (separator, newRight) = merged.splitOff(owner: owner)
                parent.pageBytes -= BranchNode.keyCost(parent.keys[separatorIndex])
                parent.keys[separatorIndex] = separator
                parent.pageBytes += BranchNode.keyCost(separator)
                parent.children[right] = .branch(newRight)
            }
        default:
            throw store.context(0, "tree").error("siblings at different depths (a leaf beside a branch)")
        }
    }
}

/// Read-only B-tree lookups shared by snapshots and write transactions.
enum TreeReader {
    /// Where a key's entry is: its leaf and its index there.
    typealias Location = (leaf: LeafNode, index: Int)

    /// The leaf entry of `key`, or nil when it is absent.
    ///
    /// Not generic on purpose: a generic descent reached from unspecialized code (the typed
    /// layer's `read`) had the runtime look up `Optional<R>`'s metadata on every lookup,
    /// about 325 instructions, 5% of a typed get. The generic part is only `lend`.
    /// Inlined into its few callers, so that the leaf it finds costs no extra retain and
    /// release on the way out (1.5% of an engine get when it was a call).
    @inline(__always)
    static func locate(store: PageStore, root: NodeRef?, key: UnsafeRawBufferPointer) throws -> Location? {
        guard let root else { return nil }
        var node = try store.resolve(root)
        while case .branch(let branch) = node {
            // The child reference is borrowed from the branch's array, not copied: a copy
            // of a `NodeRef` is a retain and a release, a dozen per lookup.
            let index = branch.childIndex(for: key)
            node = try branch.children.withUnsafeBufferPointer { try store.resolve($0[index]) }
        }
        guard case .leaf(let leaf) = node else { return nil }
        let (index, found) = leaf.search(key)
        return found ? (leaf, index) : nil
    }

    /// Calls `body` with the value slot of `key`, or returns nil when it is absent.
    static func withValue<R>(store: PageStore, root: NodeRef?, key: UnsafeRawBufferPointer, _ body: (ValueSlot) throws -> R) throws -> R? {
        guard let location = try locate(store: store, root: root, key: key) else { return nil }
        return try location.leaf.withEntry(location.index) { _, value in try body(value) }
    }

    /// Lends the value at `location` to `body`: in place when the leaf holds it, otherwise
    /// from its value frame.
    static func lend<R>(_ location: Location, from store: PageStore, to body: (UnsafeRawBufferPointer) throws -> R) throws -> R {
        try location.leaf.withEntry(location.index) { _, slot in
            switch slot {
            case .inline(let bytes): return try body(bytes)
            case .overflow: return try store.value(slot).withUnsafeBytes(body)
            }
        }
    }

    static func get(store: PageStore, root: NodeRef?, key: UnsafeRawBufferPointer) throws -> [UInt8]? {
        try withValue(store: store, root: root, key: key) { try store.value($0) }
    }
}
