import Foundation

/// The fixed header at the start of every Strata file, and the two checkpoint slots after
/// it. Only these slots are ever overwritten in place; everything from `dataStart` on is
/// appended. See FORMAT.md, "File header" and "Checkpoint slots".
struct FileHeader: Sendable, Equatable {
    static let magic: [UInt8] = Array("STRATADB".utf8)
    /// The format version this code reads and writes: 3 since frames record how much of the
    /// file before them was not yet synced, so commits can share syncs (FORMAT.md §12).
    /// Files of versions 1 and 2 are read, and written as their version (one sync per
    /// commit; version 1 without operation 6) until compacted.
    static let formatVersion: UInt16 = 3
    static let size = 512
    static let slotOffsets: [UInt64] = [512, 1024]
    static let slotSize = 512
    /// Offset of the first frame.
    static let dataStart: UInt64 = 4096

    var readVersion: UInt16
    var writeVersion: UInt16
    var pageSize: UInt32
    var salt: UInt64
    var createdAtMilliseconds: Int64

    /// Whether commits write large values to value frames (format 2 on) rather than into
    /// their log frames.
    var storesValuesAtCommit: Bool { writeVersion >= 2 }

    /// Whether durable commits may share syncs (format 3 on): their frames record what was
    /// not yet synced before them (`FrameHeader.pendingBefore`), so recovery tells a group
    /// interrupted by a power loss from damage. Older files sync each commit before the
    /// next, which their readers' recovery assumes.
    var groupsCommits: Bool { writeVersion >= 3 }

    static func new(pageSize: Int) -> FileHeader {
        var rng = SystemRandomNumberGenerator()
        return FileHeader(
            readVersion: formatVersion, writeVersion: formatVersion, pageSize: UInt32(pageSize),
            salt: rng.next(), createdAtMilliseconds: Int64(Date().timeIntervalSince1970 * 1000))
    }

    func encoded() -> [UInt8] {
        var w = ByteWriter(capacity: Self.size)
        w.raw(Self.magic)
        w.u16(readVersion)
        w.u16(writeVersion)
        w.u32(pageSize)
        w.u64(salt)
        w.u64(UInt64(bitPattern: createdAtMilliseconds))
        w.u64(w.bytes.withUnsafeBytes { XXH64.hash($0) })
        w.raw([UInt8](repeating: 0, count: Self.size - w.count))
        return w.bytes
    }

    /// Decodes and checks the header; version checks are the caller's (they depend on the
    /// open mode).
    static func decode(_ bytes: [UInt8], path: String) throws -> FileHeader {
        guard bytes.count >= 40, Array(bytes[0 ..< 8]) == magic else { throw StrataError.notAStrataFile(path: path) }
        return try bytes.withUnsafeBytes { raw in
            let context = CorruptionContext(path: path, offset: 0, structure: "file header")
            var r = ByteReader(raw, context: context, position: 8)
            let header = FileHeader(
                readVersion: try r.u16("read version"), writeVersion: try r.u16("write version"),
                pageSize: try r.u32("page size"), salt: try r.u64("salt"),
                createdAtMilliseconds: Int64(bitPattern: try r.u64("creation time")))
            let stored = try r.u64("header checksum")
            guard stored == XXH64.hash(UnsafeRawBufferPointer(rebasing: raw[0 ..< 32])) else {
                throw context.error("header checksum mismatch")
            }
            guard header.pageSize >= 512, header.pageSize <= 1 << 20 else {
                throw context.error("page size \(header.pageSize) is outside 512 ... 1048576")
            }
            return header
        }
    }

    /// Applies SQLite's rule: a newer read version is refused; a newer write version may
    /// only be opened read-only.
    func checkVersion(path: String, readOnly: Bool) throws {
        if readVersion > Self.formatVersion {
            throw StrataError.unsupportedFormat(path: path, fileReadVersion: readVersion, fileWriteVersion: writeVersion, supported: Self.formatVersion)
        }
        if writeVersion > Self.formatVersion && !readOnly {
            throw StrataError.formatRequiresReadOnly(path: path, fileWriteVersion: writeVersion, supported: Self.formatVersion)
        }
    }
}

/// One of the two alternating slots that name the latest checkpoint frame. The slot with
/// the higher generation whose checksum verifies wins; a torn slot write leaves the other.
struct CheckpointSlot: Sendable, Equatable {
    var generation: UInt64
    /// The checkpoint frame, or nil before the first checkpoint.
    var checkpoint: FrameAddress?
    var sequence: UInt64

    func encoded(salt: UInt64) -> [UInt8] {
        var w = ByteWriter(capacity: FileHeader.slotSize)
        w.u64(generation)
        w.u64(checkpoint?.offset ?? 0)
        w.u32(checkpoint?.length ?? 0)
        w.u32(0)
        w.u64(sequence)
        w.u64(w.bytes.withUnsafeBytes { XXH64.hash($0, seed: salt) })
        w.raw([UInt8](repeating: 0, count: FileHeader.slotSize - w.count))
        return w.bytes
    }

    /// The slot, or nil when it was never written or its checksum fails (a torn write).
    static func decode(_ bytes: [UInt8], salt: UInt64) -> CheckpointSlot? {
        guard bytes.count >= 40 else { return nil }
        return bytes.withUnsafeBytes { raw -> CheckpointSlot? in
            let context = CorruptionContext(path: "", offset: 0, structure: "slot")
            var r = ByteReader(raw, context: context)
            guard let generation = try? r.u64("generation"), generation > 0,
                  let offset = try? r.u64("offset"), let length = try? r.u32("length"),
                  (try? r.u32("reserved")) != nil, let sequence = try? r.u64("sequence"),
                  let checksum = try? r.u64("checksum"),
                  checksum == XXH64.hash(UnsafeRawBufferPointer(rebasing: raw[0 ..< 32]), seed: salt)
            else { return nil }
            let address = offset == 0 ? nil : FrameAddress(offset: offset, length: length)
            return CheckpointSlot(generation: generation, checkpoint: address, sequence: sequence)
        }
    }

    /// Where this slot is written: generations alternate between the two slots.
    var fileOffset: UInt64 { FileHeader.slotOffsets[Int(generation % 2)] }

    /// The slot images that make both slots name `checkpoint`, with generations `first`
    /// and `first + 1`: written where a file has no older checkpoint for the other slot to
    /// keep naming (a new file, a compacted one), so one damaged slot never makes the file
    /// unopenable.
    static func pair(first: UInt64, checkpoint: FrameAddress?, sequence: UInt64) -> [CheckpointSlot] {
        [first, first + 1].map { CheckpointSlot(generation: $0, checkpoint: checkpoint, sequence: sequence) }
    }
}
