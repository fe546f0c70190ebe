/// Builds a tree bottom-up from entries given in key order, with full pages. Used by
/// compaction.
struct TreeBuilder {
    private var writer: NodeWriter
    private let limits: NodeLimits
    private var leaf = LeafNode(owner: 0)
    private var leaves: [(firstKey: [UInt8], node: NodeWriter.Written)] = []
    /// Where the file was last synced up to.
    private var synced: UInt64

    /// The copy is synced every this many bytes, so its writes reach the disk a little at a
    /// time: one sync of the whole file at the end held up the commits of writers running
    /// beside the compaction (their fsyncs waited behind it).
    static let syncInterval: UInt64 = 1 << 20

    init(writer: NodeWriter) {
        self.writer = writer
        self.limits = writer.store.limits
        self.synced = writer.appender.position
    }

    var appender: FrameAppender { writer.appender }

    mutating func add(key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) throws {
        if leaf.isFull(before: key, .inline(value), limits: limits) { try flushLeaf() }
        leaf.insert(at: leaf.count, key: key, value: .inline(value), limits: limits)
    }

    private mutating func flushLeaf() throws {
        leaves.append((leaf.key(at: 0), try writer.write(.leaf(leaf))))
        leaf = LeafNode(owner: 0)
        if writer.appender.position - synced >= Self.syncInterval {
            try writer.appender.flush()
            try writer.store.file.sync()
            synced = writer.appender.position
        }
    }

    /// Writes what is pending and the branch levels; returns the root (nil when empty).
    mutating func finish() throws -> NodeWriter.Written? {
        if leaf.count > 0 { try flushLeaf() }
        return try Self.levels(above: leaves, limits: limits) { group in
            let branch = BranchNode(owner: 0, keys: group.dropFirst().map(\.firstKey), children: group.map(\.node.kept))
            return try writer.write(.branch(branch))
        }
    }

    /// The root of the branch levels built over `level`, nodes in key order each with its
    /// first key (`level` itself when it holds one node; nil when it holds none). Each
    /// branch takes as many children as its page holds (at least two, and the last never
    /// one alone); `branch` makes one of a group.
    static func levels<Node>(above level: [(firstKey: [UInt8], node: Node)], limits: NodeLimits,
                             branch: ([(firstKey: [UInt8], node: Node)]) throws -> Node) rethrows -> Node? {
        var level = level
        while level.count > 1 {
            var next: [(firstKey: [UInt8], node: Node)] = []
            var groups: [[(firstKey: [UInt8], node: Node)]] = [[]]
            var bytes = 0
            for child in level {
                let cost = BranchNode.keyCost(child.firstKey) + BranchNode.childReferenceSize
                if groups[groups.count - 1].count >= 2, bytes + cost > limits.pageSize {
                    groups.append([])
                    bytes = 0
                }
                groups[groups.count - 1].append(child)
                bytes += cost
            }
            if groups.count > 1, groups[groups.count - 1].count == 1 {
                groups[groups.count - 2].append(groups.removeLast()[0])
            }
            for group in groups { next.append((group[0].firstKey, try branch(group))) }
            level = next
        }
        return level.first?.node
    }
}
