/// The payload of a checkpoint frame: the root of every tree as of a commit (FORMAT.md,
/// "Checkpoint frames").
struct CheckpointRecord: Equatable {
    struct Tree: Equatable {
        var name: String
        var entryCount: UInt64
        /// Nil for an empty tree.
        var root: FrameAddress?
    }

    var sequence: UInt64
    var timeMilliseconds: Int64
    /// The checkpoint before this one, or nil (FORMAT.md: a chain storedump can walk).
    var previous: FrameAddress?
    var trees: [Tree]

    func encoded() -> [UInt8] {
        var w = ByteWriter(capacity: 64 + trees.count * 48)
        w.u64(sequence)
        w.u64(UInt64(bitPattern: timeMilliseconds))
        w.u64(previous?.offset ?? 0)
        w.u32(previous?.length ?? 0)
        w.u32(UInt32(trees.count))
        for tree in trees {
            w.lengthPrefixed(tree.name.utf8)
            w.u64(tree.entryCount)
            w.u64(tree.root?.offset ?? 0)
            w.u32(tree.root?.length ?? 0)
        }
        return w.bytes
    }

    static func decode(_ payload: [UInt8], at offset: UInt64, context: CorruptionContext) throws -> CheckpointRecord {
        try payload.withUnsafeBytes { raw in
            var r = ByteReader(raw, context: context)
            let sequence = try r.u64("sequence")
            let time = Int64(bitPattern: try r.u64("time"))
            let previousOffset = try r.u64("previous checkpoint offset")
            let previousLength = try r.u32("previous checkpoint length")
            let count = try r.u32("tree count")
            var trees: [Tree] = []
            for _ in 0 ..< count {
                let nameBytes = try r.bytes(try r.length("tree name length", limit: 255), "tree name")
                guard let name = String(validating: nameBytes, as: UTF8.self) else { throw context.error("tree name is not UTF-8") }
                let entries = try r.u64("entry count")
                let rootOffset = try r.u64("root offset")
                let rootLength = try r.u32("root length")
                var root: FrameAddress?
                if rootOffset != 0 {
                    let address = FrameAddress(offset: rootOffset, length: rootLength)
                    guard rootOffset >= FileHeader.dataStart, address.end <= offset else {
                        throw context.error("root of tree '\(name)' at \(address) does not lie before the checkpoint")
                    }
                    root = address
                }
                trees.append(Tree(name: name, entryCount: entries, root: root))
            }
            guard r.isAtEnd else { throw context.error("\(r.remaining) unexpected bytes after the last tree") }
            let previous = previousOffset == 0 ? nil : FrameAddress(offset: previousOffset, length: previousLength)
            if let previous, previous.offset < FileHeader.dataStart || previous.end > offset {
                throw context.error("previous checkpoint \(previous) does not lie before this one")
            }
            return CheckpointRecord(sequence: sequence, timeMilliseconds: time, previous: previous, trees: trees)
        }
    }
}
