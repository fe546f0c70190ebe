import Foundation

/// What opening a file established: the newest committed state and where to append.
struct RecoveredState {
    var store: PageStore
    var trees: [String: TreeState]
    var sequence: UInt64
    var checkpoint: FrameAddress?
    var checkpointSequence: UInt64
    var slotGeneration: UInt64
    /// The end of the last valid frame: where the next frame is appended.
    var end: UInt64
    var tornBytes: UInt64
    var replayedCommits: Int
    var salvagedFrom: UInt64? = nil
}

/// Opening a file: header, checkpoint slots, the latest checkpoint, then replay of the
/// log frames after it. Reads O(log tail) bytes, never the whole tree.
/// The algorithm is FORMAT.md, "Recovery".
enum Recovery {
    static func initialize(_ file: any StorageFile, pageSize: Int) throws {
        let header = FileHeader.new(pageSize: pageSize)
        var image = [UInt8](repeating: 0, count: Int(FileHeader.dataStart))
        image.replaceSubrange(0 ..< FileHeader.size, with: header.encoded())
        for slot in CheckpointSlot.pair(first: 1, checkpoint: nil, sequence: 0) {
            let slotStart = Int(slot.fileOffset)
            image.replaceSubrange(slotStart ..< slotStart + FileHeader.slotSize, with: slot.encoded(salt: header.salt))
        }
        try file.truncate(to: 0)
        try file.write(image, at: 0)
        try file.sync()
    }

    /// Creates a new, empty database file at `path` atomically: the header is written and
    /// synced under a temporary name, then linked into place, so a crash never leaves a
    /// half-written header behind and an existing file is never replaced.
    static func create(_ path: String, fileSystem: any FileSystem, pageSize: Int) throws {
        let temporary = path + ".creating-" + UUID().uuidString
        let file = try fileSystem.open(temporary, mode: .readWrite)
        defer {
            file.close()
            try? fileSystem.remove(temporary)
        }
        try initialize(file, pageSize: pageSize)
        if try fileSystem.linkIfAbsent(temporary, to: path) {
            try fileSystem.syncDirectory(containing: path)
        }
    }

    static func open(_ file: any StorageFile, options: Database.Options, owner: UInt64) throws -> RecoveredState {
        let path = file.path
        var size = try file.size()
        if size < FileHeader.dataStart {
            // No commit fits in a file this short: it is new, or its creation was interrupted.
            let start = try file.read(count: 8, at: 0)
            let ours = start.isEmpty || FileHeader.magic.starts(with: start) || start.allSatisfy { $0 == 0 }
            guard ours else { throw StrataError.notAStrataFile(path: path) }
            if options.readOnly { throw StrataError.notAStrataFile(path: path) }
            try initialize(file, pageSize: options.pageSize)
            size = FileHeader.dataStart
        }
        let header = try FileHeader.decode(try file.read(count: FileHeader.size, at: 0), path: path)
        try header.checkVersion(path: path, readOnly: options.readOnly)
        let store = PageStore(file: file, header: header, cacheBudget: options.cacheSize)
        store.countRead(FileHeader.size)
        let slots = try FileHeader.slotOffsets.compactMap { offset in
            CheckpointSlot.decode(try store.readBytes(count: 64, at: offset), salt: header.salt)
        }.sorted { $0.generation > $1.generation }
        guard let newest = slots.first else {
            throw StrataError.corruption(path: path, offset: FileHeader.slotOffsets[0], reason: "both checkpoint slots fail their checksum")
        }
        // A slot naming a checkpoint beyond the end of the file means the file was cut
        // short after that checkpoint: use the older slot, or replay every frame from the
        // start (always correct, as frames are only appended), and keep what remains.
        let slot = slots.first { $0.checkpoint.map { $0.end <= size } ?? true }
        var state = RecoveredState(
            store: store, trees: [:], sequence: slot?.sequence ?? 0, checkpoint: nil, checkpointSequence: slot?.sequence ?? 0,
            slotGeneration: newest.generation, end: FileHeader.dataStart, tornBytes: 0, replayedCommits: 0)
        let sequenceKnown = slot != nil
        if let address = slot?.checkpoint {
            try adopt(try readCheckpoint(at: address, store: store), at: address, into: &state)
        }
        var changes = TreeChanges(trees: state.trees, mutator: TreeMutator(store: store, owner: owner))
        if let bad = try replayToBadFrame(into: &state, changes: &changes, fileSize: size, sequenceKnown: sequenceKnown) {
            let salvaged = try handleBadFrame(bad, store: store, options: options)
            state.tornBytes = size - bad.position
            if salvaged {
                state.salvagedFrom = bad.position
                options.logger.error("salvage: dropped a damaged frame and every commit after it",
                                     metadata: ["path": "\(path)", "offset": "\(bad.position)", "bytes": "\(size - bad.position)", "reason": "\(bad.reason)"])
            } else {
                options.logger.warning("dropped the torn tail of an interrupted write",
                                       metadata: ["path": "\(path)", "offset": "\(bad.position)", "bytes": "\(size - bad.position)"])
            }
            if !options.readOnly {
                try file.truncate(to: bad.position)
                try file.sync()
            }
        }
        state.trees = changes.trees
        return state
    }

    /// Brings a read-only handle's `state` up to the commits appended to its file since:
    /// replays the frames after `state.end`. A bad frame at the tail is a write still in
    /// progress (or interrupted): replay stops before it and the next catch-up tries again.
    /// Damage followed by valid commits is refused as at open.
    /// With `buffer`, the puts and deletes go to the trees' write buffers, as a write
    /// transaction's do, and end as runs (a compaction's holds: `CompactionTarget`).
    /// Returns the trees that the replayed commits changed.
    static func catchUp(_ state: inout RecoveredState, fileSize: UInt64, owner: UInt64, buffer: WriteBufferPolicy? = nil,
                        options: Database.Options) throws -> Set<String> {
        var changes = TreeChanges(trees: state.trees, mutator: TreeMutator(store: state.store, owner: owner))
        changes.buffer = buffer
        changes.touched = []
        if let bad = try replayToBadFrame(into: &state, changes: &changes, fileSize: fileSize, sequenceKnown: true) {
            _ = try handleBadFrame(bad, store: state.store, options: options)
        }
        if buffer != nil { changes.flushAllPending() }
        state.trees = changes.trees
        return changes.touched ?? []
    }

    /// A frame replay stopped at: its position, why, and the first valid commit frame found
    /// after it that was written once the bad frame's bytes were durable (nil: none, so it
    /// is the tail a writer left or is still writing, or an interrupted group commit).
    struct BadFrame {
        let position: UInt64
        let reason: String
        let laterCommit: UInt64?
    }

    /// `replayFrames`, then a look for a valid commit after the bad frame it stopped at; when
    /// there is one, the bad frame is read again.
    ///
    /// A read-only handle reads while a writer appends into space it preallocated: it can
    /// read a frame's place while it is still zeros (or half written), and find the commit
    /// after it by the time it looks further. Frames are appended in order, so a frame before
    /// a complete commit is complete itself: read again, it is replayed; only one that is
    /// still bad then is damage. The look happens once, and its answer is the one acted on:
    /// looking again later could find a commit the writer appended meanwhile, and call the
    /// frame still being written damage.
    private static func replayToBadFrame(into state: inout RecoveredState, changes: inout TreeChanges, fileSize: UInt64,
                                         sequenceKnown: Bool) throws -> BadFrame? {
        var sequenceKnown = sequenceKnown
        while let bad = try replayFrames(into: &state, changes: &changes, fileSize: fileSize, sequenceKnown: sequenceKnown) {
            let later = try findCommitFrame(after: bad.position, fileSize: fileSize, store: state.store)
            guard later != nil, (try? readFrame(at: bad.position, fileSize: fileSize, store: state.store)) != nil else {
                return BadFrame(position: bad.position, reason: bad.reason, laterCommit: later)
            }
            // The frame is whole now: replay on from it.
            sequenceKnown = sequenceKnown || state.sequence > 0 || state.replayedCommits > 0
        }
        return nil
    }

    /// Replays every valid frame from `state.end` up to `fileSize` into `changes`, moving
    /// `state.end` past each. Returns the first frame that is incomplete or fails its
    /// checksum, if any: the caller decides whether that is a torn tail or damage.
    private static func replayFrames(into state: inout RecoveredState, changes: inout TreeChanges, fileSize size: UInt64,
                                     sequenceKnown: Bool) throws -> (position: UInt64, reason: String)? {
        let store = state.store
        var sequenceKnown = sequenceKnown
        var position = state.end
        defer { state.end = position }
        var ordered = KeyOrderedReplay()
        while position < size {
            let frame: (header: FrameHeader, bytes: [UInt8])
            do {
                frame = try readFrame(at: position, fileSize: size, store: store)
            } catch let StrataError.corruption(_, _, reason) {
                try ordered.apply(to: &changes)
                // Zeros from here to the end are preallocated space: the log ends here.
                if try isZeroTail(from: position, to: size, store: store) { return nil }
                return (position, reason)
            }
            let address = FrameAddress(offset: position, length: UInt32(frame.bytes.count))
            let context = store.context(position, "\(frame.header.type) frame")
            switch frame.header.type {
            case .log:
                let payload = try Frame.payload(of: frame.bytes, header: frame.header, offset: position, salt: store.salt, context: context)
                let batch = try replay(payload, into: &changes, ordered: &ordered, context: context)
                guard batch.sequence == state.sequence + 1 || !sequenceKnown && state.sequence == 0 else {
                    throw context.error("commit sequence \(batch.sequence) does not follow \(state.sequence)")
                }
                state.sequence = batch.sequence
                sequenceKnown = true
                state.replayedCommits += 1
            case .checkpoint:
                let payload = try Frame.payload(of: frame.bytes, header: frame.header, offset: position, salt: store.salt, context: context)
                let record = try CheckpointRecord.decode(payload, at: position, context: context)
                guard record.sequence == state.sequence || !sequenceKnown else {
                    throw context.error("checkpoint of sequence \(record.sequence) found after commit \(state.sequence)")
                }
                try ordered.apply(to: &changes)
                try adopt(record, at: address, into: &state)
                changes.replaceTrees(state.trees)
                sequenceKnown = true
            case .page, .value:
                break
            }
            position = address.end
        }
        try ordered.apply(to: &changes)
        return nil
    }

    /// Replays one commit (its puts and deletes gathered in `ordered`, applied in key order
    /// later). A checksum-valid frame whose operations do not apply to the state before it
    /// (a put into a tree that does not exist, a tree created twice) was not written by
    /// Strata: that is corruption at the frame, not an API error.
    private static func replay(_ payload: [UInt8], into changes: inout TreeChanges, ordered: inout KeyOrderedReplay,
                               context: CorruptionContext) throws -> LogBatchHeader {
        do {
            return try ordered.replay(payload, into: &changes, context: context)
        } catch let error as StrataError {
            switch error {
            case .treeNotFound, .treeAlreadyExists, .invalidTreeName, .keyTooLarge, .emptyKey, .valueTooLarge:
                throw context.error("commit does not apply to the state before it: \(error)")
            default:
                throw error
            }
        }
    }

    private static func adopt(_ record: CheckpointRecord, at address: FrameAddress, into state: inout RecoveredState) throws {
        state.trees = Dictionary(uniqueKeysWithValues: record.trees.map {
            ($0.name, TreeState(root: $0.root.map { .stored($0) }, entryCount: $0.entryCount))
        })
        state.sequence = record.sequence
        state.checkpointSequence = record.sequence
        state.checkpoint = address
        state.end = address.end
    }

    static func readCheckpoint(at address: FrameAddress, store: PageStore) throws -> CheckpointRecord {
        let payload = try store.readPayload(at: address, expecting: .checkpoint)
        return try CheckpointRecord.decode(payload, at: address.offset, context: store.context(address.offset, "checkpoint frame"))
    }

    /// Reads and verifies the whole frame at `position`; throws `.corruption` when it is
    /// incomplete or invalid.
    static func readFrame(at position: UInt64, fileSize: UInt64, store: PageStore) throws -> (header: FrameHeader, bytes: [UInt8]) {
        let context = store.context(position, "frame")
        let headerBytes = try store.readBytes(count: FrameHeader.size, at: position)
        guard headerBytes.count == FrameHeader.size else { throw context.error("incomplete frame header at the end of the file") }
        let header = try headerBytes.withUnsafeBytes { try FrameHeader.parse($0, context: context) }
        guard position + UInt64(header.frameLength) <= fileSize else {
            throw context.error("frame of \(header.frameLength) bytes runs past the end of the file")
        }
        let bytes = headerBytes + (try store.readBytes(count: Int(header.storedLength), at: position + UInt64(FrameHeader.size)))
        let valid = bytes.withUnsafeBytes { Frame.checksumMatches($0, header: header, offset: position, salt: store.salt) }
        guard valid else { throw context.error("\(header.type) frame checksum mismatch") }
        return (header, bytes)
    }

    /// A bad frame is a torn tail (the writer died mid-write, or a power loss kept part of a
    /// group commit: recovery drops it) unless a valid log or checkpoint frame follows it
    /// that was written after the bad frame's bytes were synced, which a crash cannot
    /// produce: then it is media corruption and opening stops, unless the caller asked to
    /// salvage.
    /// Returns true when valid commits follow and the caller asked to salvage.
    private static func handleBadFrame(_ bad: BadFrame, store: PageStore, options: Database.Options) throws -> Bool {
        guard let later = bad.laterCommit else { return false }
        if options.recovery == .truncateAtFirstBadFrame { return true }
        throw StrataError.corruption(
            path: store.path, offset: bad.position,
            reason: "\(bad.reason); valid commits follow at offset \(later), so this is damage, not an interrupted write. "
                + "Open with recovery: .truncateAtFirstBadFrame to keep only the commits before it")
    }

    /// Whether every byte from `start` to `end` is zero: space a writer preallocated for
    /// the log (FORMAT.md, "Preallocated space"), not a torn write. Reads 1 MiB at a time.
    static func isZeroTail(from start: UInt64, to end: UInt64, store: PageStore) throws -> Bool {
        var position = start
        while position < end {
            let chunk = try store.readBytes(count: Int(min(end - position, 1 << 20)), at: position)
            guard !chunk.isEmpty, chunk.allSatisfy({ $0 == 0 }) else { return false }
            position += UInt64(chunk.count)
        }
        return true
    }

    /// The offset of the first valid log or checkpoint frame after `position` that was
    /// written when the file was already synced past `position` (its durable horizon,
    /// `FrameHeader.durableHorizon`, lies beyond it), if any: proof that the bytes at
    /// `position` were durable, so a bad frame there is damage. Frames written before the
    /// sync that would have covered `position` (a format 3 group commit that a power loss
    /// interrupted) are no proof: their bytes and those at `position` were written back in
    /// any order.
    static func findCommitFrame(after position: UInt64, fileSize: UInt64, store: PageStore) throws -> UInt64? {
        let start = position + 1
        guard start + UInt64(FrameHeader.size) <= fileSize else { return nil }
        let tail = try store.readBytes(count: Int(fileSize - start), at: start)
        return tail.withUnsafeBytes { raw -> UInt64? in
            var i = 0
            while i + FrameHeader.size <= raw.count {
                defer { i += 1 }
                guard raw[i + 8] == FrameHeader.magic.0, raw[i + 9] == FrameHeader.magic.1,
                      raw[i + 10] == FrameType.log.rawValue || raw[i + 10] == FrameType.checkpoint.rawValue
                else { continue }
                let offset = start + UInt64(i)
                let rest = UnsafeRawBufferPointer(rebasing: raw[i...])
                guard let header = try? FrameHeader.parse(rest, context: store.context(offset, "frame")),
                      header.frameLength <= rest.count,
                      header.durableHorizon(at: offset) > position,
                      Frame.checksumMatches(rest, header: header, offset: offset, salt: store.salt)
                else { continue }
                return offset
            }
            return nil
        }
    }
}
