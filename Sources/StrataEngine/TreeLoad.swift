import CPrefetch

/// A tree built in one pass from the writes of a transaction that found it empty: the
/// keys sorted once, the leaves filled to their pages one after another, the branches
/// built over them (`PendingWrites.buildsTree`).
///
/// Why: put one by one in the order an app gives them, the keys of a large first load land
/// all over a growing tree, and each put descends it and inserts into the middle of a leaf
/// that then splits half empty; at 10M records the descents miss the CPU cache at every
/// level (W1 insert.single-tx fell to 0.45× its 1M rate). Gathered as a write buffer
/// gathers them (a hash table over the entries in the order written, which also answers
/// the transaction's own reads), they are sorted at the end and laid out in key order, as a
/// compaction lays out a tree (`TreeBuilder`, whose branch levels this shares).
extension PendingWrites {
    /// The tree these writes make, its nodes `mutator`'s transaction's, and the number of
    /// keys it holds; the root is nil when no key holds a value (none written, or every one
    /// deleted again).
    ///
    /// Every entry is sorted, a key's writes in the order written (the sort is stable), and
    /// the build keeps the last write of each key, unless it is a delete: without a table
    /// (`isIndexed`) nothing else tells which write is current, and with one a load rarely
    /// wrote a key twice.
    func builtTree(mutator: TreeMutator) -> (root: NodeRef?, keys: Int) {
        assert(buildsTree, "only the writes of a transaction that found the tree empty are built into it")
        let limits = mutator.limits
        let order = allInKeyOrder()
        var leaves: [(firstKey: [UInt8], node: NodeRef)] = []
        var leaf = Self.emptyLeaf(owner: mutator.owner, limits: limits)
        var keys = 0
        order.withUnsafeBufferPointer { order in
            for n in order.indices {
                prefetch(ahead: n, in: order)
                let i = Int(order[n])
                guard !isDeleted(i), n + 1 == order.count || !hasSameKey(i, Int(order[n + 1])) else { continue }
                entries.withUnchangingEntry(i) { key, value in
                    if leaf.isFull(before: key, value, limits: limits) {
                        leaves.append((leaf.key(at: 0), .leaf(leaf)))
                        leaf = Self.emptyLeaf(owner: mutator.owner, limits: limits)
                    }
                    leaf.insert(at: leaf.count, key: key, value: value, limits: limits)
                }
                keys += 1
            }
        }
        if leaf.count > 0 { leaves.append((leaf.key(at: 0), .leaf(leaf))) }
        let root = TreeBuilder.levels(above: leaves, limits: limits) { group in
            .branch(BranchNode(owner: mutator.owner, keys: group.dropFirst().map(\.firstKey), children: group.map(\.node)))
        }
        return (root, keys)
    }

    /// Whether entries `i` and `j` are writes of one key.
    private func hasSameKey(_ i: Int, _ j: Int) -> Bool {
        entries.withUnchangingEntry(i) { a, _ in entries.withUnchangingEntry(j) { b, _ in a.count == b.count && compareBytes(a, b) == 0 } }
    }

    /// Starts loading what the build reads a few entries ahead in key order: the entry's
    /// start farther ahead, then its bytes, from a start asked for before. In key order the
    /// entries are read at random across everything the transaction wrote (a gigabyte at
    /// 10M W1 records), each read a miss the build otherwise waited for: a fifth of the
    /// transaction's time (perf).
    @inline(__always)
    private func prefetch(ahead n: Int, in order: UnsafeBufferPointer<Int32>) {
        guard let starts = entries.startsBase, let base = entries.bytes.baseAddress else { return }
        if n &+ 16 < order.count { strata_prefetch(starts + Int(order[n &+ 16]) &* 4) }
        if n &+ 8 < order.count {
            let start = Int(starts.load(fromByteOffset: Int(order[n &+ 8]) &* 4, as: UInt32.self))
            prefetchLines(from: base + start, count: min(128, entries.bytes.count &- start))
        }
    }

    /// A leaf with room for a page's entries, so that filling it never grows its storage.
    private static func emptyLeaf(owner: UInt64, limits: NodeLimits) -> LeafNode {
        var storage: [UInt8] = [LeafTag.pageKind]
        storage.reserveCapacity(LeafNode.room(after: 0, limits: limits))
        return LeafNode(owner: owner, storage: storage, starts: [], heads: KeyHeads(), pageBytes: 1)
    }
}
