import Foundation
import Testing
@testable import StrataEngine

/// Writes `bytes` into the file at `offset`, past its end or over what is there.
func overwrite(_ path: String, at offset: UInt64, with bytes: [UInt8]) throws {
    let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
    defer { try? handle.close() }
    try handle.seek(toOffset: offset)
    try handle.write(contentsOf: bytes)
}

/// Files and calls crafted to break the engine: each must end in an error a user can act
/// on, never a trap, a hang or a huge allocation.
@Suite("Hostile files and misuse")
struct HostileInputTests {
    /// A compressed frame whose raw length LZ4 cannot produce from its stored bytes.
    static func craftedCompressedFrame(rawLength: UInt32, offset: UInt64, salt: UInt64) -> [UInt8] {
        var frame = Frame.encode(.log, payload: [UInt8](repeating: 1, count: 4096), offset: offset, salt: salt, compress: true)
        #expect(frame[11] == FrameHeader.compressedFlag)
        withUnsafeBytes(of: rawLength.littleEndian) { frame.replaceSubrange(16 ..< 20, with: $0) }
        let checksum = frame.withUnsafeBytes { XXH64.hash(UnsafeRawBufferPointer(rebasing: $0[8...]), seed: Frame.seed(salt: salt, offset: offset)) }
        withUnsafeBytes(of: checksum.littleEndian) { frame.replaceSubrange(0 ..< 8, with: $0) }
        return frame
    }

    @Test("a checksum-valid compressed frame claiming 2^31 raw bytes is refused before allocating", arguments: [UInt32(1) << 31, UInt32.max, 1 << 20])
    func hugeRawLengthIsRefused(rawLength: UInt32) throws {
        let frame = Self.craftedCompressedFrame(rawLength: rawLength, offset: 4096, salt: 7)
        let context = CorruptionContext(path: "f", offset: 4096, structure: "frame")
        #expect {
            try frame.withUnsafeBytes { raw in
                let header = try FrameHeader.parse(raw, context: context)
                _ = try Frame.payload(of: raw, header: header, offset: 4096, salt: 7, context: context)
            }
        } throws: { error in
            guard case StrataError.corruption(_, 4096, let reason) = error else { return false }
            return reason.contains("LZ4 allows at most")
        }
    }

    @Test("a file whose log frame claims 2^31 raw bytes does not open, naming the offset")
    func fileWithHugeRawLengthFailsToOpen() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file()
        var options = smallOptions()
        options.checkpointOnClose = false
        let db = try Database(path: path, options: options)
        try db.write { try $0.createTree("t") }
        try db.write { tx in try tx.put([UInt8](repeating: 1, count: 100), forKey: Key(1).bytes, in: "t") }
        let salt = try db.snapshot().store.salt
        let end = db.writerCounters().end
        try db.close()
        // A crafted commit, checksum-valid, followed by a valid one: damage, not a torn tail.
        let crafted = Self.craftedCompressedFrame(rawLength: 1 << 31, offset: end, salt: salt)
        var next = LogBatchWriter()
        [UInt8]([2]).withUnsafeBytes { value in Key(2).bytes.withUnsafeBytes { next.put(tree: "t", key: $0, value: value) } }
        let following = Frame.encode(.log, payload: next.takePayload(sequence: 4, timeMilliseconds: 0), offset: end + UInt64(crafted.count), salt: salt, compress: false)
        try overwrite(path, at: end, with: crafted + following)
        #expect {
            try Database(path: path)
        } throws: { error in
            guard case StrataError.corruption(_, end, let reason) = error else { return false }
            return reason.contains("raw bytes")
        }
    }

    @Test("a checksum-valid commit that does not apply (a put into a missing tree) is corruption at its offset, not treeNotFound")
    func inconsistentLogFrame() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file()
        var options = smallOptions()
        options.checkpointOnClose = false
        let db = try Database(path: path, options: options)
        try db.write { try $0.createTree("t") }
        let salt = try db.snapshot().store.salt
        let end = db.writerCounters().end
        try db.close()
        var batch = LogBatchWriter()
        [UInt8]([1]).withUnsafeBytes { value in Key(1).bytes.withUnsafeBytes { batch.put(tree: "no such tree", key: $0, value: value) } }
        let frame = Frame.encode(.log, payload: batch.takePayload(sequence: 2, timeMilliseconds: 0), offset: end, salt: salt, compress: false)
        try overwrite(path, at: end, with: frame)
        #expect {
            try Database(path: path)
        } throws: { error in
            guard case StrataError.corruption(_, end, let reason) = error else { return false }
            return reason.contains("does not apply") && reason.contains("no such tree")
        }
    }

    @Test("a write started inside a write on the same thread throws nestedTransaction instead of deadlocking")
    func nestedWriteIsRefused() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file()
        let db = try Database(path: path)
        #expect(throws: StrataError.nestedTransaction(path: path)) {
            try db.write { tx in
                try tx.createTree("t")
                try db.write { try $0.createTree("u") }
            }
        }
        // The outer transaction rolled back and the gate is free again.
        #expect(try !db.snapshot().hasTree("t"))
        try db.write { try $0.createTree("t") }
        #expect(try db.snapshot().hasTree("t"))
    }

    @Test("checkpoint, compact and close inside a write throw nestedTransaction", arguments: ["checkpoint", "compact", "close"])
    func maintenanceInsideWriteIsRefused(operation: String) throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file()
        let db = try Database(path: path)
        #expect(throws: StrataError.nestedTransaction(path: path)) {
            try db.write { tx in
                try tx.createTree("t")
                switch operation {
                case "checkpoint": try db.checkpoint()
                case "compact": try db.compact()
                default: try db.close()
                }
            }
        }
        try db.close()
    }

    @Test("writes from other threads wait their turn; only the same thread is refused")
    func otherThreadsWait() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let db = try Database(path: directory.file())
        try db.write { try $0.createTree("t") }
        DispatchQueue.concurrentPerform(iterations: 8) { i in
            for j in 0 ..< 25 {
                try! db.write { tx in try tx.put([1], forKey: Key(i, j).bytes, in: "t") }
            }
        }
        #expect(try db.snapshot().count(in: "t") == 200)
    }

    @Test("after compaction either checkpoint slot alone opens the file", arguments: [0, 1])
    func compactedFileSurvivesOneDamagedSlot(slot: Int) throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file()
        let db = try Database(path: path, options: smallOptions())
        try db.write { tx in
            try tx.createTree("t")
            for i in 0 ..< 500 { try tx.put(Array("value \(i)".utf8), forKey: Key(i).bytes, in: "t") }
        }
        try db.compact()
        try db.close()
        try overwrite(path, at: FileHeader.slotOffsets[slot] + 3, with: [0xFF, 0xEE])
        let reopened = try Database(path: path)
        #expect(try reopened.snapshot().count(in: "t") == 500)
        #expect(try reopened.snapshot().get(Key(499).bytes, in: "t") == Array("value 499".utf8))
        try reopened.close()
    }

    @Test("a new file survives one damaged slot too", arguments: [0, 1])
    func newFileSurvivesOneDamagedSlot(slot: Int) throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file()
        let db = try openWithoutCheckpointOnClose(path)
        try db.write { try $0.createTree("t") }
        try db.close()
        try overwrite(path, at: FileHeader.slotOffsets[slot], with: [0xFF])
        #expect(try Database(path: path).snapshot().hasTree("t"))
    }

    @Test("a path whose directory part is a file is reported for that path, not a temporary one")
    func unusablePathNamesItself() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let blocker = directory.file("plain-file")
        FileManager.default.createFile(atPath: blocker, contents: Data([1]))
        let path = blocker + "/db.strata"
        #expect {
            try Database(path: path)
        } throws: { error in
            guard case StrataError.io(_, let reported, ENOTDIR) = error else { return false }
            return reported == path
        }
    }
}

/// Addresses read from disk near 2^64: found by the `page` fuzz target (a branch naming a
/// child at offset 0x...ff traps computing its end). Every decoder that bounds an address
/// must fail cleanly.
@Suite("Addresses near 2^64")
struct OverflowingAddressTests {
    static let context = CorruptionContext(path: "f", offset: 1 << 20, structure: "page")
    static let near: UInt64 = .max - 7

    static func isCorruption(_ error: any Error) -> Bool {
        if case StrataError.corruption = error { return true }
        return false
    }

    @Test("a branch whose child ends past 2^64 is corrupt")
    func branchChild() {
        var w = ByteWriter()
        w.u8(PageCodec.branchKind)
        w.varint(2)
        for offset in [Self.near, 4096] { w.u64(offset); w.u32(100) }
        w.lengthPrefixed([0x20, 1])
        #expect {
            try PageCodec.decode(w.bytes, address: FrameAddress(offset: 1 << 20, length: 200), limits: NodeLimits(pageSize: 4096), context: Self.context)
        } throws: { Self.isCorruption($0) }
    }

    @Test("the crash input the fuzzer found is corrupt")
    func fuzzerCrashInput() {
        let bytes: [UInt8] = [0x02, 0x04, 0xbf, 0x37, 0x19, 0, 0, 0, 0, 0, 0x12, 0x07, 0, 0, 0x7c, 0xaf, 0x1f, 0, 0, 0, 0, 0, 0x21, 0x07, 0, 0, 0x30, 0, 0x45]
            + [UInt8](repeating: 0xff, count: 147)
        #expect {
            try PageCodec.decode(bytes, address: FrameAddress(offset: 1 << 40, length: UInt32(bytes.count + 24)), limits: NodeLimits(pageSize: 4096), context: Self.context)
        } throws: { Self.isCorruption($0) }
    }

    @Test("a leaf whose overflow value ends past 2^64 is corrupt")
    func leafOverflow() {
        var w = ByteWriter()
        w.u8(LeafTag.pageKind)
        w.lengthPrefixed(Key(1).bytes)
        w.u8(LeafTag.overflow)
        w.u64(Self.near)
        w.u32(100)
        w.u32(50)
        #expect {
            try PageCodec.decode(w.bytes, address: FrameAddress(offset: 1 << 20, length: 200), limits: NodeLimits(pageSize: 4096), context: Self.context)
        } throws: { Self.isCorruption($0) }
    }

    @Test("a checkpoint whose root or previous checkpoint ends past 2^64 is corrupt", arguments: [true, false])
    func checkpointAddresses(inRoot: Bool) {
        let address = FrameAddress(offset: Self.near, length: 100)
        let record = CheckpointRecord(sequence: 1, timeMilliseconds: 0, previous: inRoot ? nil : address,
                                      trees: [.init(name: "t", entryCount: 1, root: inRoot ? address : nil)])
        #expect { try CheckpointRecord.decode(record.encoded(), at: 1 << 20, context: Self.context) } throws: { Self.isCorruption($0) }
    }

    @Test("an address's end saturates instead of trapping")
    func saturatingEnd() {
        #expect(FrameAddress(offset: .max - 1, length: 10).end == .max)
        #expect(FrameAddress(offset: 4096, length: 10).end == 4106)
    }
}
