import Foundation

/// Read-only inspection of a Strata file, for tools such as `storedump` and for tests: the
/// header and slots, every frame, any page, and verification of every structure. It opens
/// the file read-only (no lock), so it is safe while another process writes; it sees the
/// state as of opening.
///
/// ```swift
/// let inspector = try Inspector(path: "app.strata")
/// print(try inspector.info().checkpoint?.sequence ?? 0)
/// let faults = try inspector.verify()        // empty when the file is sound
/// ```
public final class Inspector: Sendable {
    /// The read-only database the inspection works on.
    public let database: Database
    let store: PageStore

    /// - Parameters:
    ///   - path: the file, opened read-only.
    ///   - cacheSize: the decoded-page cache's budget (`Database.Options.cacheSize`); a
    ///     long-running inspector such as Studio bounds it below the default.
    /// - Throws: `StrataError` when the file cannot be opened or read.
    public init(path: String, cacheSize: Int = Database.Options.defaultCacheSize) throws {
        var options = Database.Options(readOnly: true)
        options.cacheSize = cacheSize
        database = try Database(path: path, options: options)
        store = try database.snapshot().store
    }

    /// Inspects the file of a handle already open (tests use it on a simulated file system).
    init(_ database: Database) throws {
        self.database = database
        store = try database.snapshot().store
    }

    // MARK: Info

    /// One of the header's two checkpoint slots.
    public struct SlotInfo: Codable, Sendable, Equatable {
        /// Where the slot is in the file.
        public var offset: UInt64
        /// Whether its checksum holds.
        public var valid: Bool
        /// Which of the two is newer (the higher).
        public var generation: UInt64?
        /// The checkpoint frame it names.
        public var checkpointOffset: UInt64?
        /// The commit that checkpoint covers.
        public var sequence: UInt64?
    }

    /// A commit: its sequence number, frame and time.
    public struct CommitInfo: Codable, Sendable, Equatable {
        /// The commit's sequence number.
        public var sequence: UInt64
        /// Its frame's offset.
        public var offset: UInt64
        /// When it was committed.
        public var time: Date
    }

    /// A tree of the latest state.
    public struct TreeInfo: Codable, Sendable, Equatable {
        /// The tree's name (`c:` collections, `i:` indexes, `strata.` the engine's own).
        public var name: String
        /// Its entry count.
        public var entries: Int
    }

    /// What `info()` reports: `storedump info`'s fields.
    public struct FileInfo: Codable, Sendable, Equatable {
        /// The file.
        public var path: String
        /// Its size in bytes.
        public var fileSize: UInt64
        /// `STRATADB` for a Strata file.
        public var magic: String
        /// The oldest format version that can read the file.
        public var readVersion: UInt16
        /// The format version that wrote it.
        public var writeVersion: UInt16
        /// Its page size.
        public var pageSize: Int
        /// The file's salt (mixed into every checksum), in hex.
        public var salt: String
        /// When the file was created.
        public var created: Date
        /// Both checkpoint slots.
        public var slots: [SlotInfo]
        /// The checkpoint recovery starts from.
        public var checkpoint: CommitInfo?
        /// The newest commit (from the log after the checkpoint, or the checkpoint itself).
        public var lastCommit: CommitInfo?
        /// Log bytes after the checkpoint: what opening replays.
        public var logBytesSinceCheckpoint: UInt64
        /// Bytes at the end of the file that recovery would drop (an interrupted write).
        public var tornTailBytes: UInt64
        /// Zero bytes after the last frame that the writer preallocated for the log
        /// (FORMAT.md, "Preallocated space"); a closed file has none.
        public var preallocatedBytes: UInt64
        /// Every tree of the latest state.
        public var trees: [TreeInfo]
    }

    /// The header, slots, latest checkpoint and commit, log tail and trees.
    ///
    /// - Returns: What the file's structures say, without walking the trees.
    /// - Throws: `StrataError.io`; `.corruption` when the header cannot be read.
    public func info() throws -> FileInfo {
        let header = store.header
        let counters = database.writerCounters()
        let snapshot = try database.snapshot()
        let slots = try FileHeader.slotOffsets.map { offset -> SlotInfo in
            guard let slot = CheckpointSlot.decode(try store.readBytes(count: 64, at: offset), salt: header.salt) else {
                return SlotInfo(offset: offset, valid: false)
            }
            return SlotInfo(offset: offset, valid: true, generation: slot.generation, checkpointOffset: slot.checkpoint?.offset, sequence: slot.sequence)
        }
        var checkpoint: CommitInfo?
        if let address = counters.checkpoint {
            let record = try Recovery.readCheckpoint(at: address, store: store)
            checkpoint = CommitInfo(sequence: record.sequence, offset: address.offset, time: Date(milliseconds: record.timeMilliseconds))
        }
        var lastCommit = checkpoint
        try walkFrames(from: counters.checkpoint?.end ?? FileHeader.dataStart, upTo: counters.end) { frame in
            if frame.type == FrameType.log.description, let sequence = frame.sequence, let time = frame.time {
                lastCommit = CommitInfo(sequence: sequence, offset: frame.offset, time: time)
            }
            return true
        }
        return FileInfo(
            path: database.path, fileSize: try store.file.size(), magic: String(decoding: FileHeader.magic, as: UTF8.self),
            readVersion: header.readVersion, writeVersion: header.writeVersion, pageSize: Int(header.pageSize),
            salt: String(header.salt, radix: 16), created: Date(milliseconds: header.createdAtMilliseconds), slots: slots,
            checkpoint: checkpoint, lastCommit: lastCommit, logBytesSinceCheckpoint: counters.logBytes,
            tornTailBytes: database.openReport.tornBytes, preallocatedBytes: try database.preallocatedBytes(),
            trees: try snapshot.treeNames.map { TreeInfo(name: $0, entries: Int(try snapshot.trees[$0]!.exactCount(store: snapshot.store))) })
    }

    // MARK: Frames

    /// One frame of the file: `storedump frames`.
    public struct FrameInfo: Codable, Sendable, Equatable {
        /// The frame's offset.
        public var offset: UInt64
        /// `log`, `page`, `value` or `checkpoint`.
        public var type: String
        /// Payload bytes on disk.
        public var storedLength: UInt32
        /// Payload bytes uncompressed.
        public var rawLength: UInt32
        /// Whether the payload is LZ4-compressed.
        public var compressed: Bool
        /// Bytes before the frame its writer had not yet synced when it wrote it (format 3
        /// group commits; FORMAT.md §5).
        public var pendingBefore: UInt32 = 0
        /// Whether the checksum holds.
        public var checksumOK: Bool
        /// Commit or checkpoint sequence, for log and checkpoint frames.
        public var sequence: UInt64?
        /// A log or checkpoint frame's commit time.
        public var time: Date?
        /// What the payload holds: operations, entries, children, trees, bytes.
        public var detail: String?
        /// Why the frame could not be decoded, if it could not.
        public var error: String?

        /// The frame's whole length, header included.
        public var length: UInt64 { UInt64(FrameHeader.size) + UInt64(storedLength) }
    }

    /// Visits the frames from `start` (default: the first) until `body` returns false or
    /// the end. A frame that fails verification is reported with its error; when its header
    /// itself is unreadable the walk stops there (no length to continue by).
    /// Stops at the end of the frames: preallocated zeros after them are not frames.
    ///
    /// - Parameters:
    ///   - start: The offset of the first frame to visit.
    ///   - body: Called with each frame; returns whether to go on.
    /// - Throws: `StrataError.io`; what `body` throws.
    public func walkFrames(from start: UInt64? = nil, _ body: (FrameInfo) throws -> Bool) throws {
        try walkFrames(from: start ?? Inspector.firstFrameOffset, upTo: try database.framesEnd(), body)
    }

    /// Where the first frame of every file starts.
    public static var firstFrameOffset: UInt64 { FileHeader.dataStart }

    func walkFrames(from start: UInt64, upTo end: UInt64, _ body: (FrameInfo) throws -> Bool) throws {
        var position = max(start, FileHeader.dataStart)
        while position < end {
            let info = try frame(at: position, fileSize: end)
            // An unreadable header gives no length to continue by.
            guard try body(info), info.type != "unreadable" else { return }
            position += info.length
        }
    }

    /// The frame at `offset`, verified and described.
    ///
    /// - Parameter offset: The frame's offset in the file.
    /// - Returns: Its type, lengths, checksum and what it holds.
    /// - Throws: `StrataError.corruption` when no valid frame starts there; `.io`.
    public func frame(at offset: UInt64) throws -> FrameInfo {
        try frame(at: offset, fileSize: try store.file.size())
    }

    private func frame(at offset: UInt64, fileSize: UInt64) throws -> FrameInfo {
        let context = store.context(offset, "frame")
        let headerBytes = try store.readBytes(count: FrameHeader.size, at: offset)
        let header: FrameHeader
        do {
            guard headerBytes.count == FrameHeader.size else { throw context.error("incomplete frame header (\(headerBytes.count) bytes)") }
            header = try headerBytes.withUnsafeBytes { try FrameHeader.parse($0, context: context) }
        } catch let StrataError.corruption(_, _, reason) {
            return FrameInfo(offset: offset, type: "unreadable", storedLength: 0, rawLength: 0, compressed: false, checksumOK: false, error: reason)
        }
        var info = FrameInfo(offset: offset, type: header.type.description, storedLength: header.storedLength, rawLength: header.rawLength,
                             compressed: header.isCompressed, pendingBefore: header.pendingBefore, checksumOK: false)
        guard offset + UInt64(header.frameLength) <= fileSize else {
            info.error = "frame of \(header.frameLength) bytes runs past the end of the file (torn write)"
            return info
        }
        let bytes = headerBytes + (try store.readBytes(count: Int(header.storedLength), at: offset + UInt64(FrameHeader.size)))
        do {
            let payload = try Frame.payload(of: bytes, header: header, offset: offset, salt: store.salt, context: context)
            info.checksumOK = true
            try describe(&info, payload: payload, header: header, offset: offset)
        } catch let StrataError.corruption(_, _, reason) {
            info.error = reason
        }
        return info
    }

    private func describe(_ info: inout FrameInfo, payload: [UInt8], header: FrameHeader, offset: UInt64) throws {
        let context = store.context(offset, "\(header.type) frame")
        switch header.type {
        case .log:
            var puts = 0, stored = 0, deletes = 0, treeOps = 0
            let batch = try LogBatchReader.read(payload, context: context) { op in
                switch op {
                case .put: puts += 1
                case .putStored: (puts, stored) = (puts + 1, stored + 1)
                case .delete: deletes += 1
                case .createTree, .dropTree: treeOps += 1
                }
            }
            info.sequence = batch.sequence
            info.time = Date(milliseconds: batch.timeMilliseconds)
            info.detail = "commit \(batch.sequence): \(puts) put" + (stored > 0 ? " (\(stored) in value frames)" : "")
                + ", \(deletes) delete" + (treeOps > 0 ? ", \(treeOps) tree" : "")
        case .page:
            let address = FrameAddress(offset: offset, length: UInt32(header.frameLength))
            switch try PageCodec.decode(payload, address: address, limits: store.limits, context: context) {
            case .leaf(let leaf): info.detail = "leaf, \(leaf.count) entries"
            case .branch(let branch): info.detail = "branch, \(branch.childCount) children"
            }
        case .value:
            info.detail = "value, \(payload.count) bytes"
        case .checkpoint:
            let record = try CheckpointRecord.decode(payload, at: offset, context: context)
            info.sequence = record.sequence
            info.time = Date(milliseconds: record.timeMilliseconds)
            info.detail = "checkpoint of commit \(record.sequence), \(record.trees.count) trees"
        }
    }
}

extension Date {
    init(milliseconds: Int64) { self.init(timeIntervalSince1970: Double(milliseconds) / 1000) }
}
