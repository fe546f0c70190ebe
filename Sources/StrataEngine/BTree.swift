/// Copy-on-write B-tree mutation for one write transaction.
///
/// Nodes whose `owner` is this transaction were created by it and are changed in place;
/// every other node (committed, possibly shared by snapshots, or loaded from disk) is
/// copied before it changes, so readers never see a change.
struct TreeMutator {
    let store: PageStore
    let owner: UInt64
    var limits: NodeLimits { store.limits }

    private func mutable(_ leaf: LeafNode) -> LeafNode { leaf.owner == owner ? leaf : leaf.copy(owner: owner, limits: limits) }
    private func mutable(_ branch: BranchNode) -> BranchNode { branch.owner == owner ? branch : branch.copy(owner: owner) }

    /// The root of a tree that was empty, holding `key` alone.
    func firstRoot(key: UnsafeRawBufferPointer, value: ValueSlot) -> NodeRef {
        let leaf = LeafNode(owner: owner)
        leaf.insert(at: 0, key: key, value: value, limits: limits)
        return .leaf(leaf)
    }

    /// Whether a write of `key` would change only nodes this transaction owns already (so
    /// that it copies none), and whether the tree holds `key`: what a buffered write asks
    /// before it chooses between the tree and the write buffer (`TreeChanges.bufferedPut`).
    /// An empty tree counts as owned: its first root is a new leaf.
    func probe(root: NodeRef?, key: UnsafeRawBufferPointer) throws -> (owned: Bool, present: Bool) {
        guard let root else { return (true, false) }
        // The walk holds no reference, as a lookup's does (`TreeReader.descend`): the root
        // is held by the caller's tree state, each node below by its parent, and nothing
        // changes the tree meanwhile. (Retaining each node was 15% of W1's insert.batch at
        // 1M with a write buffer; perf.) Off this transaction's nodes, a lookup answers.
        var next = root.unretained
        while true {
            switch next {
            case .branch(let branch):
                let child = branch._withUnsafeGuaranteedRef { $0.owner == owner ? $0.unretainedChild(for: key) : nil }
                guard let child else { return (false, try TreeReader.locate(store: store, root: root, key: key) != nil) }
                next = child
            case .leaf(let leaf):
                return leaf._withUnsafeGuaranteedRef { ($0.owner == owner, $0.search(key).found) }
            case .stored:
                return (false, try TreeReader.locate(store: store, root: root, key: key) != nil)
            }
        }
    }

    /// Inserts or replaces `key` where `putInPlace` declined: down the path and back up it,
    /// splitting what outgrows its page (the root too). Returns the new root and whether
    /// the key is new. With `replacing` false a present key is left as it is: nothing
    /// changes and nothing is copied (LMDB's `MDB_NOOVERWRITE`), so a create needs one
    /// descent, not a lookup and a put.
    func putSplitting(root: NodeRef, key: UnsafeRawBufferPointer, value: ValueSlot, replacing: Bool) throws -> (root: NodeRef, inserted: Bool) {
        let result = try insert(into: root, key: key, value: value, replacing: replacing)
        guard let split = result.split else { return (result.node, result.inserted) }
        let newRoot = BranchNode(owner: owner, keys: [split.separator], children: [result.node, split.right])
        return (.branch(newRoot), result.inserted)
    }

    /// A put in place, for the common case: the root is a branch of this transaction, and
    /// the key's leaf takes the entry without outgrowing its page. The branches on the way
    /// are made this transaction's (a copy put in its parent's slot, when one is not) and
    /// the leaf too, and the entry goes in; no node is handed back up a recursion and
    /// stored again in its parent. That rebuilt the path at every put: a retain and a
    /// release per node and level, atomic operations on lines the descent had not touched,
    /// 35% of replaying commits into a 3M-record tree (perf).
    ///
    /// - Parameter top: The tree's root branch, unretained: the caller's tree state holds it.
    /// - Returns: Whether the key is new; nil when the leaf would split (or the root is not
    ///   this transaction's), having changed nothing but such copies: `putSplitting` then
    ///   does the put.
    /// - Parameter copying: Whether nodes not this transaction's are copied on the way;
    ///   when false the put declines (nil) at the first one, having changed nothing: a
    ///   buffered write then goes to the write buffer instead (`TreeChanges.bufferedPut`).
    func putInPlace(top: Unmanaged<BranchNode>, key: UnsafeRawBufferPointer, value: ValueSlot, replacing: Bool,
                    copying: Bool = true) throws -> Bool? {
        // The walk holds no reference: the root is held by the caller's tree state, and
        // each branch below by its parent; nothing else changes the tree meanwhile (a
        // transaction's nodes are its own).
        guard top._withUnsafeGuaranteedRef({ $0.owner == owner }) else { return nil }
        var branch = top
        while true {
            switch try branch._withUnsafeGuaranteedRef({ try stepInPlace(from: $0, key: key, value: value, replacing: replacing, copying: copying) }) {
            case .descend(let child): branch = child
            case .done(let inserted): return inserted
            case .declined: return nil
            }
        }
    }

    private enum InPlaceStep {
        /// On to this branch, now this transaction's and held by its parent.
        case descend(Unmanaged<BranchNode>)
        case done(inserted: Bool)
        /// The leaf would split, or (not copying) a node is not this transaction's.
        case declined
    }

    /// One level of `putInPlace` below `branch`, which is this transaction's.
    @inline(__always)
    private func stepInPlace(from branch: BranchNode, key: UnsafeRawBufferPointer, value: ValueSlot, replacing: Bool,
                             copying: Bool) throws -> InPlaceStep {
        let index = branch.childIndex(for: key)
        switch branch.unretainedChild(at: index) {
        case .branch(let child):
            if child._withUnsafeGuaranteedRef({ $0.owner == owner }) { return .descend(child) }
            guard copying else { return .declined }
            return .descend(adopt(child._withUnsafeGuaranteedRef { $0.copy(owner: owner) }, into: branch, at: index))
        case .leaf(let leaf):
            guard copying || leaf._withUnsafeGuaranteedRef({ $0.owner == owner }) else { return .declined }
            return leaf._withUnsafeGuaranteedRef { putInLeaf($0, under: branch, at: index, key: key, value: value, replacing: replacing) }
        case .stored(let address):
            guard copying else { return .declined }
            switch try store.node(at: address) {
            case .branch(let child): return .descend(adopt(child.copy(owner: owner), into: branch, at: index))
            case .leaf(let leaf): return putInLeaf(leaf, under: branch, at: index, key: key, value: value, replacing: replacing)
            }
        }
    }

    /// Puts this transaction's copy of a branch in its parent's slot; the parent holds it.
    @inline(__always)
    private func adopt(_ copy: BranchNode, into parent: BranchNode, at index: Int) -> Unmanaged<BranchNode> {
        parent.setChild(.branch(copy), at: index)
        return Unmanaged.passUnretained(copy)
    }

    /// The put into `original`, child `index` of `parent`, unless the entry could make it
    /// outgrow its page (counted as if added whole, even when it replaces one).
    @inline(__always)
    private func putInLeaf(_ original: LeafNode, under parent: BranchNode, at index: Int, key: UnsafeRawBufferPointer,
                           value: ValueSlot, replacing: Bool) -> InPlaceStep {
        let (position, found) = original.search(key)
        if found, !replacing { return .done(inserted: false) }
        let entry = LeafNode.entrySizes(keyCount: key.count, value: value, limits: limits).page
        guard original.pageBytes + entry <= limits.pageSize else { return .declined }
        let leaf = mutable(original)
        if leaf !== original { parent.setChild(.leaf(leaf), at: index) }
        if found {
            leaf.replaceValue(at: position, with: value, limits: limits)
        } else {
            leaf.insert(at: position, key: key, value: value, limits: limits)
        }
        // The change may have moved the leaf's arrays (`SearchLines`).
        parent.refreshLines(at: index)
        return .done(inserted: !found)
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
            let child = try insert(into: original.child(at: index), key: key, value: value, replacing: replacing)
            if !child.inserted, !replacing { return (ref, nil, false) }
            let branch = mutable(original)
            branch.setChild(child.node, at: index)
            if let split = child.split {
                branch.insert(separator: split.separator, child: split.right, at: index + 1)
            }
            guard branch.pageBytes > limits.pageSize, branch.childCount >= 4 else { return (.branch(branch), nil, child.inserted) }
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
            case .branch(let branch) where branch.childCount == 1:
                newRoot = branch.child(at: 0)
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
            let child = try remove(from: original.child(at: index), key: key)
            guard child.removed else { return (ref, false, false) }
            let branch = mutable(original)
            branch.setChild(child.node, at: index)
            if child.underfull, branch.childCount > 1 {
                try rebalance(branch, around: index)
            }
            return (.branch(branch), true, branch.pageBytes < limits.minFill || branch.childCount < 2)
        }
    }

    /// Merges the underfull child `index` with a neighbour, or, when both together are too
    /// big for one page, redistributes their entries evenly.
    private func rebalance(_ parent: BranchNode, around index: Int) throws {
        let left = index > 0 ? index - 1 : index
        let right = left + 1
        let separatorIndex = left
        switch (try store.resolve(parent.child(at: left)), try store.resolve(parent.child(at: right))) {
        case (.leaf(let l), .leaf(let r)):
            let merged = mutable(l)
            merged.append(contentsOf: r)
            if merged.pageBytes <= limits.pageSize || merged.count < 2 {
                parent.setChild(.leaf(merged), at: left)
                parent.removeChild(at: right)
            } else {
                let newRight = merged.splitOff(from: merged.balancedSplitIndex(), owner: owner, limits: limits)
                // Set after the split, which changes its arrays (`SearchLines`).
                parent.setChild(.leaf(merged), at: left)
                parent.pageBytes -= BranchNode.keyCost(parent.keys[separatorIndex])
                parent.keys[separatorIndex] = newRight.key(at: 0)
                parent.pageBytes += BranchNode.keyCost(parent.keys[separatorIndex])
                parent.setChild(.leaf(newRight), at: right)
            }
        case (.branch(let l), .branch(let r)):
            let merged = mutable(l)
            merged.append(r, separator: parent.keys[separatorIndex])
            if merged.pageBytes <= limits.pageSize || merged.childCount < 4 {
                parent.setChild(.branch(merged), at: left)
                parent.removeChild(at: right)
            } else {
                let (separator, newRight) = merged.splitOff(owner: owner)
                parent.setChild(.branch(merged), at: left)
                parent.pageBytes -= BranchNode.keyCost(parent.keys[separatorIndex])
                parent.keys[separatorIndex] = separator
                parent.pageBytes += BranchNode.keyCost(separator)
                parent.setChild(.branch(newRight), at: right)
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
        // The root is held by the caller's handle for the call, so the walk starts from it
        // unretained (a retain and release of the root per lookup, and of the node it
        // resolved to, were 6% of an engine get's instructions; callgrind). A page the cache
        // hands out is held strongly while the walk is below it: the cache may drop it
        // meanwhile. The leaf found is returned retained: unretained, held by the root or a
        // page beside it, cost more than the retain (measured).
        guard let root else { return nil }
        var descent = descend(from: root.unretained, to: key)
        while true {
            switch descent {
            case .found(let location): return location
            case .absent: return nil
            case .stored(let address):
                let page = try store.node(at: address)
                descent = withExtendedLifetime(page) { descend(from: page.unretained, to: key) }
            }
        }
    }

    /// The entry of `key` in a tree with its write buffer: the buffer's newest write of it
    /// when it has one (a tombstone: absent), otherwise the tree's.
    @inline(__always)
    static func locate(store: PageStore, state: TreeState, key: UnsafeRawBufferPointer) throws -> Location? {
        if state.isBuffered { return try locateBuffered(store: store, state: state, key: key) }
        return try locate(store: store, root: state.root, key: key)
    }

    @inline(never)
    private static func locateBuffered(store: PageStore, state: TreeState, key: UnsafeRawBufferPointer) throws -> Location? {
        if let buffered = bufferedWrite(state: state, key: key) { return buffered }
        return try locate(store: store, root: state.root, key: key)
    }

    /// The newest write of `key` in the write buffer of `state` (`.some(nil)` for a
    /// tombstone: the key is deleted); nil when the buffer holds none and the tree decides.
    static func bufferedWrite(state: TreeState, key: UnsafeRawBufferPointer) -> Location?? {
        let hash = BloomFilter.hash(key)
        if let pending = state.pending, let i = pending.find(key, hash: hash) { return .some(pending.isDeleted(i) ? nil : (pending.entries, i)) }
        switch state.findCommitted(key, hash: hash) {
        case .entry(let location): return .some(location)
        case .deleted: return .some(nil)
        case .absent: return nil
        }
    }

    /// Where a walk through nodes in memory ended.
    private enum Descent {
        case found(Location)
        case absent
        /// At a child stored on disk: the walk goes on from its page.
        case stored(FrameAddress)
    }

    /// Walks from `top` through the nodes in memory below it, without reference counting:
    /// `top` is held by the caller for the call, and holds its descendants in memory;
    /// nothing changes a tree during a lookup (a snapshot's nodes never change, and a write
    /// transaction looks up on its own thread). A retain and a release per node visited were
    /// a sixth of an engine get's time at 1M records (perf), each an atomic operation on a
    /// line the walk had not touched yet.
    @inline(__always)
    private static func descend(from top: UnretainedNodeRef, to key: UnsafeRawBufferPointer) -> Descent {
        var next = top
        // Whether the parent asked for the node's search lines with the node (`SearchLines`).
        var linesAsked = false
        while true {
            switch next {
            case .branch(let branch):
                (next, linesAsked) = branch._withUnsafeGuaranteedRef {
                    if !linesAsked { $0.prefetchForSearch() }
                    return $0.prefetchedChild(for: key)
                }
            case .leaf(let leaf):
                return leaf._withUnsafeGuaranteedRef {
                    if !linesAsked { $0.prefetchForSearch() }
                    return search($0, for: key)
                }
            case .stored(let address): return .stored(address)
            }
        }
    }

    @inline(__always)
    private static func search(_ leaf: LeafNode, for key: UnsafeRawBufferPointer) -> Descent {
        let (index, found) = leaf.search(key)
        return found ? .found((leaf, index)) : .absent
    }

    /// Calls `body` with the value slot of `key`, or returns nil when it is absent.
    static func withValue<R>(store: PageStore, state: TreeState, key: UnsafeRawBufferPointer, _ body: (ValueSlot) throws -> R) throws -> R? {
        guard let location = try locate(store: store, state: state, key: key) else { return nil }
        return try location.leaf.withEntry(location.index) { _, value in try body(value) }
    }

    /// Lends the value at `location` to `body`: in place when the leaf holds it, otherwise
    /// from its value frame. `unchanging`: the tree is a snapshot's, which nothing changes.
    static func lend<R>(_ location: Location, from store: PageStore, unchanging: Bool, to body: (UnsafeRawBufferPointer) throws -> R) throws -> R {
        try lendEntry(location, from: store, unchanging: unchanging) { _, value in try body(value) }
    }

    /// Lends the key and the value at `location` to `body`, the value as `lend` does.
    static func lendEntry<R>(_ location: Location, from store: PageStore, unchanging: Bool,
                             to body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> R) throws -> R {
        func lend(_ key: UnsafeRawBufferPointer, _ slot: ValueSlot) throws -> R {
            switch slot {
            case .inline(let bytes): return try body(key, bytes)
            case .overflow: return try store.value(slot).withUnsafeBytes { try body(key, $0) }
            }
        }
        return unchanging
            ? try location.leaf.withUnchangingEntry(location.index, lend)
            : try location.leaf.withEntry(location.index, lend)
    }

    static func get(store: PageStore, state: TreeState, key: UnsafeRawBufferPointer) throws -> [UInt8]? {
        try withValue(store: store, state: state, key: key) { try store.value($0) }
    }
}
