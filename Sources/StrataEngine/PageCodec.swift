/// Encoding of B-tree nodes as page-frame payloads, and their validating decoders.
/// Layouts: FORMAT.md, "Leaf pages" and "Branch pages".
enum PageCodec {
    static let branchKind: UInt8 = 2

    /// The payload of a leaf page. Inline values longer than `limits.maxInlineValue` are
    /// handed to `writeOverflow`, which stores them in value frames and returns where.
    static func encodeLeaf(_ leaf: LeafNode, limits: NodeLimits, writeOverflow: (UnsafeRawBufferPointer) throws -> FrameAddress) throws -> [UInt8] {
        let needsOverflow = (0 ..< leaf.count).contains { i in
            leaf.withEntry(i) { _, value in
                if case .inline(let bytes) = value { return bytes.count > limits.maxInlineValue }
                return false
            }
        }
        guard needsOverflow else { return leaf.pagePayload }
        let out = LeafNode(owner: 0)
        for i in 0 ..< leaf.count {
            try leaf.withEntry(i) { key, value in
                if case .inline(let bytes) = value, bytes.count > limits.maxInlineValue {
                    let address = try writeOverflow(bytes)
                    out.insert(at: out.count, key: key, value: .overflow(address, length: UInt32(bytes.count)), limits: limits)
                } else {
                    out.insert(at: out.count, key: key, value: value, limits: limits)
                }
            }
        }
        return out.storage
    }

    static func encodeBranch(keys: [[UInt8]], children: [FrameAddress]) -> [UInt8] {
        var w = ByteWriter(capacity: 1 + children.count * 16 + keys.reduce(0) { $0 + $1.count + 2 })
        w.u8(branchKind)
        w.varint(children.count)
        for child in children {
            w.u64(child.offset)
            w.u32(child.length)
        }
        for key in keys { w.lengthPrefixed(key) }
        return w.bytes
    }

    /// Decodes a page payload read from `address`, checking every bound and that keys are
    /// strictly ascending and children lie before their parent (so no reference loops).
    static func decode(_ payload: [UInt8], address: FrameAddress, limits: NodeLimits, context: CorruptionContext) throws -> Node {
        guard let kind = payload.first else { throw context.error("empty page") }
        switch kind {
        case LeafTag.pageKind:
            return .leaf(try decodeLeaf(payload, address: address, limits: limits, context: context))
        case branchKind:
            return .branch(try decodeBranch(payload, address: address, limits: limits, context: context))
        default:
            throw context.error("unknown page kind \(kind)")
        }
    }

    static func decodeLeaf(_ payload: [UInt8], address: FrameAddress, limits: NodeLimits, context: CorruptionContext) throws -> LeafNode {
        var starts: [UInt32] = []
        let heads = try payload.withUnsafeBytes { raw in
            var r = ByteReader(raw, context: context, position: 1)
            var previous: UnsafeRawBufferPointer?
            while !r.isAtEnd {
                starts.append(UInt32(r.position))
                let key = try r.bytes(try r.length("key length", limit: limits.maxKey), "key")
                if key.isEmpty { throw context.error("empty key in entry \(starts.count - 1)") }
                if let previous, compareBytes(previous, key) >= 0 {
                    throw context.error("keys out of order at entry \(starts.count - 1)")
                }
                previous = key
                switch try r.u8("value tag") {
                case LeafTag.inline:
                    _ = try r.bytes(try r.length("value length", limit: limits.maxInlineValue), "value")
                case LeafTag.overflow:
                    let offset = try r.u64("overflow offset")
                    let length = try r.u32("overflow frame length")
                    _ = try r.u32("overflow value length")
                    guard offset >= FileHeader.dataStart, FrameAddress(offset: offset, length: length).end <= address.offset else {
                        throw context.error("overflow reference \(offset)+\(length) does not lie before its leaf")
                    }
                case let tag:
                    throw context.error("unknown value tag \(tag)")
                }
            }
            // The keys were checked above: in order, each within the payload.
            return KeyHeads(count: starts.count) { LeafNode.key(in: raw, at: Int(starts[$0])) }
        }
        return LeafNode(owner: 0, storage: payload, starts: starts, heads: heads, pageBytes: payload.count)
    }

    static func decodeBranch(_ payload: [UInt8], address: FrameAddress, limits: NodeLimits, context: CorruptionContext) throws -> BranchNode {
        try payload.withUnsafeBytes { raw in
            var r = ByteReader(raw, context: context, position: 1)
            let count = try r.length("child count", limit: raw.count / 12)
            guard count >= 2 else { throw context.error("branch has \(count) children, needs at least 2") }
            var children: [NodeRef] = []
            children.reserveCapacity(count)
            for _ in 0 ..< count {
                let child = FrameAddress(offset: try r.u64("child offset"), length: try r.u32("child length"))
                guard child.offset >= FileHeader.dataStart, child.end <= address.offset, Int(child.length) > FrameHeader.size else {
                    throw context.error("child reference \(child) does not lie before its parent")
                }
                children.append(.stored(child))
            }
            var keys: [[UInt8]] = []
            keys.reserveCapacity(count - 1)
            for i in 0 ..< count - 1 {
                let key = try r.lengthPrefixed("separator key", limit: limits.maxKey)
                if key.isEmpty { throw context.error("empty separator key \(i)") }
                if let last = keys.last, compareBytes(last, key) >= 0 { throw context.error("separator keys out of order at \(i)") }
                keys.append(key)
            }
            guard r.isAtEnd else { throw context.error("\(r.remaining) unexpected bytes after the last separator") }
            return BranchNode(owner: 0, keys: keys, children: children)
        }
    }
}
