import Foundation
import Testing
@testable import StrataEngine

@Suite("Checksums and frames")
struct FrameTests {
    @Test("XXH64 matches the reference vectors published in FORMAT.md")
    func xxh64Vectors() {
        #expect(XXH64.hash([UInt8]()) == 0xEF46_DB37_51D8_E999)
        #expect(XXH64.hash([UInt8]("a")) == 0xD24E_C4F1_A98C_6E5B)
        #expect(XXH64.hash([UInt8]("abc")) == 0x44BC_2CF5_AD77_0999)
        #expect(XXH64.hash(Array(0 ..< 100), seed: 0x9E37_79B9_7F4A_7C15) == 0x3B97_D91E_BA03_E785)
    }

    @Test("a frame round-trips raw and compressed payloads")
    func roundTrip() throws {
        let small = [UInt8]("tiny")
        let repetitive = [UInt8](repeating: 7, count: 5000)
        for payload in [small, repetitive] {
            let frame = Frame.encode(.page, payload: payload, offset: 4096, salt: 42, compress: true)
            let context = CorruptionContext(path: "t", offset: 4096, structure: "frame")
            let header = try frame.withUnsafeBytes { try FrameHeader.parse($0, context: context) }
            #expect(header.type == .page)
            #expect(header.isCompressed == (payload.count > 64))
            #expect(Int(header.rawLength) == payload.count)
            #expect(try Frame.payload(of: frame, header: header, offset: 4096, salt: 42, context: context) == payload)
        }
    }

    @Test("compression is skipped when it does not pay")
    func incompressibleStaysRaw() throws {
        var rng = SeededGenerator(seed: 1)
        let noise = (0 ..< 4000).map { _ in UInt8.random(in: 0 ... 255, using: &rng) }
        let frame = Frame.encode(.value, payload: noise, offset: 4096, salt: 1, compress: true)
        #expect(frame.count == FrameHeader.size + noise.count)
        #expect(frame[11] == 0)
    }

    @Test("the checksum binds a frame to its offset and its file's salt")
    func checksumCoversOffsetAndSalt() throws {
        let frame = Frame.encode(.log, payload: [1, 2, 3], offset: 8192, salt: 99, compress: false)
        let context = CorruptionContext(path: "t", offset: 0, structure: "frame")
        let header = try frame.withUnsafeBytes { try FrameHeader.parse($0, context: context) }
        frame.withUnsafeBytes { raw in
            #expect(Frame.checksumMatches(raw, header: header, offset: 8192, salt: 99))
            #expect(!Frame.checksumMatches(raw, header: header, offset: 8193, salt: 99))
            #expect(!Frame.checksumMatches(raw, header: header, offset: 8192, salt: 98))
        }
    }

    @Test("a damaged header names what is wrong")
    func badHeaders() {
        let frame = Frame.encode(.log, payload: [1, 2, 3], offset: 4096, salt: 1, compress: false)
        let context = CorruptionContext(path: "f", offset: 4096, structure: "frame")
        for (index, value, message) in [(8, UInt8(0), "magic"), (10, 9, "unknown frame type"), (11, 0x80, "flags")] {
            var bad = frame
            bad[index] = value
            #expect {
                try bad.withUnsafeBytes { _ = try FrameHeader.parse($0, context: context) }
            } throws: { error in
                guard case StrataError.corruption(_, 4096, let reason) = error else { return false }
                return reason.contains(message)
            }
        }
    }

    @Test("a frame records how far before it the file was synced; a claim past the file's start is bounded")
    func durableHorizon() throws {
        let grouped = Frame.encode(.log, payload: [1, 2, 3], offset: 9000, salt: 1, compress: false, durableUpTo: 5000)
        let context = CorruptionContext(path: "f", offset: 9000, structure: "frame")
        let header = try grouped.withUnsafeBytes { try FrameHeader.parse($0, context: context) }
        #expect(header.pendingBefore == 4000)
        #expect(header.durableHorizon(at: 9000) == 5000)
        let alone = try Frame.encode(.log, payload: [1], offset: 9000, salt: 1, compress: false).withUnsafeBytes {
            try FrameHeader.parse($0, context: context)
        }
        #expect(alone.pendingBefore == 0)
        #expect(alone.durableHorizon(at: 9000) == 9000)
        // The field is read from disk: a crafted value larger than the offset gives 0, not a trap.
        #expect(header.durableHorizon(at: 100) == 0)
    }

    @Test("the file header and checkpoint slots round-trip and reject damage")
    func headerAndSlots() throws {
        let header = FileHeader.new(pageSize: 4096)
        let bytes = header.encoded()
        #expect(try FileHeader.decode(bytes, path: "p") == header)
        var damaged = bytes
        damaged[20] ^= 1
        #expect(throws: StrataError.self) { try FileHeader.decode(damaged, path: "p") }
        #expect(throws: StrataError.notAStrataFile(path: "p")) { try FileHeader.decode(Array("hello world, not a database".utf8) + [UInt8](repeating: 0, count: 40), path: "p") }

        let slot = CheckpointSlot(generation: 7, checkpoint: FrameAddress(offset: 5000, length: 80), sequence: 12)
        #expect(CheckpointSlot.decode(slot.encoded(salt: 3), salt: 3) == slot)
        #expect(CheckpointSlot.decode(slot.encoded(salt: 3), salt: 4) == nil)
        var torn = slot.encoded(salt: 3)
        torn[9] ^= 0xFF
        #expect(CheckpointSlot.decode(torn, salt: 3) == nil)
    }

    @Test("leaf and branch pages round-trip and their decoders reject damage")
    func pages() throws {
        let limits = NodeLimits(pageSize: 4096)
        let leaf = LeafNode(owner: 1)
        for i in 0 ..< 20 {
            let key = Key(i).bytes, value = [UInt8](repeating: UInt8(i), count: i * 3)
            key.withUnsafeBytes { k in value.withUnsafeBytes { v in leaf.insert(at: i, key: k, value: .inline(v), limits: limits) } }
        }
        let address = FrameAddress(offset: 1 << 20, length: 100)
        let context = CorruptionContext(path: "p", offset: address.offset, structure: "page")
        guard case .leaf(let decoded) = try PageCodec.decode(leaf.storage, address: address, limits: limits, context: context) else {
            Issue.record("expected a leaf")
            return
        }
        #expect(decoded.count == 20)
        #expect(decoded.key(at: 7) == Key(7).bytes)

        let children = [FrameAddress(offset: 4096, length: 50), FrameAddress(offset: 5000, length: 60)]
        let branch = PageCodec.encodeBranch(keys: [Key(10).bytes], children: children)
        guard case .branch(let b) = try PageCodec.decode(branch, address: address, limits: limits, context: context) else {
            Issue.record("expected a branch")
            return
        }
        #expect(b.keys == [Key(10).bytes])

        // A child reference that points forward could loop; it is refused.
        let forward = PageCodec.encodeBranch(keys: [Key(10).bytes], children: [children[0], FrameAddress(offset: 1 << 21, length: 60)])
        #expect(throws: StrataError.self) { try PageCodec.decode(forward, address: address, limits: limits, context: context) }
        // Keys out of order are refused.
        var swapped = leaf.storage
        let first = Int(leaf.starts[0]), second = Int(leaf.starts[1]), third = Int(leaf.starts[2])
        swapped.replaceSubrange(first ..< third, with: Array(leaf.storage[second ..< third]) + Array(leaf.storage[first ..< second]))
        #expect(throws: StrataError.self) { try PageCodec.decode(swapped, address: address, limits: limits, context: context) }
        // Every truncation of a page is refused, never a crash.
        for cut in 1 ..< leaf.storage.count {
            let partial = Array(leaf.storage[..<cut])
            if (try? PageCodec.decode(partial, address: address, limits: limits, context: context)) != nil {
                // A cut exactly between entries is a valid shorter leaf.
                #expect(leaf.starts.contains(UInt32(cut)))
            }
        }
    }

    @Test("log batches and checkpoint records round-trip")
    func records() throws {
        var log = LogBatchWriter()
        log.createTree("a")
        try [UInt8]("k").withUnsafeBytes { k in try [UInt8]("v").withUnsafeBytes { v in
            log.put(tree: "a", key: k, value: v)
            log.put(tree: "a", key: k, storedAt: FrameAddress(offset: 4096, length: 5_024), length: 5_000)
            log.delete(tree: "a", key: k)
            _ = try #require(Optional(0))
        } }
        let payload = log.takePayload(sequence: 5, timeMilliseconds: 1234)
        #expect(log.isEmpty, "the writer starts over")
        var seen: [String] = []
        let header = try LogBatchReader.read(payload, context: CorruptionContext(path: "", offset: 9_120, structure: "log")) { op in
            switch op {
            case .createTree(let name): seen.append("create \(name)")
            case .put(let tree, let key, let value): seen.append("put \(tree) \(String(decoding: key, as: UTF8.self))=\(String(decoding: value, as: UTF8.self))")
            case .putStored(let tree, let key, let address, let length):
                seen.append("put \(tree) \(String(decoding: key, as: UTF8.self)) stored at \(address.offset)+\(address.length), \(length) bytes")
            case .delete(let tree, _): seen.append("delete \(tree)")
            case .dropTree(let name): seen.append("drop \(name)")
            }
        }
        #expect(header == LogBatchHeader(sequence: 5, timeMilliseconds: 1234, operationCount: 4))
        #expect(seen == ["create a", "put a k=v", "put a k stored at 4096+5024, 5000 bytes", "delete a"])
        // A stored value's frame must lie before the log frame that names it.
        #expect(throws: StrataError.self) {
            try LogBatchReader.read(payload, context: CorruptionContext(path: "", offset: 9_119, structure: "log")) { _ in }
        }

        // An offset near 2^64 is refused as damage, not added to its length (found by the log fuzz target).
        var crafted = LogBatchWriter()
        crafted.createTree("a")
        [UInt8]("k").withUnsafeBytes { k in
            crafted.put(tree: "a", key: k, storedAt: FrameAddress(offset: .max - 10, length: 5_024), length: 5_000)
        }
        #expect(throws: StrataError.self) {
            try LogBatchReader.read(crafted.takePayload(sequence: 1, timeMilliseconds: 0), context: CorruptionContext(path: "", offset: 9_120, structure: "log")) { _ in }
        }

        let record = CheckpointRecord(sequence: 9, timeMilliseconds: 5, previous: FrameAddress(offset: 4096, length: 40),
                                      trees: [.init(name: "t", entryCount: 3, root: FrameAddress(offset: 5000, length: 99)), .init(name: "e", entryCount: 0, root: nil)])
        let context = CorruptionContext(path: "", offset: 9000, structure: "checkpoint")
        #expect(try CheckpointRecord.decode(record.encoded(), at: 9000, context: context) == record)
        #expect(throws: StrataError.self) { try CheckpointRecord.decode(record.encoded(), at: 5000, context: context) }
    }
}
