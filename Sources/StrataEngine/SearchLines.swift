/// Where a node's search reads first, apart from the node's own fields: its keys' heads
/// and, in a leaf, its entries' starts. A branch keeps these beside each child reference
/// (`BranchChildren`), so that a lookup choosing a child asks for the child's fields and
/// its search lines at once.
///
/// Why: in a tree larger than the CPU's caches, a lookup's way through a node was three
/// misses one after another — the node's fields, which say where its heads are, then the
/// heads, then the child reference or the entry the search ends on. With the heads'
/// address known from the parent, the first two overlap: one wait less at every level
/// below the cached top of the tree.
///
/// Only ever a prefetch hint: lines taken from a node that later changed in place (a put
/// into a leaf the transaction owns moves its arrays when they grow) point at memory the
/// node no longer uses, and a prefetch of them costs a wasted load, never a fault or a
/// wrong answer. The parent takes the lines again at each change it is told of
/// (`BranchChildren.replace`, `refreshLines`), and the nodes of a committed tree do not
/// change.
struct SearchLines: Equatable {
    /// The heads' elements; nil for a page on disk.
    private var heads: UnsafeRawPointer?
    /// A leaf's entry starts; nil for a branch.
    private var starts: UnsafeRawPointer?
    /// How many heads (and starts) there are.
    private var count: UInt32 = 0

    /// The search lines of the node `reference` names (none for a page on disk).
    init(of reference: NodeRef) {
        switch reference {
        case .leaf(let leaf):
            let probe = leaf.heads.probe
            (heads, starts, count) = (probe.elements, leaf.startsBase, UInt32(truncatingIfNeeded: probe.count))
        case .branch(let branch):
            let probe = branch.heads.probe
            (heads, count) = (probe.elements, UInt32(truncatingIfNeeded: probe.count))
        case .stored:
            break
        }
    }

    /// Starts loading the lines (`prefetchLines`); false when there are none to ask for,
    /// and the node's own search must ask.
    @inline(__always)
    func prefetch() -> Bool {
        guard heads != nil else { return false }
        let count = Int(count)
        prefetchLines(from: heads, count: count &* 8)
        prefetchLines(from: starts, count: count &* 4)
        return true
    }
}

extension NodeRef {
    /// Where the search of the node this names reads first (`SearchLines`).
    var searchLines: SearchLines { SearchLines(of: self) }
}
