import Synchronization

/// One database file as readers see it: verified frame reads, decoded pages through the
/// cache, out-of-line values. Snapshots hold their store, so a reader keeps reading the
/// file it started on even after compaction swaps in a new one.
final class PageStore: Sendable {
    let file: any StorageFile
    let header: FileHeader
    let limits: NodeLimits
    /// Decoded pages.
    let cache: FrameCache<Node>
    /// Leaves the trees keep in memory as written, in a share of the pages' budget.
    let keptLeaves: KeptLeaves
    /// Out-of-line values, in a budget of their own (a quarter of the pages'): a scan over
    /// large values keeps them in memory as far as they fit, and never evicts a page.
    let values: FrameCache<[UInt8]>
    private let readCounter = Atomic<UInt64>(0)

    var path: String { file.path }
    var salt: UInt64 { header.salt }

    init(file: any StorageFile, header: FileHeader, cacheBudget: Int) {
        self.file = file
        self.header = header
        self.limits = NodeLimits(pageSize: Int(header.pageSize))
        let keptLeaves = KeptLeaves(cacheBudget: FrameCache<Node>.budget(for: cacheBudget))
        self.keptLeaves = keptLeaves
        self.cache = FrameCache<Node>(budget: cacheBudget, sharingWith: keptLeaves)
        self.values = FrameCache<[UInt8]>(budget: cacheBudget / 4)
    }

    /// The file's size, or 0 when it cannot be read (for progress reports only).
    var fileSizeHint: UInt64 { (try? file.size()) ?? 0 }

    /// Bytes read from the file through this store so far.
    var bytesRead: UInt64 { readCounter.load(ordering: .relaxed) }

    func context(_ offset: UInt64, _ structure: String) -> CorruptionContext {
        CorruptionContext(path: path, offset: offset, structure: structure)
    }

    /// Counts bytes read before this store existed (the file header).
    func countRead(_ bytes: Int) { readCounter.add(UInt64(bytes), ordering: .relaxed) }

    /// Reads `count` raw bytes, counting them.
    func readBytes(count: Int, at offset: UInt64) throws -> [UInt8] {
        let bytes = try file.read(count: count, at: offset)
        readCounter.add(UInt64(bytes.count), ordering: .relaxed)
        return bytes
    }

    /// Reads the frame at `address`, checks its type, length and checksum, and returns the
    /// decompressed payload.
    func readPayload(at address: FrameAddress, expecting type: FrameType) throws -> [UInt8] {
        let context = context(address.offset, "\(type) frame")
        let frame = try readBytes(count: Int(address.length), at: address.offset)
        guard frame.count == Int(address.length) else {
            throw context.error("frame of \(address.length) bytes runs past the end of the file")
        }
        return try frame.withUnsafeBytes { raw in
            let header = try FrameHeader.parse(raw, context: context)
            guard header.type == type else { throw context.error("expected a \(type) frame, found \(header.type)") }
            guard header.frameLength == Int(address.length) else {
                throw context.error("frame length \(header.frameLength) differs from the reference (\(address.length))")
            }
            let limit = maxRawLength(of: type)
            guard Int(header.rawLength) <= limit else {
                throw context.error("\(type) payload of \(header.rawLength) bytes exceeds the format's limit of \(limit)")
            }
            return try Frame.payload(of: raw, header: header, offset: address.offset, salt: salt, context: context)
        }
    }

    /// The most a payload of each referenced frame type may hold (FORMAT.md, "Limits"): a
    /// page is split near the page size, so 4 × page size is far above any real page; a
    /// value is at most `Database.maxValueSize`.
    func maxRawLength(of type: FrameType) -> Int {
        switch type {
        case .page: 4 * limits.pageSize
        case .value: Database.maxValueSize
        case .log, .checkpoint: FrameHeader.maxPayload
        }
    }

    /// The node stored at `address`, from the cache or decoded from disk; `access` says
    /// whether a lookup or a scan reads it (`FrameCache`: scans do not evict lookups' pages).
    func node(at address: FrameAddress, for access: FrameCache<Node>.Access = .lookup) throws -> Node {
        if let cached = cache.entry(at: address.offset, for: access) { return cached }
        let payload = try readPayload(at: address, expecting: .page)
        let node = try PageCodec.decode(payload, address: address, limits: limits, context: context(address.offset, "page"))
        cache.insert(node, at: address.offset, cost: Self.cost(of: node), for: access)
        return node
    }

    /// The node `ref` points at, loading it from disk when it is not in memory.
    @inline(__always)
    func resolve(_ ref: NodeRef, for access: FrameCache<Node>.Access = .lookup) throws -> Node {
        switch ref {
        case .leaf(let leaf): return .leaf(leaf)
        case .branch(let branch): return .branch(branch)
        case .stored(let address): return try node(at: address, for: access)
        }
    }

    /// The bytes of a value, reading its value frame when it is stored out of line.
    func value(_ slot: ValueSlot) throws -> [UInt8] {
        switch slot {
        case .inline(let bytes):
            return Array(bytes)
        case .overflow(let address, let length):
            if let cached = values.entry(at: address.offset), cached.count == Int(length) { return cached }
            let value = try readPayload(at: address, expecting: .value)
            guard value.count == Int(length) else {
                throw context(address.offset, "value frame").error("value is \(value.count) bytes, the leaf says \(length)")
            }
            values.insert(value, at: address.offset, cost: Self.cost(ofValue: value))
            return value
        }
    }

    static func cost(ofValue value: [UInt8]) -> Int { value.count + 64 }

    /// The bytes `node` holds: a leaf's storage counted by its capacity, which a changed
    /// leaf reserves up to a full page (`LeafNode.copy(owner:limits:)`).
    static func cost(of node: Node) -> Int {
        switch node {
        case .leaf(let leaf): return leaf.storage.capacity + leaf.starts.count * (4 + 8) + 64
        case .branch(let branch): return branch.pageBytes + branch.childCount * 16 + 64
        }
    }
}
