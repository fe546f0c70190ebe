/// Appends frames at the end of a file, buffering them into large writes. Used by
/// checkpoints and compaction, which write many frames at once.
struct FrameAppender {
    let file: any StorageFile
    let salt: UInt64
    /// Where the next frame goes.
    private(set) var position: UInt64
    /// The offset known synced while these frames are written (format 3; `Frame.encode`);
    /// nil: everything before them is.
    var durableUpTo: UInt64?
    private var pending: [UInt8] = []
    private static let flushThreshold = 4 << 20

    init(file: any StorageFile, salt: UInt64, position: UInt64, durableUpTo: UInt64? = nil) {
        self.file = file
        self.salt = salt
        self.position = position
        self.durableUpTo = durableUpTo
    }

    mutating func append(_ type: FrameType, payload: UnsafeRawBufferPointer, compress: Bool = true) throws -> FrameAddress {
        let frame = Frame.encode(type, payload: payload, offset: position, salt: salt, compress: compress, durableUpTo: durableUpTo)
        let address = FrameAddress(offset: position, length: UInt32(frame.count))
        pending.append(contentsOf: frame)
        position += UInt64(frame.count)
        if pending.count >= Self.flushThreshold { try flush() }
        return address
    }

    mutating func append(_ type: FrameType, payload: [UInt8], compress: Bool = true) throws -> FrameAddress {
        try payload.withUnsafeBytes { try append(type, payload: $0, compress: compress) }
    }

    /// Writes everything buffered.
    mutating func flush() throws {
        guard !pending.isEmpty else { return }
        try file.write(pending, at: position - UInt64(pending.count))
        pending.removeAll(keepingCapacity: true)
    }
}

/// Writes the in-memory nodes of a tree as page frames, children before parents. Nodes
/// already on disk are referenced, not rewritten. Written nodes and out-of-line values go
/// into `store`'s caches under their new addresses.
struct NodeWriter {
    let store: PageStore
    var appender: FrameAppender

    /// A node as written: its address, and the reference the tree keeps to it from now on.
    /// A branch stays in memory (`BranchNode.storedAt`): the branches are about a
    /// hundredth of a tree. A leaf stays in memory too while the page cache's share for
    /// kept leaves lasts (`LeafNode.kept(at:in:)`), and is kept by its address past it
    /// (the page cache then holds it within its budget). A lookup through nodes kept in
    /// memory asks the cache for nothing.
    struct Written {
        let address: FrameAddress
        let kept: NodeRef
    }

    /// Nodes a checkpoint pass wrote beside the writer (`CheckpointPass`), by identity:
    /// referred to by the addresses it gave them, not written again. A node is never
    /// changed once a snapshot can see it, and the pass's snapshot keeps every node here
    /// alive, so an identity found here is the node the pass wrote.
    var known: [ObjectIdentifier: Written] = [:]
    /// Pages written so far.
    private(set) var pages = 0

    mutating func write(_ ref: NodeRef) throws -> Written {
        // A page not in memory, or a node kept in memory as written: referred to, not rewritten.
        if let address = ref.address { return Written(address: address, kept: ref) }
        if !known.isEmpty, let identity = ref.identity, let written = known[identity] { return written }
        switch ref {
        case .stored:
            preconditionFailure("a stored node has an address")
        case .leaf(let leaf):
            // The closure appends through `self`: copying the appender would copy its
            // pending buffer (megabytes) on the first append, once per page.
            let payload = try PageCodec.encodeLeaf(leaf, limits: store.limits) { value in
                let address = try self.appender.append(.value, payload: value)
                let copy = Array(value)
                self.store.values.insert(copy, at: address.offset, cost: PageStore.cost(ofValue: copy))
                return address
            }
            let address = try appender.append(.page, payload: payload)
            pages += 1
            return try Self.written(leaf, payload: payload, at: address, store: store)
        case .branch(let branch):
            let children = try branch.childReferences.map { try write($0) }
            let address = try appender.append(.page, payload: PageCodec.encodeBranch(keys: branch.keys, children: children.map(\.address)))
            pages += 1
            return Self.written(branch, children: children, at: address)
        }
    }

    /// What the tree keeps of `leaf`, written at `address` as `payload`: the leaf itself,
    /// kept in memory while the kept leaves' share lasts, else its address, with the page
    /// in the cache.
    static func written(_ leaf: LeafNode, payload: [UInt8], at address: FrameAddress, store: PageStore) throws -> Written {
        // The leaf itself when the page holds its bytes as they are; else the page decoded,
        // packed in key order as a scan reads best (`LeafNode`).
        let written = leaf.isPacked && payload.count == leaf.storage.count
            ? leaf
            : try PageCodec.decodeLeaf(payload, address: address, limits: store.limits, context: store.context(address.offset, "page"))
        if let kept = written.kept(at: address, in: store.keptLeaves) { return Written(address: address, kept: .leaf(kept)) }
        store.cache.insert(.leaf(written), at: address.offset, cost: PageStore.cost(of: .leaf(written)))
        return Written(address: address, kept: .stored(address))
    }

    /// What the tree keeps of `branch`, written at `address` over `children`: a branch
    /// kept in memory, pointing at what it keeps of them.
    static func written(_ branch: BranchNode, children: [Written], at address: FrameAddress) -> Written {
        Written(address: address, kept: .branch(BranchNode(owner: 0, keys: branch.keys, children: children.map(\.kept), storedAt: address)))
    }
}
