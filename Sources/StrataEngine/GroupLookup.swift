/// Lookups of many keys in one tree, walked down the tree together (`TreeHandle.withValues`).
///
/// Why: in a tree larger than the CPU's caches a lookup waits for memory at each node on
/// its way, one miss after another (the node, its heads, the child reference, the next
/// node), and a single lookup cannot ask for the next line before the one it waits for has
/// told it where to go. Keys looked up together can: each walk takes one step — reading
/// lines asked for in its previous step, then asking for the lines its next step reads —
/// and passes to the next key, so by the time a walk comes back its lines have arrived
/// while the other walks waited for theirs. The misses of a group overlap instead of
/// following one another. (The technique databases call group prefetching, or what
/// RocksDB's MultiGet does for its blocks.)
extension TreeReader {
    /// How many walks go down together: enough for the first walk's lines to arrive before
    /// its turn comes round again (a step is ~20–60 instructions; a miss to memory ~100 ns).
    /// W1 at 1M, get.batched: 2.05M/2.01M lookups/s with 8, 1.98M/1.95M with 16,
    /// 1.91M/1.99M with 32 (one lookup each: 1.1–1.2M).
    static let groupWidth = 8

    /// Where one walk is, between its steps.
    private struct GroupWalk {
        /// The node the walk is at.
        var node: UnretainedNodeRef
        /// What its next step does there.
        var step: Step
        /// The page the walk is below, held while it is (the cache may drop it meanwhile).
        var page: Node?

        enum Step {
            /// The node's fields were asked for: next, ask for what its search reads.
            case arrived
            /// The node's search lines were asked for: next, search it.
            case searching
            /// The branch's child `index` was chosen and its reference asked for: next,
            /// move to that child.
            case chosen(Int)
            /// The walk has ended.
            case done
        }
    }

    /// Finds the entries of `count` keys in the tree at `root` together (at most
    /// `groupWidth`), `key(i)` being the `i`-th, and stores where each is in `found[i]`
    /// (nil when the tree lacks it). The tree's write buffer is not consulted: the caller
    /// has asked it first.
    static func locateGroup(store: PageStore, root: NodeRef, count: Int, key: (Int) -> UnsafeRawBufferPointer,
                            into found: UnsafeMutableBufferPointer<Location?>) throws {
        precondition(count <= groupWidth && count <= found.count, "a group holds at most groupWidth keys")
        // The root is held by the caller's handle for the call, as in `locate`.
        try withUnsafeTemporaryAllocation(of: GroupWalk.self, capacity: count) { walks in
            _ = walks.initialize(from: repeatElement(GroupWalk(node: root.unretained, step: .arrived, page: nil), count: count))
            defer { walks.deinitialize() }
            var walking = count
            while walking > 0 {
                for i in 0 ..< count {
                    if case .done = walks[i].step { continue }
                    if try step(&walks[i], key: key(i), store: store, found: &found[i]) { walking -= 1 }
                }
            }
        }
    }

    /// Takes one step of `walk` towards `key`'s entry. Returns true when the walk has
    /// ended, its answer in `found`.
    @inline(__always)
    private static func step(_ walk: inout GroupWalk, key: UnsafeRawBufferPointer, store: PageStore,
                             found: inout Location?) throws -> Bool {
        switch walk.node {
        case .stored(let address):
            // A page not in memory is read and decoded here, as a single lookup does.
            let page = try store.node(at: address)
            walk.node = page.unretained
            walk.page = page
            walk.step = .arrived
            return false
        case .branch(let unmanaged):
            return unmanaged._withUnsafeGuaranteedRef { branch in
                switch walk.step {
                case .arrived:
                    branch.prefetchForSearch()
                    walk.step = .searching
                case .searching:
                    let index = branch.childIndex(for: key)
                    branch.prefetchChild(at: index)
                    walk.step = .chosen(index)
                case .chosen(let index):
                    // With the child's search lines asked for beside it, its search is next.
                    let (child, linesAsked) = branch.prefetchedChild(at: index)
                    walk.node = child
                    walk.step = linesAsked ? .searching : .arrived
                case .done:
                    break
                }
                return false
            }
        case .leaf(let unmanaged):
            switch walk.step {
            case .arrived:
                unmanaged._withUnsafeGuaranteedRef { $0.prefetchForSearch() }
                walk.step = .searching
                return false
            default:
                let leaf = unmanaged.takeUnretainedValue()
                let (index, isThere) = leaf.search(key)
                found = isThere ? (leaf, index) : nil
                walk.step = .done
                walk.page = nil
                return true
            }
        }
    }

    /// Looks up every key of `keys` in the tree of `state`, its write buffer first, and
    /// lends each value to `body` with the key's position in `keys`, in that order (nil for
    /// a key absent). `unchanging`: the tree is a snapshot's, which nothing changes.
    ///
    /// A write transaction's tree is looked up one key at a time, each found as the handle
    /// sees it at its turn: its entries may move with any write, and a group would hold
    /// locations found before `body` ran. (A handle of a write transaction is good only
    /// until the transaction's next write; `TreeReading.withValues(_:in:_:)` finds the tree
    /// afresh for each key, so that its `body` may write.)
    static func withValues(store: PageStore, state: TreeState, unchanging: Bool, keys: KeyBatch,
                           _ body: (Int, UnsafeRawBufferPointer?) throws -> Void) throws {
        guard unchanging else {
            return try keys.withKeys { key in
                for i in 0 ..< keys.count {
                    try lend(try locate(store: store, state: state, key: key(i)), as: i, from: store, unchanging: false, to: body)
                }
            }
        }
        try keys.withKeys { key in
            try withLocations(groupWidth) { answers in
                try withLocations(groupWidth) { inTree in
                    // Positions in `keys` of the keys the buffer left to the tree.
                    var walking: [Int] = []
                    walking.reserveCapacity(groupWidth)
                    for start in stride(from: 0, to: keys.count, by: groupWidth) {
                        let group = start ..< min(start + groupWidth, keys.count)
                        walking.removeAll(keepingCapacity: true)
                        for i in group {
                            if state.isBuffered, let buffered = bufferedWrite(state: state, key: key(i)) {
                                answers[i - start] = buffered
                            } else {
                                walking.append(i)
                            }
                        }
                        if let root = state.root, !walking.isEmpty {
                            try locateGroup(store: store, root: root, count: walking.count, key: { key(walking[$0]) }, into: inTree)
                            for (w, i) in walking.enumerated() {
                                answers[i - start] = inTree[w]
                                inTree[w] = nil
                            }
                        }
                        for i in group {
                            let location = answers[i - start]
                            answers[i - start] = nil
                            try lend(location, as: i, from: store, unchanging: true, to: body)
                        }
                    }
                }
            }
        }
    }

    /// Lends the value at `location` to `body` as key `index`'s, or nil when there is none.
    @inline(__always)
    private static func lend(_ location: Location?, as index: Int, from store: PageStore, unchanging: Bool,
                             to body: (Int, UnsafeRawBufferPointer?) throws -> Void) throws {
        guard let location else { return try body(index, nil) }
        try lend(location, from: store, unchanging: unchanging) { try body(index, $0) }
    }

    /// Runs `body` with `count` locations, all nil, on the stack; whatever `body` leaves in
    /// them is released after it.
    private static func withLocations<R>(_ count: Int, _ body: (UnsafeMutableBufferPointer<Location?>) throws -> R) rethrows -> R {
        try withUnsafeTemporaryAllocation(of: Location?.self, capacity: count) { locations in
            _ = locations.initialize(from: repeatElement(nil, count: count))
            defer { locations.deinitialize() }
            return try body(locations)
        }
    }
}
