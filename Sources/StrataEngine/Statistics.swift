/// Counters that cost nothing to read. For where the bytes go, see `SpaceReport`.
public struct Statistics: Sendable, Equatable {
    /// One tree's shape and bytes.
    public struct Tree: Sendable, Equatable {
        /// The tree's name.
        public var name: String
        /// Its entry count.
        public var entryCount: Int
        /// Of those writes, how many wait in the tree's write buffer to be merged into it
        /// (puts and deletes; `Database.Options.writeBufferEntries`), in how many sorted runs.
        public var bufferedWrites: Int = 0
        /// The sorted runs the buffered writes are in, the buffer's tail (small commits'
        /// writes as they were written) counted as one: a lookup searches each.
        public var bufferedRuns: Int = 0
    }

    /// The file.
    public var path: String
    /// Its size in bytes.
    public var fileSize: UInt64
    /// Its page size.
    public var pageSize: Int
    /// The sequence number of the latest commit.
    public var commitSequence: UInt64
    /// The commit the latest checkpoint covers.
    public var checkpointSequence: UInt64
    /// Log bytes written since the latest checkpoint: what the next open replays.
    public var logBytesSinceCheckpoint: UInt64
    /// The log bytes at which the next automatic checkpoint falls due: as many as the
    /// store's live data, within `Options.checkpointLogBytes` and
    /// `Options.checkpointLogBytesLimit`, measured when the last checkpoint was written.
    public var checkpointDueAtLogBytes: UInt64
    /// Bytes read from disk while opening: header, slots, checkpoint and log tail only.
    public var bytesReadAtOpen: UInt64
    /// Commits replayed from the log tail while opening.
    public var commitsReplayedAtOpen: Int
    /// Bytes of an interrupted write that opening dropped from the end of the file.
    public var tornBytesDroppedAtOpen: UInt64
    /// Page lookups the decoded-page cache answered.
    public var cacheHits: UInt64
    /// Page lookups that read, verified and decoded a frame.
    public var cacheMisses: UInt64
    /// Bytes of decoded pages held.
    public var cacheBytes: Int
    /// Pages held.
    public var cachedPages: Int
    /// Bytes of leaves the trees keep in memory as a checkpoint or compaction wrote them,
    /// which lookups reach without the cache. They share the cache's budget
    /// (`Database.Options.cacheSize`), taking at most three quarters of it.
    public var keptLeafBytes: Int
    /// Bytes of out-of-line values held (their own budget, a quarter of the pages': see
    /// `Database.Options.cacheSize`).
    public var cachedValueBytes: Int
    /// Out-of-line values held.
    public var cachedValues: Int
    /// Where a salvaging open (`RecoveryMode.truncateAtFirstBadFrame`) cut the file:
    /// damage there and the valid commits after it were dropped. Nil when nothing was.
    public var salvagedFromOffset: UInt64?
    /// Automatic checkpoints that failed after their commit had succeeded (each poisons
    /// the handle and is logged).
    public var failedAutomaticCheckpoints: UInt64
    /// True after a failed write or sync: the handle refuses writes until reopened.
    public var isPoisoned: Bool
    /// Commits this handle made with `.full` durability.
    public var durableCommits: UInt64
    /// The fdatasyncs that made them durable (checkpoints' own syncs not counted): fewer than
    /// `durableCommits` when threads committing at once shared syncs (group commit).
    public var commitSyncs: UInt64
    /// Compactions this handle ran in the background (`Options.autoCompaction`).
    public var backgroundCompactions: UInt64
    /// Background compactions that failed (each logged; the file was left as it was).
    public var failedBackgroundCompactions: UInt64
    /// The latest background compaction: sizes before and after, and the writers' pause.
    public var lastBackgroundCompaction: CompactionResult?
    /// The longest hold of any background compaction of this handle, with what its time
    /// went on (carrying commits, syncing, renaming); nil before the first.
    public var longestBackgroundHold: CompactionHold?
    /// The longest time any background compaction of this handle held writers back at once
    /// (`longestBackgroundHold`'s, `CompactionResult.writerPause`); zero before the first.
    public var longestBackgroundWriterPause: Duration { longestBackgroundHold?.duration ?? .zero }
    /// Automatic checkpoints this handle wrote in the background
    /// (`Options.backgroundCheckpoints`).
    public var backgroundCheckpoints: UInt64 = 0
    /// Background checkpoint passes that stopped before their checkpoint: one holding the
    /// writer came first (an explicit `checkpoint()`, `close()`, or a log twice the limit),
    /// a compaction replaced the file, or a write failed. Their pages are dead bytes.
    public var abandonedBackgroundCheckpoints: UInt64 = 0
    /// The longest a background checkpoint held the writer, for its final step: the nodes
    /// commits changed during its pass, the syncs, the checkpoint frame and slot. Zero
    /// before the first.
    public var longestBackgroundCheckpointPause: Duration = .zero
    /// Write buffer merges this handle made beside the writer
    /// (`Options.mergesWriteBufferInBackground`), a background checkpoint's and those
    /// started once commits stopped (`Options.writeBufferIdleMerge`) included.
    public var writeBufferMerges: UInt64 = 0
    /// Merges beside the writer that failed (a damaged page): the writer merged those
    /// buffers itself, and reported the damage.
    public var failedWriteBufferMerges: UInt64 = 0
    /// Merges of a write buffer's runs into one (its size-tiered merging) this handle made
    /// beside the writer, rather than at commit.
    public var writeBufferRunMerges: UInt64 = 0
    /// Every tree, with its entry count.
    public var trees: [Tree]
}

/// Where the bytes of the file go: per tree shape and size, and live versus dead bytes.
public struct SpaceReport: Sendable, Equatable {
    /// A tree and its entry count.
    public struct Tree: Sendable, Equatable {
        /// The tree's name.
        public var name: String
        /// Its entry count.
        public var entryCount: Int
        /// Levels from the root to the leaves (0 for an empty tree).
        public var depth: Int
        /// Leaf pages.
        public var leafPages: Int
        /// Branch pages.
        public var branchPages: Int
        /// Nodes changed since the last checkpoint, held in memory.
        public var unwrittenNodes: Int
        /// Bytes of the tree's page frames on disk (after compression, with headers).
        public var storedBytes: UInt64
        /// Bytes of the same pages uncompressed.
        public var rawBytes: UInt64
        /// Values stored out of line (too large for a leaf).
        public var overflowValues: Int
        /// Their bytes on disk.
        public var overflowStoredBytes: UInt64
        /// Their bytes uncompressed.
        public var overflowRawBytes: UInt64
        /// Encoded page bytes divided by pages × page size.
        public var fillFactor: Double
        /// Bytes of this tree's superseded pages and out-of-line values, and its share of
        /// checkpointed log frames: what compaction reclaims from it.
        public var deadBytes: UInt64 = 0
    }

    /// The file's size.
    public var fileSize: UInt64
    /// Bytes that recovery needs: header, latest checkpoint and what it references, log tail.
    public var liveBytes: UInt64
    /// Zero bytes after the last frame, preallocated for the log; a closed file has none.
    public var preallocatedBytes: UInt64 = 0
    /// Superseded pages and checkpointed log: what `compact()` gives back.
    public var deadBytes: UInt64 { fileSize - min(liveBytes + preallocatedBytes, fileSize) }
    /// Every tree.
    public var trees: [Tree]
    /// Dead bytes no tree can be named for: old checkpoint frames, pages of interrupted
    /// checkpoints, trees since dropped.
    public var unattributedDeadBytes: UInt64 = 0
}

/// The JSON of `storedump stats --json` and Studio's `/api/stats`: the report's figures, with
/// each tree's entry count as `entries` and the computed `deadBytes` included.
extension SpaceReport: Encodable {
    private enum CodingKeys: String, CodingKey { case fileSize, liveBytes, deadBytes, preallocatedBytes, unattributedDeadBytes, trees }

    /// Encodes the report's sizes and trees.
    /// - Parameter encoder: The encoder.
    /// - Throws: What the encoder throws.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(fileSize, forKey: .fileSize)
        try container.encode(liveBytes, forKey: .liveBytes)
        try container.encode(deadBytes, forKey: .deadBytes)
        try container.encode(preallocatedBytes, forKey: .preallocatedBytes)
        try container.encode(unattributedDeadBytes, forKey: .unattributedDeadBytes)
        try container.encode(trees, forKey: .trees)
    }
}

extension SpaceReport.Tree: Encodable {
    // Node counts held in memory and raw out-of-line bytes stay out of the JSON.
    private enum CodingKeys: String, CodingKey {
        case name, entryCount = "entries", depth, leafPages, branchPages, storedBytes, rawBytes, fillFactor, overflowValues, overflowStoredBytes, deadBytes
    }
}

/// Visits every node of a tree, loading stored pages through the cache.
enum TreeWalker {
    static func visit(_ ref: NodeRef?, store: PageStore, depth: Int = 1,
                      _ body: (_ node: Node, _ address: FrameAddress?, _ depth: Int) throws -> Void) throws {
        guard let ref else { return }
        let node = try store.resolve(ref, for: .scan)
        try body(node, ref.address, depth)
        if case .branch(let branch) = node {
            for child in branch.childReferences { try visit(child, store: store, depth: depth + 1, body) }
        }
    }

    /// Calls `body` with every out-of-line value reference of a leaf.
    static func overflowValues(of leaf: LeafNode, _ body: (FrameAddress, UInt32) -> Void) {
        for i in 0 ..< leaf.count {
            leaf.withEntry(i) { _, slot in
                if case .overflow(let address, let length) = slot { body(address, length) }
            }
        }
    }
}

extension Database {
    /// The counters of this handle, without waiting for a writer: the commit sequence,
    /// log and checkpoint figures are those of the last transaction, checkpoint or
    /// compaction step that finished (inside this thread's own write transaction, as they
    /// are in it), so a thread polling them beside a load never queues behind it.
    ///
    /// ```swift
    /// let statistics = try db.statistics()
    /// print(statistics.commitSequence, statistics.logBytesSinceCheckpoint, statistics.cacheHits)
    /// ```
    ///
    /// - Returns: Counts of trees and entries, cache hits and misses, commits and checkpoints.
    /// - Throws: `StrataError.closed` after `close()`.
    public func statistics() throws -> Statistics {
        let snapshot = try snapshot()
        let writer = lastWriterCounters()
        let cache = snapshot.store.cache.counters, values = snapshot.store.values.counters
        let compacted = background.counters
        let checkpointed = checkpointPass.counters
        let merged = bufferMerges?.counters ?? (completed: 0, failed: 0, runs: 0)
        let synced = groupCommitCounters
        return Statistics(
            path: path, fileSize: try snapshot.store.file.size(), pageSize: snapshot.store.limits.pageSize,
            commitSequence: writer.sequence, checkpointSequence: writer.checkpointSequence,
            logBytesSinceCheckpoint: writer.logBytes, checkpointDueAtLogBytes: writer.checkpointDueBytes,
            bytesReadAtOpen: openReport.bytesRead,
            commitsReplayedAtOpen: openReport.replayedCommits, tornBytesDroppedAtOpen: openReport.tornBytes,
            cacheHits: cache.hits, cacheMisses: cache.misses, cacheBytes: cache.bytes, cachedPages: cache.entries,
            keptLeafBytes: snapshot.store.keptLeaves.current,
            cachedValueBytes: values.bytes, cachedValues: values.entries,
            salvagedFromOffset: openReport.salvagedFrom, failedAutomaticCheckpoints: writer.failedCheckpoints,
            isPoisoned: writer.poisoned, durableCommits: synced.commits, commitSyncs: synced.syncs,
            backgroundCompactions: compacted.completed, failedBackgroundCompactions: compacted.failed,
            lastBackgroundCompaction: compacted.last, longestBackgroundHold: compacted.longestHold,
            backgroundCheckpoints: checkpointed.completed, abandonedBackgroundCheckpoints: checkpointed.abandoned,
            longestBackgroundCheckpointPause: checkpointed.longestPause,
            writeBufferMerges: merged.completed, failedWriteBufferMerges: merged.failed, writeBufferRunMerges: merged.runs,
            trees: try snapshot.treeNames.map { name in
                let state = snapshot.trees[name]!
                return Statistics.Tree(name: name, entryCount: Int(try state.exactCount(store: snapshot.store)),
                                       bufferedWrites: state.bufferedEntries,
                                       bufferedRuns: (state.runs?.runs.count ?? 0) + (state.tail == nil ? 0 : 1))
            })
    }

    /// Walks every tree to report its shape and size, and the file's live and dead bytes.
    /// Reads every page: O(file size). `progress` receives (bytes examined, file size).
    ///
    /// - Parameter progress: Called as pages are read.
    /// - Returns: Each tree's levels, pages and bytes, and the file's live, dead and free bytes.
    /// - Throws: `StrataError.corruption` for a damaged page; `.io`; `.closed`.
    public func analyzeSpace(progress: ((UInt64, UInt64) -> Void)? = nil) throws -> SpaceReport {
        let snapshot = try snapshot()
        let store = snapshot.store
        let writer = writerCounters()
        var trees: [SpaceReport.Tree] = []
        for name in snapshot.treeNames {
            let state = snapshot.trees[name]!
            var tree = SpaceReport.Tree(
                name: name, entryCount: Int(try state.exactCount(store: store)), depth: 0, leafPages: 0, branchPages: 0, unwrittenNodes: 0,
                storedBytes: 0, rawBytes: 0, overflowValues: 0, overflowStoredBytes: 0, overflowRawBytes: 0, fillFactor: 0)
            var encodedBytes = 0
            try TreeWalker.visit(state.root, store: store) { node, address, depth in
                tree.depth = max(tree.depth, depth)
                if let address { tree.storedBytes += UInt64(address.length) } else { tree.unwrittenNodes += 1 }
                if let progress, let address { progress(address.end, store.fileSizeHint) }
                switch node {
                case .leaf(let leaf):
                    tree.leafPages += 1
                    encodedBytes += leaf.pageBytes
                    TreeWalker.overflowValues(of: leaf) { address, length in
                        tree.overflowValues += 1
                        tree.overflowStoredBytes += UInt64(address.length)
                        tree.overflowRawBytes += UInt64(length)
                    }
                case .branch(let branch):
                    tree.branchPages += 1
                    encodedBytes += branch.pageBytes
                }
            }
            tree.rawBytes = UInt64(encodedBytes)
            let pages = tree.leafPages + tree.branchPages
            tree.fillFactor = pages == 0 ? 0 : Double(encodedBytes) / Double(pages * store.limits.pageSize)
            trees.append(tree)
        }
        var report = SpaceReport(fileSize: try store.file.size(), liveBytes: try liveBytes(store: store, writer: writer), trees: trees)
        report.preallocatedBytes = try preallocatedBytes()
        try attributeDeadBytes(&report, store: store, writer: writer)
        progress?(report.fileSize, report.fileSize)
        return report
    }

    /// Splits the dead bytes by tree: pages referenced by older checkpoints but not the
    /// latest (walking the checkpoint chain, each page once), and checkpointed log frames by
    /// each tree's share of their operation bytes. Reads the whole file.
    private func attributeDeadBytes(_ report: inout SpaceReport, store: PageStore, writer: WriterCounters) throws {
        var seen = Set<UInt64>()
        var dead: [String: UInt64] = [:]
        func walk(_ root: FrameAddress?, tree: String, live: Bool) throws {
            guard let root, seen.insert(root.offset).inserted else { return }
            if !live { dead[tree, default: 0] += UInt64(root.length) }
            switch try store.node(at: root, for: .scan) {
            case .leaf(let leaf):
                TreeWalker.overflowValues(of: leaf) { address, _ in
                    if seen.insert(address.offset).inserted, !live { dead[tree, default: 0] += UInt64(address.length) }
                }
            case .branch(let branch):
                for child in branch.childReferences { try walk(child.address, tree: tree, live: live) }
            }
        }
        var address = writer.checkpoint
        var live = true
        while let current = address {
            let record = try Recovery.readCheckpoint(at: current, store: store)
            for tree in record.trees { try walk(tree.root, tree: tree.name, live: live) }
            live = false
            address = record.previous
        }
        // Log frames the latest checkpoint covers, shared out by operation bytes.
        let logEnd = writer.checkpoint?.offset ?? FileHeader.dataStart
        var position = FileHeader.dataStart
        while position < logEnd {
            let frame = try Recovery.readFrame(at: position, fileSize: logEnd, store: store)
            if frame.header.type == .log {
                let payload = try Frame.payload(of: frame.bytes, header: frame.header, offset: position, salt: store.salt,
                                                context: store.context(position, "log frame"))
                var share: [String: Int] = [:]
                _ = try LogBatchReader.read(payload, context: store.context(position, "log frame")) { op in
                    switch op {
                    case .put(let tree, let key, let value): share[tree, default: 0] += key.count + value.count
                    case .putStored(let tree, let key, _, _): share[tree, default: 0] += key.count + 16
                    case .delete(let tree, let key): share[tree, default: 0] += key.count
                    case .createTree(let tree), .dropTree(let tree): share[tree, default: 0] += 1
                    }
                }
                let total = max(1, share.values.reduce(0, +))
                for (tree, bytes) in share { dead[tree, default: 0] += UInt64(frame.bytes.count) * UInt64(bytes) / UInt64(total) }
            }
            position += UInt64(frame.bytes.count)
        }
        var attributed: UInt64 = 0
        for i in report.trees.indices {
            report.trees[i].deadBytes = dead[report.trees[i].name] ?? 0
            attributed += report.trees[i].deadBytes
        }
        report.unattributedDeadBytes = report.deadBytes - min(report.deadBytes, attributed)
    }

    /// Header + the latest checkpoint frame and everything it references + the log after it.
    private func liveBytes(store: PageStore, writer: WriterCounters) throws -> UInt64 {
        var live = FileHeader.dataStart + writer.logBytes
        guard let checkpoint = writer.checkpoint else { return live }
        live += UInt64(checkpoint.length)
        let record = try Recovery.readCheckpoint(at: checkpoint, store: store)
        for tree in record.trees {
            try TreeWalker.visit(tree.root.map { .stored($0) }, store: store) { node, address, _ in
                live += UInt64(address?.length ?? 0)
                if case .leaf(let leaf) = node {
                    TreeWalker.overflowValues(of: leaf) { address, _ in live += UInt64(address.length) }
                }
            }
        }
        return live
    }
}
