import Foundation

extension Inspector {
    /// A problem `verify` found.
    public struct Fault: Codable, Sendable, Equatable, CustomStringConvertible {
        /// Errors are damage; warnings (a torn tail) are not.
        public enum Severity: String, Codable, Sendable { case error, warning }
        /// How bad it is.
        public var severity: Severity
        /// Where: the frame (or header) holding the damaged bytes.
        public var offset: UInt64
        /// What is wrong.
        public var message: String

        /// The fault as `storedump verify` prints it.
        public var description: String { "\(severity) at offset \(offset): \(message)" }

        /// A fault at `offset`.
        ///
        /// - Parameters:
        ///   - severity: Whether the file is damaged (`.error`) or only unusual (`.warning`).
        ///   - offset: Where in the file.
        ///   - message: What is wrong, in words.
        public init(severity: Severity, offset: UInt64, message: String) {
            self.severity = severity
            self.offset = offset
            self.message = message
        }
    }

    /// Checks the file: every frame's checksum and decoding, the commit chain, and — unless
    /// `quick` — every tree of the latest state: key order within and across pages,
    /// separator keys, equal leaf depth, entry counts and out-of-line values. A torn tail
    /// (an interrupted write the next writable open drops) is a warning, not an error.
    /// `progress` receives (bytes done, bytes total) as frames are checked.
    ///
    /// On a handle that writes, it may run on any thread while commits go on: it checks the
    /// frames committed when it began and the latest state then, and leaves later commits to
    /// the next call.
    ///
    /// - Parameters:
    ///   - quick: Check only the frames and the commit chain, not the trees.
    ///   - progress: Called as bytes are checked.
    /// - Returns: The faults found; empty for a sound file.
    /// - Throws: `StrataError.io` when the file cannot be read at all; damage is reported as
    ///   faults, not thrown.
    public func verify(quick: Bool = false, progress: ((UInt64, UInt64) -> Void)? = nil) throws -> [Fault] {
        var faults: [Fault] = []
        let lastValidEnd = database.writerCounters().end
        // A writable handle's frames past its writer's end are commits made while this runs,
        // perhaps half written yet: not a torn tail, and left to the next verify. A
        // read-only handle reads to the end of the frames, where a torn tail would be.
        let size = database.options.readOnly ? try database.framesEnd() : lastValidEnd
        var lastSequence: UInt64?
        try walkFrames(from: FileHeader.dataStart, upTo: size) { frame in
            progress?(frame.offset, size)
            if let error = frame.error {
                let torn = frame.offset >= lastValidEnd
                faults.append(Fault(severity: torn ? .warning : .error, offset: frame.offset,
                                    message: torn ? "torn tail of \(size - frame.offset) bytes (\(error)); the next writable open drops it" : error))
                return frame.type != "unreadable"
            }
            switch frame.type {
            case FrameType.log.description:
                if let previous = lastSequence, let sequence = frame.sequence, sequence != previous + 1 {
                    faults.append(Fault(severity: .error, offset: frame.offset, message: "commit \(sequence) follows commit \(previous)"))
                }
                lastSequence = frame.sequence
            case FrameType.checkpoint.description:
                if let previous = lastSequence, let sequence = frame.sequence, sequence != previous {
                    faults.append(Fault(severity: .error, offset: frame.offset, message: "checkpoint of commit \(sequence) after commit \(previous)"))
                }
                lastSequence = frame.sequence
            default:
                break
            }
            return true
        }
        progress?(size, size)
        guard !quick else { return faults }
        let snapshot = try database.snapshot()
        for name in snapshot.treeNames {
            faults += Self.check(snapshot.trees[name]!.sortedRuns, of: name)
        }
        // The count covers the write buffer's entries: checked against the tree they make
        // merged (copies by an owner of their own; the snapshot's trees stay as they are).
        var trees = snapshot.trees
        do {
            trees = try TreeChanges.mergingBuffers(of: snapshot.trees, mutator: TreeMutator(store: store, owner: database.nextOwner()))
        } catch {
            faults.append(Fault(severity: .error, offset: 0, message: "the write buffer could not be merged into its tree: \(error)"))
        }
        for name in snapshot.treeNames {
            let state = trees[name]!
            var checker = TreeChecker(store: store, tree: name)
            checker.check(state.root, lower: nil, upper: nil, depth: 1)
            if checker.entries != Int(state.entryCount), checker.faults.isEmpty {
                checker.faults.append(Fault(severity: .error, offset: state.root.flatMap(\.address)?.offset ?? 0,
                                            message: "tree '\(name)' holds \(checker.entries) entries, its count says \(state.entryCount)"))
            }
            faults += checker.faults
        }
        return faults
    }
}

extension Inspector {
    /// Checks that each of a tree's buffered runs holds its keys in ascending order: a
    /// lookup's binary search and a cursor's merge rely on it. (Runs live in memory only,
    /// built from sorted writes; this guards the code that builds them.)
    static func check(_ runs: [BufferRun], of tree: String) -> [Fault] {
        var faults: [Fault] = []
        for (number, run) in runs.enumerated() {
            for i in 1 ..< max(run.count, 1) where compareBytes(run.key(at: i - 1), run.key(at: i)) >= 0 {
                faults.append(Fault(severity: .error, offset: 0, message: "tree '\(tree)': buffered run \(number) holds keys out of order at entry \(i)"))
                break
            }
        }
        return faults
    }
}

extension NodeRef {
    /// Where the node is stored: a page not in memory, or a node kept in memory as
    /// written (`BranchNode.storedAt`, `LeafNode.storedAt`); nil for a node changed since
    /// its last write.
    var address: FrameAddress? {
        switch self {
        case .stored(let address): address
        case .branch(let branch): branch.storedAt
        case .leaf(let leaf): leaf.storedAt
        }
    }

    /// The in-memory node's identity; nil for a page not in memory.
    var identity: ObjectIdentifier? {
        switch self {
        case .stored: nil
        case .branch(let branch): ObjectIdentifier(branch)
        case .leaf(let leaf): ObjectIdentifier(leaf)
        }
    }
}

/// Walks one tree checking the B-tree invariants.
struct TreeChecker {
    let store: PageStore
    let tree: String
    var faults: [Inspector.Fault] = []
    var entries = 0
    var leafDepth: Int?

    init(store: PageStore, tree: String) {
        self.store = store
        self.tree = tree
    }

    mutating func fail(_ ref: NodeRef, _ message: String) {
        faults.append(Inspector.Fault(severity: .error, offset: ref.address?.offset ?? 0, message: "tree '\(tree)': \(message)"))
    }

    /// Checks the subtree at `ref`, whose keys must lie in `lower ..< upper`.
    mutating func check(_ ref: NodeRef?, lower: [UInt8]?, upper: [UInt8]?, depth: Int) {
        guard let ref else { return }
        let node: Node
        do {
            node = try store.resolve(ref, for: .scan)
        } catch {
            fail(ref, "page does not load: \(error)")
            return
        }
        switch node {
        case .leaf(let leaf):
            if let known = leafDepth, known != depth { fail(ref, "leaf at depth \(depth), others at depth \(known)") }
            leafDepth = leafDepth ?? depth
            if leaf.count == 0 { fail(ref, "empty leaf") }
            for i in 0 ..< leaf.count {
                let key = leaf.key(at: i)
                if let lower, compareBytes(key, lower) < 0 { fail(ref, "key \(Key(bytes: key)) below its separator \(Key(bytes: lower))") }
                if let upper, compareBytes(key, upper) >= 0 { fail(ref, "key \(Key(bytes: key)) not below the next separator \(Key(bytes: upper))") }
                leaf.withEntry(i) { _, slot in
                    if case .overflow(let address, _) = slot {
                        do { _ = try store.value(slot) } catch { faults.append(Inspector.Fault(severity: .error, offset: address.offset, message: "tree '\(tree)': out-of-line value of key \(Key(bytes: key)): \(error)")) }
                    }
                }
            }
            entries += leaf.count
        case .branch(let branch):
            for (i, child) in branch.childReferences.enumerated() {
                check(child, lower: i == 0 ? lower : branch.keys[i - 1], upper: i < branch.keys.count ? branch.keys[i] : upper, depth: depth + 1)
            }
        }
    }
}

extension Inspector {
    /// One page, decoded.
    public struct PageInfo: Codable, Sendable, Equatable {
        /// A leaf's entry.
        public struct Entry: Codable, Sendable, Equatable {
            /// The key, decoded.
            public var key: String
            /// The key's bytes, in hex.
            public var keyHex: String
            /// The value's length.
            public var valueLength: Int
            /// The value frame, for values stored out of line.
            public var valueOffset: UInt64?
        }

        /// A branch's child.
        public struct Child: Codable, Sendable, Equatable {
            /// The child's frame.
            public var offset: UInt64
            /// The child frame's length.
            public var length: UInt32
            /// The separator below which this child's keys start (nil for the first child).
            public var lowerKey: String?
        }

        /// The page frame's offset.
        public var offset: UInt64
        /// `leaf` or `branch`.
        public var kind: String
        /// Payload bytes on disk.
        public var storedBytes: UInt32
        /// Payload bytes uncompressed.
        public var rawBytes: Int
        /// A leaf's entries.
        public var entries: [Entry]
        /// A branch's children.
        public var children: [Child]
        /// The frame's bytes in hex, when asked for.
        public var hex: String?
    }

    /// The page frame at `offset`, decoded; `hex` adds the raw frame bytes.
    ///
    /// - Parameters:
    ///   - offset: The page frame's offset.
    ///   - includeHex: Add the frame's raw bytes.
    /// - Returns: The page's kind, entries and checksums.
    /// - Throws: `StrataError.corruption` when no valid page frame starts there; `.io`.
    public func page(at offset: UInt64, hex includeHex: Bool = false) throws -> PageInfo {
        let headerBytes = try store.readBytes(count: FrameHeader.size, at: offset)
        let context = store.context(offset, "page")
        guard headerBytes.count == FrameHeader.size else { throw context.error("no frame at this offset") }
        let header = try headerBytes.withUnsafeBytes { try FrameHeader.parse($0, context: context) }
        guard header.type == .page else { throw context.error("the frame at this offset is a \(header.type) frame, not a page") }
        let address = FrameAddress(offset: offset, length: UInt32(header.frameLength))
        let payload = try store.readPayload(at: address, expecting: .page)
        var info = PageInfo(offset: offset, kind: "", storedBytes: header.storedLength, rawBytes: payload.count, entries: [], children: [])
        switch try PageCodec.decode(payload, address: address, limits: store.limits, context: context) {
        case .leaf(let leaf):
            info.kind = "leaf"
            for i in 0 ..< leaf.count {
                leaf.withEntry(i) { key, slot in
                    let bytes = Array(key)
                    switch slot {
                    case .inline(let value):
                        info.entries.append(.init(key: Key(bytes: bytes).description, keyHex: hexString(bytes), valueLength: value.count))
                    case .overflow(let at, let length):
                        info.entries.append(.init(key: Key(bytes: bytes).description, keyHex: hexString(bytes), valueLength: Int(length), valueOffset: at.offset))
                    }
                }
            }
        case .branch(let branch):
            info.kind = "branch"
            for (i, child) in branch.childReferences.enumerated() {
                guard let at = child.address else { continue }
                info.children.append(.init(offset: at.offset, length: at.length, lowerKey: i == 0 ? nil : Key(bytes: branch.keys[i - 1]).description))
            }
        }
        if includeHex { info.hex = hexString(try store.readBytes(count: header.frameLength, at: offset)) }
        return info
    }

    /// The shape of a tree: pages per level, fan-out, fill, and each page's key range.
    public struct TreeShape: Codable, Sendable, Equatable {
        /// One level of the tree.
        public struct Level: Codable, Sendable, Equatable {
            /// 1 for the root.
            public var depth: Int
            /// Pages at this level.
            public var pages: Int
            /// Average children per branch, or entries per leaf.
            public var averageFanOut: Double
            /// Encoded bytes over pages × page size.
            public var fill: Double
        }

        /// One page of the tree.
        public struct Page: Codable, Sendable, Equatable {
            /// Where it is (nil: held in memory, not yet checkpointed).
            public var offset: UInt64?
            /// Its level, 1 for the root.
            public var depth: Int
            /// `leaf` or `branch`.
            public var kind: String
            /// Its entries (keys, or children).
            public var entries: Int
            /// Its encoded size.
            public var bytes: Int
            /// Its first key, decoded.
            public var firstKey: String?
            /// Its last key, decoded.
            public var lastKey: String?
        }

        /// The tree.
        public var tree: String
        /// The tree's entry count.
        public var entries: Int
        /// Its levels from the root to the leaves.
        public var depth: Int
        /// Pages per level, root first.
        public var levels: [Level]
        /// Every page, in key order per level.
        public var pages: [Page]
    }

    /// The shape of `tree`: levels, fan-out, fill and every page's key range.
    ///
    /// - Parameter tree: The tree's name.
    /// - Returns: The tree's levels and pages.
    /// - Throws: `StrataError.treeNotFound`; `.corruption` for damaged pages; `.io`.
    public func shape(of tree: String) throws -> TreeShape {
        let snapshot = try database.snapshot()
        guard let state = snapshot.trees[tree] else { throw StrataError.treeNotFound(tree) }
        var pages: [TreeShape.Page] = []
        try TreeWalker.visit(state.root, store: store) { node, address, depth in
            switch node {
            case .leaf(let leaf):
                pages.append(.init(offset: address?.offset, depth: depth, kind: "leaf", entries: leaf.count, bytes: leaf.pageBytes,
                                   firstKey: leaf.count > 0 ? Key(bytes: leaf.key(at: 0)).description : nil,
                                   lastKey: leaf.count > 0 ? Key(bytes: leaf.key(at: leaf.count - 1)).description : nil))
            case .branch(let branch):
                pages.append(.init(offset: address?.offset, depth: depth, kind: "branch", entries: branch.childCount, bytes: branch.pageBytes,
                                   firstKey: branch.keys.first.map { Key(bytes: $0).description }, lastKey: branch.keys.last.map { Key(bytes: $0).description }))
            }
        }
        let depth = pages.map(\.depth).max() ?? 0
        let levels = (1 ... max(depth, 1)).compactMap { level -> TreeShape.Level? in
            let atLevel = pages.filter { $0.depth == level }
            guard !atLevel.isEmpty else { return nil }
            return .init(depth: level, pages: atLevel.count,
                         averageFanOut: Double(atLevel.map(\.entries).reduce(0, +)) / Double(atLevel.count),
                         fill: Double(atLevel.map(\.bytes).reduce(0, +)) / Double(atLevel.count * store.limits.pageSize))
        }
        return TreeShape(tree: tree, entries: Int(try state.exactCount(store: store)), depth: depth, levels: levels, pages: pages)
    }
}

func hexString(_ bytes: [UInt8]) -> String { bytes.map(hex).joined() }
