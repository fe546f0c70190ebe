import Foundation

/// Writes the unwritten nodes of a snapshot's trees as page frames on a thread of its own,
/// beside the writer: the first of a background checkpoint's two steps
/// (`Database.BackgroundCheckpoints`).
///
/// The costly part of writing a page, encoding and compressing it, needs no place in the
/// file (`Frame.unsealed`), so it runs here with no lock held. Pages are placed in batches:
/// a batch takes the writer's gate, is sealed for the offsets at the log's end, written,
/// and lets go of the gate, so commits append their frames between batches (recovery
/// skips page frames as it replays the log). A branch is encoded once its children are
/// placed: each branch places the batch of its children, about a hundred pages.
///
/// The pass records each node it wrote by identity (`written`); the checkpoint proper,
/// with the gate held, writes the nodes that commits changed meanwhile and refers to the
/// others by those addresses (`NodeWriter.known`). Its frame names the latest commit and
/// lies after every log frame, as any checkpoint's does, so the format is unchanged.
struct CheckpointPass {
    /// Where the pass's frames go, given by the database: `place` seals and writes a batch
    /// at the log's end with the gate held and returns where it starts, or throws when the
    /// pass must stop (the handle closed, was poisoned or compacted, or a checkpoint was
    /// asked for).
    let place: (_ frames: inout [UInt8], _ starts: [Int]) throws -> UInt64
    /// Syncs the file beside the commits (`GroupCommit.syncBesideCommits`).
    let sync: () throws -> Void
    let store: PageStore
    /// Nodes written, by identity: what the checkpoint proper refers to.
    private(set) var written: [ObjectIdentifier: NodeWriter.Written] = [:]
    /// Pages written so far, and their bytes.
    private(set) var pages = 0
    private(set) var bytes: UInt64 = 0
    /// Bytes placed since the pass last synced.
    private var unsynced = 0
    /// The most the pass leaves unsynced. A commit's fdatasync flushes the whole file, so
    /// without this a commit could wait for every page the pass had written (hundreds of
    /// megabytes at 10M records). Measured at 3M, the slowest commit across a pass was
    /// 29–31 ms without it and 18–40 ms with it, every 1 or 4 MiB: this host's disk drifts
    /// more than that; the bound is kept for the larger trees.
    static let syncEvery = 4 << 20

    /// The batch being gathered: frames waiting for a place, end to end.
    private var frames: [UInt8] = []
    /// Where each gathered frame starts in `frames`.
    private var starts: [Int] = []
    private var pending: [Pending] = []

    private enum Pending {
        case leaf(LeafNode, payload: [UInt8])
        case branch(BranchNode, children: [NodeWriter.Written])
    }

    /// A leaf that still holds a value over the inline limit: its value would have to be
    /// written while the leaf is encoded, at an offset the pass does not know yet. Files of
    /// format 2 on never have one (commits write such values to value frames).
    struct LeafNeedsValueFrame: Error {}

    init(store: PageStore, place: @escaping (_ frames: inout [UInt8], _ starts: [Int]) throws -> UInt64,
         sync: @escaping () throws -> Void) {
        self.store = store
        self.place = place
        self.sync = sync
    }

    /// Writes every node of `snapshot`'s trees that has no address yet.
    mutating func write(_ snapshot: Snapshot) throws {
        for name in snapshot.trees.keys.sorted() {
            guard let root = snapshot.trees[name]?.root, root.address == nil else { continue }
            try gather(root)
            try placeBatch()
        }
    }

    /// Gathers `ref`'s unwritten nodes into the batch, children before parents; a branch
    /// places the batch first, so that its children have their addresses.
    private mutating func gather(_ ref: NodeRef) throws {
        guard ref.address == nil else { return }
        switch ref {
        case .stored:
            return
        case .leaf(let leaf):
            let payload = try PageCodec.encodeLeaf(leaf, limits: store.limits) { _ in throw LeafNeedsValueFrame() }
            enqueue(payload, as: .leaf(leaf, payload: payload))
        case .branch(let branch):
            let children = branch.childReferences
            for child in children { try gather(child) }
            try placeBatch()
            let written = children.map(resolved)
            enqueue(PageCodec.encodeBranch(keys: branch.keys, children: written.map(\.address)), as: .branch(branch, children: written))
        }
    }

    private mutating func enqueue(_ payload: [UInt8], as node: Pending) {
        starts.append(frames.count)
        frames += payload.withUnsafeBytes { Frame.unsealed(.page, payload: $0, compress: true) }
        pending.append(node)
    }

    /// Places the gathered frames and records what the tree keeps of each node.
    private mutating func placeBatch() throws {
        guard !pending.isEmpty else { return }
        let base = try place(&frames, starts)
        for (index, node) in pending.enumerated() {
            let end = index + 1 < starts.count ? starts[index + 1] : frames.count
            let address = FrameAddress(offset: base + UInt64(starts[index]), length: UInt32(end - starts[index]))
            switch node {
            case .leaf(let leaf, let payload):
                written[ObjectIdentifier(leaf)] = try NodeWriter.written(leaf, payload: payload, at: address, store: store)
            case .branch(let branch, let children):
                written[ObjectIdentifier(branch)] = NodeWriter.written(branch, children: children, at: address)
            }
        }
        pages += pending.count
        bytes += UInt64(frames.count)
        unsynced += frames.count
        if unsynced >= Self.syncEvery {
            try sync()
            unsynced = 0
        }
        frames.removeAll(keepingCapacity: true)
        starts.removeAll(keepingCapacity: true)
        pending.removeAll(keepingCapacity: true)
    }

    /// A child as the parent's page names it: by its address, or as the pass wrote it.
    private func resolved(_ ref: NodeRef) -> NodeWriter.Written {
        if let address = ref.address { return NodeWriter.Written(address: address, kept: ref) }
        guard let identity = ref.identity, let written = written[identity] else {
            preconditionFailure("a branch is encoded only after each unwritten child was placed")
        }
        return written
    }
}
