/// Log replay that applies the puts and deletes of many commits in key order rather than in
/// the order they were committed.
///
/// Why: opening a file replays every commit since the last checkpoint (up to the
/// checkpoint interval: `checkpointLogBytes` of log, a million W1 records at the default,
/// up to `checkpointLogBytesLimit` on a large store), and an app's keys
/// arrive in any order. Applied as committed, each put descends to a leaf the last one did
/// not touch, missing the CPU cache at every level (perf of an open after a crash at 1M: the
/// time was the tree's own put path, leaf searches and branch descents). Applied in key
/// order, consecutive puts walk the same path and fill the same leaf.
///
/// The result is the same tree: operations on different keys commute, and those on one key
/// keep their commit order (the sort's last criterion). Creating or dropping a tree does not
/// commute with the operations around it, so it applies the operations gathered before it
/// first; so does a checkpoint frame and the end of a replay. A put or delete naming a tree
/// that does not exist is refused when it is read, as before, so the error names its frame.
struct KeyOrderedReplay {
    /// One gathered put or delete. Its key and value point into a payload in `payloads`.
    private struct Pending {
        /// `trees`' index of the tree it names.
        var tree: Int
        /// The key's first eight bytes (`keyHead`): most comparisons end here.
        var head: UInt64
        var operation: LogOperation
    }

    /// Gathered operations are applied once this many wait: it bounds the memory a long
    /// replay holds (the payloads, ~80 bytes per W1 record, and ~64 bytes per operation),
    /// and a run this long already puts neighbouring keys next to each other.
    static let batchLimit = 1 << 18

    /// The log payloads the gathered operations point into, held unchanged until applied.
    private var payloads: [[UInt8]] = []
    private var pending: [Pending] = []
    /// The trees named by the gathered operations; the last one is found without hashing.
    private var trees: [String] = []
    private var lastTree: (name: String, index: Int)?

    /// Replays one commit's payload: gathers its puts and deletes, and applies a tree's
    /// creation or removal at once, after what was gathered before it.
    /// - Throws: What `LogBatchReader` and `TreeChanges` throw.
    mutating func replay(_ payload: [UInt8], into changes: inout TreeChanges, context: CorruptionContext) throws -> LogBatchHeader {
        let header = try LogBatchReader.read(payload, context: context) { operation in
            switch operation {
            case .put(let tree, let key, _), .putStored(let tree, let key, _, _), .delete(let tree, let key):
                pending.append(Pending(tree: try index(of: tree, in: changes), head: keyHead(key), operation: operation))
            case .createTree, .dropTree:
                try apply(to: &changes)
                try changes.apply(operation)
                lastTree = nil
            }
        }
        // Held from here on (the same buffer the reader lent out, so the keys gathered stay
        // valid); not before the read, where a tree's creation applies and forgets
        // everything gathered so far, payloads included.
        payloads.append(payload)
        if pending.count >= Self.batchLimit { try apply(to: &changes) }
        return header
    }

    /// Applies every gathered operation in key order, tree by tree, and forgets them.
    /// - Throws: What `TreeChanges` throws (a page that cannot be read, say).
    mutating func apply(to changes: inout TreeChanges) throws {
        defer {
            pending.removeAll(keepingCapacity: true)
            payloads.removeAll(keepingCapacity: true)
        }
        guard !pending.isEmpty else { return }
        // Sorted as 16-byte records that hold what most comparisons need: sorting indices
        // into `pending` (64 bytes an operation) missed the CPU cache at nearly every
        // comparison, and cost more than the replay it ordered. By tree and head in
        // linear time (`HeadSort`); ties by the keys' bytes, then gathering order.
        var order = pending.indices.map { SortKey(tree: UInt32(pending[$0].tree), index: UInt32($0), head: pending[$0].head) }
        pending.withUnsafeBufferPointer { pending in
            HeadSort.sort(&order, group: \.tree, head: \.head) { a, b in
                let order = compareBytes(pending[Int(a.index)].operation.key, pending[Int(b.index)].operation.key)
                return order != 0 ? order < 0 : a.index < b.index
            }
        }
        try pending.withUnsafeBufferPointer { pending in
            try order.withUnsafeBufferPointer { order in
                for i in order.indices {
                    prefetchAhead(of: i, in: order, pending: pending)
                    try changes.apply(pending[Int(order[i].index)].operation)
                }
            }
        }
    }

    /// How far ahead of the operation being applied its successors' gathered entries, and
    /// their keys, are asked for.
    private static let entryDistance = 16
    private static let keyDistance = 8

    /// Starts loading what the operations `entryDistance` and `keyDistance` places after
    /// `i` in `order` will read: their gathered entries, then their keys (in the payloads).
    ///
    /// Why: in key order, the gathered entries are read at random, and each read missed the
    /// CPU cache with the whole put depending on it: 18% of an open after a crash at 10M
    /// records was that one load, and most of the branch descents' 17% was the key it
    /// compares (perf, 1.76M operations replayed). Asked for ahead, they arrive meanwhile.
    @inline(__always)
    private func prefetchAhead(of i: Int, in order: UnsafeBufferPointer<SortKey>, pending: UnsafeBufferPointer<Pending>) {
        if i + Self.entryDistance < order.count {
            prefetchLines(from: pending.baseAddress! + Int(order[i + Self.entryDistance].index), count: MemoryLayout<Pending>.stride)
        }
        if i + Self.keyDistance < order.count {
            let key = pending[Int(order[i + Self.keyDistance].index)].operation.key
            prefetchLines(from: key.baseAddress, count: key.count)
        }
    }

    /// An operation's place in the order: by tree, then key (its head first), then the order
    /// it was gathered in.
    private struct SortKey {
        var tree: UInt32
        var index: UInt32
        var head: UInt64
    }

    /// `trees`' index of `tree`, which must exist in `changes` (checked when it was not the
    /// last tree named: only creating or dropping a tree changes the answer, and both forget
    /// the last).
    /// - Throws: `StrataError.treeNotFound`.
    private mutating func index(of tree: String, in changes: TreeChanges) throws -> Int {
        if let last = lastTree, last.name == tree { return last.index }
        try changes.requireTree(tree)
        let index = trees.firstIndex(of: tree) ?? { trees.append(tree); return trees.count - 1 }()
        lastTree = (tree, index)
        return index
    }
}

extension LogOperation {
    /// The key a put or delete names (empty for a tree's creation or removal).
    var key: UnsafeRawBufferPointer {
        switch self {
        case .put(_, let key, _), .putStored(_, let key, _, _), .delete(_, let key): key
        case .createTree, .dropTree: UnsafeRawBufferPointer(start: nil, count: 0)
        }
    }
}
