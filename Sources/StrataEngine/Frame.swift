/// The kinds of frame that follow the file header. Values are part of the file format.
public enum FrameType: UInt8, Sendable, CaseIterable, CustomStringConvertible {
    /// One committed transaction: a batch of tree mutations.
    case log = 1
    /// One B-tree node (leaf or branch).
    case page = 2
    /// One value stored out of line, referenced from a leaf.
    case value = 3
    /// The roots of all trees as of a commit sequence.
    case checkpoint = 4

    public var description: String {
        switch self {
        case .log: "log"
        case .page: "page"
        case .value: "value"
        case .checkpoint: "checkpoint"
        }
    }
}

/// The location of a frame in the file: its offset and total length (header + payload).
public struct FrameAddress: Hashable, Sendable, CustomStringConvertible {
    /// Where the frame starts.
    public var offset: UInt64
    /// Its whole length, header included.
    public var length: UInt32

    /// The frame at `offset`, `length` bytes long.
    ///
    /// - Parameters:
    ///   - offset: Where the frame starts in the file.
    ///   - length: The frame's length, header included.
    public init(offset: UInt64, length: UInt32) {
        self.offset = offset
        self.length = length
    }

    /// The offset just past the frame. Saturates at `UInt64.max` rather than trapping:
    /// addresses are read from disk, and a crafted one near 2^64 must fail the bounds check
    /// that compares its end (`end <= fileSize`, `end <= parent.offset`), not crash it.
    public var end: UInt64 {
        let (sum, overflow) = offset.addingReportingOverflow(UInt64(length))
        return overflow ? .max : sum
    }
    public var description: String { "\(offset)+\(length)" }
}

/// The fixed 24-byte header in front of every frame payload.
///
/// ```
/// 0  u64 checksum   XXH64(bytes 8 ..< 24+storedLength, seed: salt ^ offset)
/// 8  u8  'S' (0x53)
/// 9  u8  'F' (0x46)
/// 10 u8  type       FrameType
/// 11 u8  flags      bit 0: payload is LZ4-compressed
/// 12 u32 storedLength  payload bytes on disk
/// 16 u32 rawLength     payload bytes after decompression
/// 20 u32 pendingBefore  bytes before this frame its writer had not yet synced (format 3)
/// ```
public struct FrameHeader: Sendable, Equatable {
    /// The header's length.
    public static let size = 24
    /// Bytes 8 and 9 of every frame: "SF".
    public static let magic: (UInt8, UInt8) = (0x53, 0x46)
    /// The flag bit of an LZ4-compressed payload.
    public static let compressedFlag: UInt8 = 1
    /// Frame payloads are limited so that one frame always fits in memory on 32-bit math.
    public static let maxPayload = Int(UInt32.max) - size
    /// The largest payload stored compressed: liblz4's block limit (`LZ4_MAX_INPUT_SIZE`).
    /// Larger payloads are stored raw.
    public static let maxCompressedRawLength = 0x7E00_0000
    /// LZ4 cannot expand its input more than 255 times (a match-length byte of 255 yields
    /// at most 255 bytes), so a compressed frame claiming more is crafted or damaged: it is
    /// refused before anything is allocated for it.
    public static let maxExpansion = 255

    /// The largest raw length a compressed payload of `storedLength` bytes may claim.
    ///
    /// - Parameter storedLength: The compressed payload's length.
    /// - Returns: The bound a decoder checks the claimed length against before allocating.
    public static func maxRawLength(storedLength: UInt32) -> Int {
        min(maxCompressedRawLength, Int(storedLength) * maxExpansion + maxExpansion)
    }

    /// XXH64 of the rest of the frame, seeded with the salt and offset.
    public var checksum: UInt64
    /// What the payload is.
    public var type: FrameType
    /// Bit 0: the payload is compressed.
    public var flags: UInt8
    /// Payload bytes on disk.
    public var storedLength: UInt32
    /// Payload bytes after decompression.
    public var rawLength: UInt32
    /// How many bytes before this frame its writer had not yet synced when it wrote it
    /// (format 3; zero in older files, whose writers synced each commit before the next).
    /// Recovery uses it to tell an interrupted group commit from damage (FORMAT.md §7).
    public var pendingBefore: UInt32 = 0

    /// The offset up to which the file was durable when the frame at `offset` was
    /// written: a bad frame before it cannot be an interrupted write.
    ///
    /// - Parameter offset: Where this frame starts.
    /// - Returns: `offset − pendingBefore`, never below zero (the field is read from disk).
    public func durableHorizon(at offset: UInt64) -> UInt64 {
        offset - min(offset, UInt64(pendingBefore))
    }

    /// Whether the payload is LZ4-compressed.
    public var isCompressed: Bool { flags & Self.compressedFlag != 0 }
    /// Header and payload.
    public var frameLength: Int { Self.size + Int(storedLength) }

    /// Parses and sanity-checks a header; the checksum is verified separately, once the
    /// payload is at hand.
    static func parse(_ bytes: UnsafeRawBufferPointer, context: CorruptionContext) throws -> FrameHeader {
        var reader = ByteReader(bytes, context: context)
        let checksum = try reader.u64("frame checksum")
        let m0 = try reader.u8(), m1 = try reader.u8()
        guard (m0, m1) == magic else { throw context.error("frame magic is \(hex(m0))\(hex(m1)), expected 5346") }
        let rawType = try reader.u8()
        guard let type = FrameType(rawValue: rawType) else { throw context.error("unknown frame type \(rawType)") }
        let flags = try reader.u8()
        guard flags & ~compressedFlag == 0 else { throw context.error("unknown frame flags \(hex(flags))") }
        let stored = try reader.u32("stored length")
        let raw = try reader.u32("raw length")
        let pendingBefore = try reader.u32("pending before")
        guard Int(stored) <= maxPayload else { throw context.error("stored length \(stored) is too large") }
        if flags & compressedFlag == 0, raw != stored {
            throw context.error("uncompressed frame has raw length \(raw) but stored length \(stored)")
        }
        if flags & compressedFlag != 0, Int(raw) > maxRawLength(storedLength: stored) {
            throw context.error("compressed frame claims \(raw) raw bytes from \(stored) stored; LZ4 allows at most \(maxRawLength(storedLength: stored))")
        }
        return FrameHeader(checksum: checksum, type: type, flags: flags, storedLength: stored, rawLength: raw, pendingBefore: pendingBefore)
    }
}

@inlinable func hex(_ byte: UInt8) -> String {
    let digits = Array("0123456789abcdef")
    return String([digits[Int(byte >> 4)], digits[Int(byte & 15)]])
}

/// Encoding and verification of whole frames.
enum Frame {
    /// The seed of a frame's checksum: the per-file salt mixed with the frame's offset, so a
    /// frame copied to another place or left over from another file never verifies.
    @inline(__always)
    static func seed(salt: UInt64, offset: UInt64) -> UInt64 { salt ^ offset }

    /// Builds the bytes of one frame to be written at `offset`. The payload is compressed
    /// with LZ4 when `compress` is set and that saves at least 1/8.
    ///
    /// `durableUpTo` is the offset up to which the file is known synced as the frame is
    /// written (format 3: commits share syncs, so frames are written ahead of the last
    /// sync); nil means everything before the frame is (formats 1 and 2, and files being
    /// built, which are synced whole before use). A stale, lower value only makes recovery
    /// more lenient, never wrong.
    static func encode(_ type: FrameType, payload: UnsafeRawBufferPointer, offset: UInt64, salt: UInt64, compress: Bool,
                       durableUpTo: UInt64? = nil) -> [UInt8] {
        var bytes = unsealed(type, payload: payload, compress: compress)
        bytes.withUnsafeMutableBytes { seal($0, at: offset, salt: salt, durableUpTo: durableUpTo) }
        return bytes
    }

    /// A frame's bytes before it has a place in the file: the header and the payload
    /// (compressed when `compress` is set and that saves at least 1/8), with the checksum
    /// and `pendingBefore` left for `seal`, which needs the offset. The costly part of
    /// encoding a frame, done here, needs no offset: a checkpoint written beside the writer
    /// compresses its pages first and places them later (`CheckpointPass`).
    ///
    /// The payload is compressed straight into the frame's own array, left uninitialized:
    /// zeroing a buffer LZ4 then overwrites, and copying its output in after the header,
    /// were a memset and a memmove of the whole payload (perf, W1's insert.single-tx at 1M,
    /// whose one commit logs ~100 MB: with the page faults of those buffers, ~5% of it).
    static func unsealed(_ type: FrameType, payload: UnsafeRawBufferPointer, compress: Bool) -> [UInt8] {
        let room = max(payload.count, compress ? LZ4.compressedBound(payload.count) ?? 0 : 0)
        return [UInt8](unsafeUninitializedCapacity: FrameHeader.size + room) { buffer, count in
            let frame = UnsafeMutableRawBufferPointer(buffer)
            let body = UnsafeMutableRawBufferPointer(rebasing: frame[FrameHeader.size...])
            let compressed = compress ? LZ4.compressIfSmaller(payload, into: body) : nil
            var writer = InPlaceWriter(frame)
            writer.littleEndian(UInt64(0))   // the checksum, set by `seal`
            writer.u8(FrameHeader.magic.0)
            writer.u8(FrameHeader.magic.1)
            writer.u8(type.rawValue)
            writer.u8(compressed == nil ? 0 : FrameHeader.compressedFlag)
            writer.littleEndian(UInt32(compressed ?? payload.count))
            writer.littleEndian(UInt32(payload.count))
            writer.littleEndian(UInt32(0))   // pendingBefore, set by `seal`
            if compressed == nil { writer.raw(payload) }
            count = FrameHeader.size + (compressed ?? payload.count)
        }
    }

    /// Completes an `unsealed` frame for its place at `offset`: records how much before it
    /// was not yet synced (`durableUpTo`, as in `encode`) and its checksum.
    static func seal(_ frame: UnsafeMutableRawBufferPointer, at offset: UInt64, salt: UInt64, durableUpTo: UInt64?) {
        let pendingBefore = UInt32(clamping: durableUpTo.map { offset - min(offset, $0) } ?? 0)
        frame.storeBytes(of: pendingBefore.littleEndian, toByteOffset: 20, as: UInt32.self)
        let checksum = XXH64.hash(UnsafeRawBufferPointer(rebasing: frame[8...]), seed: seed(salt: salt, offset: offset))
        frame.storeBytes(of: checksum.littleEndian, toByteOffset: 0, as: UInt64.self)
    }

    static func encode(_ type: FrameType, payload: [UInt8], offset: UInt64, salt: UInt64, compress: Bool, durableUpTo: UInt64? = nil) -> [UInt8] {
        payload.withUnsafeBytes { encode(type, payload: $0, offset: offset, salt: salt, compress: compress, durableUpTo: durableUpTo) }
    }

    /// Whether the stored checksum matches `frame` (header and payload) at `offset`.
    static func checksumMatches(_ frame: UnsafeRawBufferPointer, header: FrameHeader, offset: UInt64, salt: UInt64) -> Bool {
        let covered = UnsafeRawBufferPointer(rebasing: frame[8 ..< header.frameLength])
        return XXH64.hash(covered, seed: seed(salt: salt, offset: offset)) == header.checksum
    }

    static func payload(of frame: [UInt8], header: FrameHeader, offset: UInt64, salt: UInt64, context: CorruptionContext) throws -> [UInt8] {
        try frame.withUnsafeBytes { try payload(of: $0, header: header, offset: offset, salt: salt, context: context) }
    }

    /// Verifies the checksum of a complete frame and returns its decompressed payload.
    static func payload(of frame: UnsafeRawBufferPointer, header: FrameHeader, offset: UInt64, salt: UInt64, context: CorruptionContext) throws -> [UInt8] {
        guard frame.count >= header.frameLength else { throw context.error("frame is truncated (\(frame.count) of \(header.frameLength) bytes)") }
        guard checksumMatches(frame, header: header, offset: offset, salt: salt) else {
            throw context.error("\(header.type) frame checksum mismatch")
        }
        let stored = UnsafeRawBufferPointer(rebasing: frame[FrameHeader.size ..< header.frameLength])
        guard header.isCompressed else { return Array(stored) }
        guard let raw = LZ4.decompress(stored, rawLength: Int(header.rawLength)) else {
            throw context.error("LZ4 payload does not decompress to \(header.rawLength) bytes")
        }
        return raw
    }
}
