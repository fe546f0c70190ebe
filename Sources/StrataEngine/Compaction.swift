/// The outcome of `Database.compact()`.
public struct CompactionResult: Sendable, Equatable {
    /// The file's size before.
    public var bytesBefore: UInt64
    /// The file's size after: its live data, written compactly.
    public var bytesAfter: UInt64
}

/// Builds a tree bottom-up from entries given in key order, with full pages. Used by
/// compaction.
struct TreeBuilder {
    private var writer: NodeWriter
    private let limits: NodeLimits
    private var leaf = LeafNode(owner: 0)
    private var leaves: [(firstKey: [UInt8], address: FrameAddress)] = []

    init(writer: NodeWriter) {
        self.writer = writer
        self.limits = writer.store.limits
    }

    var appender: FrameAppender { writer.appender }

    mutating func add(key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) throws {
        let size = LeafNode.entrySizes(keyCount: key.count, value: .inline(value), limits: limits).page
        if leaf.count > 0, leaf.pageBytes + size > limits.pageSize { try flushLeaf() }
        leaf.insert(at: leaf.count, key: key, value: .inline(value), limits: limits)
    }

    private mutating func flushLeaf() throws {
        let address = try writer.write(.leaf(leaf))
        leaves.append((leaf.key(at: 0), address))
        leaf = LeafNode(owner: 0)
    }

    /// Writes what is pending and the branch levels; returns the root (nil when empty).
    mutating func finish() throws -> FrameAddress? {
        if leaf.count > 0 { try flushLeaf() }
        var level = leaves
        while level.count > 1 {
            var next: [(firstKey: [UInt8], address: FrameAddress)] = []
            var groups: [[(firstKey: [UInt8], address: FrameAddress)]] = [[]]
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
            for group in groups {
                let branch = BranchNode(owner: 0, keys: group.dropFirst().map(\.firstKey), children: group.map { .stored($0.address) })
                next.append((group[0].firstKey, try writer.write(.branch(branch))))
            }
            level = next
        }
        return level.first?.address
    }
}

extension Database {
    /// Rewrites the live data into a new file and swaps it in atomically, giving back the
    /// space of superseded pages and checkpointed log.
    ///
    /// Writes `PATH.compact`, syncs it, renames it over `PATH` and syncs the directory.
    /// A crash before the rename leaves the original intact (the next open deletes the
    /// leftover); after it, the new file is complete. Snapshots taken before keep reading
    /// the old file. Writers wait while compaction runs. `progress` receives (entries copied,
    /// entries in all trees).
    ///
    /// - Parameter progress: Called as entries are copied, on the compacting thread.
    /// - Returns: The file's size before and after, and what was copied.
    /// - Throws: `StrataError.readOnly` on a read-only handle; `.io` when the new file cannot be
    ///   written (the original is untouched then); `.corruption` for damaged pages.
    @discardableResult
    public func compact(progress: ((UInt64, UInt64) -> Void)? = nil) throws -> CompactionResult {
        try withWriter { writer in
            let snapshot = try snapshot()
            let old = snapshot.store
            let before = try old.file.size()
            let temporaryPath = path + ".compact"
            try fileSystem.remove(temporaryPath)
            let file = try fileSystem.open(temporaryPath, mode: .readWrite)
            let state: RecoveredState
            do {
                state = try writeCompacted(snapshot, to: file, progress: progress)
                guard try file.tryLockExclusive() else { throw StrataError.locked(path: temporaryPath) }
                try fileSystem.rename(temporaryPath, to: path)
            } catch {
                file.close()
                try? fileSystem.remove(temporaryPath)
                throw error
            }
            // The new file is in place; failing to make the rename durable is a sync failure.
            try writer.guarded(rollingBackTo: writer.end) { try fileSystem.syncDirectory(containing: path) }
            replaceStore(state)
            old.file.unlock()
            return CompactionResult(bytesBefore: before, bytesAfter: state.end)
        }
    }

    private func writeCompacted(_ snapshot: Snapshot, to file: any StorageFile, progress: ((UInt64, UInt64) -> Void)?) throws -> RecoveredState {
        let total = snapshot.trees.values.reduce(0) { $0 + $1.entryCount }
        var copied: UInt64 = 0
        try Recovery.initialize(file, pageSize: snapshot.store.limits.pageSize)
        let header = try FileHeader.decode(try file.read(count: FileHeader.size, at: 0), path: file.path)
        let store = PageStore(file: file, header: header, cacheBudget: options.cacheSize)
        var appender = FrameAppender(file: file, salt: header.salt, position: FileHeader.dataStart)
        var record = CheckpointRecord(sequence: snapshot.sequence, timeMilliseconds: Self.now(), previous: nil, trees: [])
        var trees: [String: TreeState] = [:]
        for name in snapshot.treeNames {
            var builder = TreeBuilder(writer: NodeWriter(store: store, appender: appender))
            try snapshot.scan(name) { key, value in
                try builder.add(key: key, value: value)
                copied += 1
                if copied & 0xFFF == 0 { progress?(copied, total) }
                return true
            }
            let root = try builder.finish()
            appender = builder.appender
            let count = snapshot.trees[name]!.entryCount
            record.trees.append(.init(name: name, entryCount: count, root: root))
            trees[name] = TreeState(root: root.map { .stored($0) }, entryCount: count)
        }
        let address = try appender.append(.checkpoint, payload: record.encoded())
        try appender.flush()
        try file.sync()
        // Both slots name the one checkpoint: the new file has no older one to fall back on.
        let slots = CheckpointSlot.pair(first: 3, checkpoint: address, sequence: snapshot.sequence)
        for slot in slots { try file.write(slot.encoded(salt: header.salt), at: slot.fileOffset) }
        try file.sync()
        return RecoveredState(
            store: store, trees: trees, sequence: snapshot.sequence, checkpoint: address, checkpointSequence: snapshot.sequence,
            slotGeneration: slots[1].generation, end: appender.position, tornBytes: 0, replayedCommits: 0)
    }
}
