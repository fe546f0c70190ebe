import CPrefetch
import Synchronization

/// A reference from a parent (or a tree root) to a child node: either a node in memory,
/// changed since the last checkpoint, or a page frame on disk, loaded through the cache.
enum NodeRef: @unchecked Sendable {
    case leaf(LeafNode)
    case branch(BranchNode)
    case stored(FrameAddress)
}

/// A `NodeRef` read without retaining its node: valid only while the node that holds the
/// reference is (see `TreeReader.locate`).
enum UnretainedNodeRef {
    case leaf(Unmanaged<LeafNode>)
    case branch(Unmanaged<BranchNode>)
    case stored(FrameAddress)

    /// Starts loading the node's own fields (its first two cache lines), for a lookup that
    /// reads them a little later (`TreeReader.GroupWalk`). A page on disk loads nothing.
    @inline(__always)
    func prefetchNode() {
        let object: UnsafeMutableRawPointer
        switch self {
        case .leaf(let leaf): object = leaf.toOpaque()
        case .branch(let branch): object = branch.toOpaque()
        case .stored: return
        }
        strata_prefetch(object)
        strata_prefetch(object + 64)
    }
}

extension NodeRef {
    /// Whether the node is in memory and the transaction `owner`'s to change in place.
    func isOwned(by owner: UInt64) -> Bool {
        switch self {
        case .leaf(let leaf): leaf.owner == owner
        case .branch(let branch): branch.owner == owner
        case .stored: false
        }
    }

    /// This reference, not retained: valid while whatever holds this `NodeRef` does.
    @inline(__always)
    var unretained: UnretainedNodeRef {
        switch self {
        case .leaf(let leaf): .leaf(Unmanaged.passUnretained(leaf))
        case .branch(let branch): .branch(Unmanaged.passUnretained(branch))
        case .stored(let address): .stored(address)
        }
    }
}

/// A node at hand in memory: what resolving a `NodeRef` yields.
enum Node: @unchecked Sendable {
    case leaf(LeafNode)
    case branch(BranchNode)
}

extension Node {
    /// This node, not retained: valid while whatever holds this `Node` does.
    @inline(__always)
    var unretained: UnretainedNodeRef {
        switch self {
        case .leaf(let leaf): .leaf(Unmanaged.passUnretained(leaf))
        case .branch(let branch): .branch(Unmanaged.passUnretained(branch))
        }
    }
}

/// How a value sits in a leaf entry.
enum ValueSlot {
    /// The value bytes are in the leaf.
    case inline(UnsafeRawBufferPointer)
    /// The value is in its own value frame; `length` is its raw length.
    case overflow(FrameAddress, length: UInt32)
}

/// Per-tree sizing, derived from the file's page size.
struct NodeLimits: Sendable {
    /// A node is split when its encoded size exceeds this.
    let pageSize: Int
    /// Values longer than this go to a value frame of their own: with their commit (format 2), or at the next checkpoint (format 1).
    let maxInlineValue: Int
    /// A node below this encoded size is merged with or refilled from a sibling.
    var minFill: Int { pageSize / 4 }
    /// The longest key accepted.
    var maxKey: Int { pageSize / 4 }

    init(pageSize: Int) {
        self.pageSize = pageSize
        self.maxInlineValue = pageSize / 4
    }
}

/// Leaf entry tags (FORMAT.md, "Leaf pages").
enum LeafTag {
    static let inline: UInt8 = 0
    static let overflow: UInt8 = 1
    static let overflowSize = 16
    static let pageKind: UInt8 = 1
}

/// A leaf node. Its entries are encoded in `storage` as in a leaf page payload — the kind
/// byte, then for each entry `varint keyLength, key, tag, value` — so a page loaded from
/// disk is used without re-encoding and a scan touches no per-entry objects.
///
/// In memory the entries lie in the order they were written, as in an LMDB page: `starts`
/// is in key order, and an insert appends the entry's bytes and moves only the starts and
/// heads after it, not the bytes of the entries after it (a memmove of half the leaf, ~13%
/// of W1's insert.single-tx at 1M; perf). A value replaced by one of another size is
/// written again at the end and a removed entry left where it lay: `deadBytes` counts what
/// no entry refers to, and the leaf is packed again once they are a quarter of it. A page
/// is always written packed, in key order (`pagePayload`).
///
/// Thread safety: a node is mutated only by the transaction whose id is `owner`, and only
/// before that transaction commits; after that it is immutable and shared by snapshots.
/// Nodes are mutated only by the one writer, and only while no snapshot can see them (a node
/// of an older owner is copied first), so their hot properties opt out of dynamic exclusivity
/// checks — which cost more than the binary search they guard.
final class LeafNode: @unchecked Sendable {
    @exclusivity(unchecked) var owner: UInt64
    @exclusivity(unchecked) var storage: [UInt8] { didSet { bytes = Self.bytes(of: storage) } }
    /// `storage`'s bytes, taken again at every change of it: what reads use. Reading through
    /// `storage.withUnsafeBytes` retained and released the array around each read (the
    /// compiler cannot tell the body leaves it alone), an atomic operation on a line a lookup
    /// in a large tree has not touched yet, which also waits for the loads before it (perf,
    /// W1 get at 1M: ~8% of its time). The array's buffer lives as long as `storage` holds it
    /// unchanged, and a node is changed only before any snapshot can see it.
    @exclusivity(unchecked) private(set) var bytes: UnsafeRawBufferPointer
    @exclusivity(unchecked) var starts: [UInt32] { didSet { startsBase = starts.elementsAddress } }
    /// `starts`' elements, taken again at every change of it, as `bytes` is: read by
    /// snapshot lookups and the prefetch without loading the array's header (a miss of its
    /// own in a large tree) or retaining the array.
    @exclusivity(unchecked) private(set) var startsBase: UnsafeRawPointer?
    /// Each entry's key head after the prefix the keys share (`KeyHeads`), beside `starts`:
    /// a search compares these, contiguous in one array, and reads a key from `storage` only
    /// when heads tie. A lookup in a large tree misses the CPU cache at nearly every probe of
    /// a leaf's entries; the heads of a 4 KiB leaf span a few cache lines.
    @exclusivity(unchecked) var heads: KeyHeads
    /// The encoded size this leaf will have as a page (large inline values counted as
    /// overflow references).
    @exclusivity(unchecked) var pageBytes: Int
    /// Bytes of `storage` no entry refers to: replaced values and removed entries.
    @exclusivity(unchecked) private(set) var deadBytes: Int
    /// Whether the entries lie in key order with nothing between them, as in a page:
    /// `storage` is then this leaf's page payload as it is, and a walk or a search reads its
    /// entries in address order. Kept by every change (an insert keeps it only at the end).
    @exclusivity(unchecked) private(set) var isPacked: Bool
    /// Where this leaf is stored, when it is the page a checkpoint or compaction wrote
    /// there and the tree keeps it in memory in place of the page's address (`kept(at:in:)`);
    /// nil for a leaf a transaction made or changed, and for one decoded from a page (the
    /// cache holds those). Such a leaf never changes, and a later checkpoint refers to it
    /// by this address instead of writing it again.
    let storedAt: FrameAddress?
    /// The budget this leaf is counted in while the tree keeps it, and what it counts there.
    private let keptIn: (budget: KeptLeaves, cost: Int)?

    convenience init(owner: UInt64) {
        self.init(owner: owner, storage: [LeafTag.pageKind], starts: [], heads: KeyHeads(), pageBytes: 1)
    }

    /// A leaf of `storage`'s entries; `packed` tells that they lie in key order with nothing
    /// between them (`isPacked`), as in a page or a run.
    init(owner: UInt64, storage: [UInt8], starts: [UInt32], heads: KeyHeads, pageBytes: Int, deadBytes: Int = 0, packed: Bool = true,
         storedAt: FrameAddress? = nil, keptIn: (budget: KeptLeaves, cost: Int)? = nil) {
        assert(!packed || deadBytes == 0, "a packed leaf has no dead bytes")
        self.owner = owner
        self.deadBytes = deadBytes
        self.isPacked = packed
        self.storedAt = storedAt
        self.keptIn = keptIn
        self.storage = storage
        self.bytes = Self.bytes(of: storage)   // an initializer's writes call no observer
        self.starts = starts
        self.startsBase = starts.elementsAddress
        self.heads = heads
        self.pageBytes = pageBytes
    }

    /// The address and length of `storage`'s elements, valid while the array that holds
    /// them is neither changed nor released.
    private static func bytes(of storage: [UInt8]) -> UnsafeRawBufferPointer {
        storage.withUnsafeBytes { $0 }
    }

    /// This leaf as the tree keeps it once written at `address`: in memory, in place of a
    /// reference to its page, counted in `budget` while it lives; nil when the budget is
    /// spent. A lookup then reaches the leaf from its parent without asking the page cache,
    /// a locked hash lookup whose lock every reader thread shares (perf, W1 get at 1M after
    /// a load: the cache lookup and the leaf's first line were the two largest waits).
    ///
    /// The kept leaf is a new object sharing this one's arrays, owned by no transaction
    /// (owner 0, as a page read from disk): every later change copies it first, so it stays
    /// the page at `address`. (Marking this leaf instead would change an object the
    /// published snapshot shares while its readers may read it; and a compaction changes
    /// its new tree as one owner across slices, which would change a kept leaf in place.)
    func kept(at address: FrameAddress, in budget: KeptLeaves) -> LeafNode? {
        let cost = PageStore.cost(of: .leaf(self))
        guard budget.reserve(cost) else { return nil }
        return LeafNode(owner: 0, storage: storage, starts: starts, heads: heads, pageBytes: pageBytes, deadBytes: deadBytes,
                        packed: isPacked, storedAt: address, keptIn: (budget, cost))
    }

    deinit {
        if let keptIn { keptIn.budget.release(keptIn.cost) }
    }

    /// A copy for the transaction `owner` to change, with room to fill its page: a leaf
    /// splits once it passes `pageSize`, so its bytes never need more than a page and the
    /// entry that passed it, and the array never grows again.
    /// (Sharing the arrays until the first change copied each into twice its capacity: a
    /// page read from disk is exactly full, so every changed leaf held 8 KiB for a 4 KiB
    /// page, and kept it in the cache after its checkpoint. With room for 256 bytes, a
    /// buffer merge's few puts per leaf, ~400 bytes in W1's, grew the copy again to twice
    /// its capacity, a second allocation and copy of every leaf a merge changed.)
    ///
    /// The arrays are copied from the element addresses this leaf keeps (`bytes`,
    /// `startsBase`, the heads' probe), never through the arrays themselves: reading an
    /// array retains and releases it, atomic operations on its header, a line the copy
    /// otherwise never touches. (callgrind, W1 at 100k: 1,163M → 1,144M instructions in the
    /// engine's puts. In a large tree the source is cold either way: perf of insert.batch
    /// at 1M showed the releases at a tenth of the load's samples before, and the copy's
    /// first reads of the source waiting for those lines after.)
    ///
    /// A leaf with dead bytes is copied packed (`packed(_:roomFor:)`): the copy is made anyway.
    func copy(owner: UInt64, limits: NodeLimits) -> LeafNode {
        assert(heads.count == starts.count, "a leaf keeps one head per entry")
        if deadBytes > 0 {
            let (storage, starts) = packed(0 ..< count, roomFor: limits)
            return LeafNode(owner: owner, storage: storage, starts: starts, heads: KeyHeads(copying: heads.probe, room: 8), pageBytes: pageBytes)
        }
        return LeafNode(owner: owner, storage: [UInt8](copying: bytes.count, at: bytes.baseAddress, room: Self.room(after: bytes.count, limits: limits)),
                        starts: [UInt32](copying: heads.count, at: startsBase, room: 8), heads: KeyHeads(copying: heads.probe, room: 8),
                        pageBytes: pageBytes, packed: isPacked)
    }

    /// The bytes to reserve beyond `count` in a leaf's storage so that it fills its page
    /// without growing: up to the page size and one more small entry, at least 256.
    static func room(after count: Int, limits: NodeLimits) -> Int { max(256, limits.pageSize + 256 - count) }

    var count: Int { starts.count }

    /// Where entry `i`'s bytes lie in `storage`.
    func entryRange(_ i: Int) -> Range<Int> {
        let start = Int(starts[i])
        return start ..< Self.entry(in: bytes, at: start).end
    }

    /// Whether `isPacked` tells the truth: the entries' starts ascend, no bytes are dead.
    /// For assertions and tests.
    var checkedIsPacked: Bool {
        deadBytes == 0 && starts.indices.dropFirst().allSatisfy { starts[$0 - 1] < starts[$0] }
            && (count == 0 || entryRange(count - 1).upperBound == storage.count)
    }

    /// The entries as a page lays them out, in key order with nothing between them (the
    /// kind byte first): `storage` itself when it is so already.
    var pagePayload: [UInt8] {
        assert(!isPacked || checkedIsPacked, "a leaf said packed is")
        return isPacked ? storage : packed(0 ..< count, roomFor: nil).storage
    }

    /// Entries `entries` packed in key order, the kind byte first, and their starts; with
    /// room to fill a page of `limits` without growing (`room(after:limits:)`), for a leaf
    /// that takes more puts.
    private func packed(_ entries: Range<Int>, roomFor limits: NodeLimits?) -> (storage: [UInt8], starts: [UInt32]) {
        let ranges = entries.map(entryRange)
        let size = 1 + ranges.reduce(0) { $0 + $1.count }
        var packed: [UInt8] = []
        packed.reserveCapacity(size + (limits.map { Self.room(after: size, limits: $0) } ?? 0))
        packed.append(LeafTag.pageKind)
        var packedStarts: [UInt32] = []
        packedStarts.reserveCapacity(ranges.count + 8)
        for range in ranges {
            packedStarts.append(UInt32(packed.count))
            packed.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[range]))
        }
        return (packed, packedStarts)
    }

    /// Packs the entries in place once dead bytes are a quarter of `storage`.
    private func packIfWasteful(limits: NodeLimits) {
        guard deadBytes > 0, deadBytes &* 4 >= storage.count else { return }
        (storage, starts) = packed(0 ..< count, roomFor: limits)
        deadBytes = 0
        isPacked = true
    }

    /// The length at `p` of a page already validated (`PageCodec` checked every entry when
    /// it decoded the page, or built it), moving `p` past it: a one-byte fast path, and no
    /// overflow or shift-width checks, which were a third of a scan's ~100 instructions per
    /// entry (callgrind).
    @inline(__always)
    static func validatedLength(_ raw: UnsafeRawBufferPointer, at p: inout Int) -> Int {
        let base = raw.baseAddress!
        let first = base.load(fromByteOffset: p, as: UInt8.self)
        p &+= 1
        if first < 0x80 { return Int(first) }
        var length = Int(first & 0x7F), shift = 7
        while true {
            let byte = base.load(fromByteOffset: p, as: UInt8.self)
            p &+= 1
            length |= Int(byte & 0x7F) &<< shift
            if byte < 0x80 { return length }
            shift &+= 7
        }
    }

    /// The key of the entry starting at `start` in `raw`, decoding nothing after it: what a
    /// search compares, so a probe touches only the key's bytes.
    @inline(__always)
    static func key(in raw: UnsafeRawBufferPointer, at start: Int) -> UnsafeRawBufferPointer {
        var p = start
        let keyLength = validatedLength(raw, at: &p)
        return UnsafeRawBufferPointer(start: raw.baseAddress! + p, count: keyLength)
    }

    /// Decodes the entry starting at `start` in `raw`: key range and value slot. The
    /// entry was validated when the page was decoded or built.
    @inline(__always)
    static func entry(in raw: UnsafeRawBufferPointer, at start: Int) -> (key: UnsafeRawBufferPointer, value: ValueSlot, end: Int) {
        var p = start
        let keyLength = validatedLength(raw, at: &p)
        let key = UnsafeRawBufferPointer(start: raw.baseAddress! + p, count: keyLength)
        p &+= keyLength
        let tag = raw[p]; p &+= 1
        if tag == LeafTag.overflow {
            let offset = UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: p, as: UInt64.self))
            let frameLength = UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: p + 8, as: UInt32.self))
            let length = UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: p + 12, as: UInt32.self))
            return (key, .overflow(FrameAddress(offset: offset, length: frameLength), length: length), p + LeafTag.overflowSize)
        }
        let valueLength = validatedLength(raw, at: &p)
        return (key, .inline(UnsafeRawBufferPointer(start: raw.baseAddress! + p, count: valueLength)), p &+ valueLength)
    }

    /// Calls `body` with the key and value slot of entry `i`. The bytes stay valid even if
    /// `body` changes this leaf (a write transaction's reader writing as it reads): the
    /// array is held for the call, and a change copies it.
    @inline(__always)
    func withEntry<R>(_ i: Int, _ body: (UnsafeRawBufferPointer, ValueSlot) throws -> R) rethrows -> R {
        try storage.withUnsafeBytes { raw in
            let e = Self.entry(in: raw, at: Int(starts[i]))
            return try body(e.key, e.value)
        }
    }

    /// `withEntry` for a leaf nothing can change during the call (a committed tree's, read
    /// through a snapshot): no retain and release of the array.
    @inline(__always)
    func withUnchangingEntry<R>(_ i: Int, _ body: (UnsafeRawBufferPointer, ValueSlot) throws -> R) rethrows -> R {
        precondition(i >= 0 && i < heads.count, "entry index out of range")
        let start = startsBase.unsafelyUnwrapped.load(fromByteOffset: i &* 4, as: UInt32.self)
        let e = Self.entry(in: bytes, at: Int(start))
        return try body(e.key, e.value)
    }

    func key(at i: Int) -> [UInt8] { withEntry(i) { key, _ in Array(key) } }

    /// Binary search: the index of `key`, or of the first larger key, and whether it matched.
    func search(_ key: UnsafeRawBufferPointer) -> (index: Int, found: Bool) {
        let probe = heads.probe
        let count = probe.count
        return probe.search(in: 0 ..< count, for: key, narrowed: { prefetchEntries($0, $1, count: count) }) {
            compareKey(at: $0, with: key)
        }
    }

    /// Starts loading what a search of this leaf reads, its heads and entry starts, all at
    /// once (`prefetchLines`): for a lookup in a tree larger than the CPU's caches.
    @inline(__always)
    func prefetchForSearch() {
        let probe = heads.probe
        probe.prefetch()
        prefetchLines(from: startsBase, count: probe.count &* 4)
    }

    /// Starts loading the bytes of entries `low` through `high` (`high` may be `count`), the
    /// few a search has narrowed to: the entry it ends on is then read from a line already
    /// on its way. (A search compares heads and reads no entry, so without this the entry's
    /// line was a miss of its own after the search, about a quarter of a W1 get at 1M; perf.)
    /// The entry starts were prefetched with the heads (`prefetchForSearch`).
    ///
    /// In a leaf not packed (`isPacked`) the entries need not lie side by side: each one's
    /// first line is asked for, where its key lies.
    @inline(__always)
    private func prefetchEntries(_ low: Int, _ high: Int, count: Int) {
        guard let starts = startsBase, let base = bytes.baseAddress, low < count else { return }
        guard isPacked else {
            for i in low ... min(high, count &- 1) {
                strata_prefetch(base + Int(starts.load(fromByteOffset: i &* 4, as: UInt32.self)))
            }
            return
        }
        let first = Int(starts.load(fromByteOffset: low &* 4, as: UInt32.self))
        let end = high < count ? Int(starts.load(fromByteOffset: high &* 4, as: UInt32.self)) &+ 16 : bytes.count
        prefetchLines(from: base + first, count: min(end, bytes.count) &- first)
    }

    /// Starts loading every line of this leaf's entries, for a walk through all of them,
    /// unless they lie in key order (`isPacked`): the processor's stream prefetch follows
    /// such a walk by itself.
    @inline(__always)
    func prefetchForWalk() {
        if !isPacked { prefetchLines(from: bytes.baseAddress, count: bytes.count) }
    }

    /// The heads of the keys `storage` holds, after the prefix they share: when an inserted
    /// key lacks the prefix the heads were taken after, or two leaves with different
    /// prefixes merge.
    func rebuildHeads() {
        heads = storage.withUnsafeBytes { raw in KeyHeads(count: starts.count) { Self.key(in: raw, at: Int(starts[$0])) } }
    }

    /// Rebuilds the heads when the keys now share a longer prefix than they skip (after a
    /// split, say).
    private func tightenHeads() {
        guard count > 0 else { return }
        let longer = storage.withUnsafeBytes { raw in
            heads.wouldLengthen(first: Self.key(in: raw, at: Int(starts[0])), last: Self.key(in: raw, at: Int(starts[count - 1])))
        }
        if longer { rebuildHeads() }
    }

    /// How the key of entry `i` compares with `key` (memcmp order: negative, zero, positive).
    @inline(__always)
    func compareKey(at i: Int, with key: UnsafeRawBufferPointer) -> Int {
        compareBytes(Self.key(in: bytes, at: Int(starts[i])), key)
    }

    /// For a cursor on entry `start`: the index of `key`, or of the first larger key, when
    /// `key` sorts between entry `start` and the last entry (both included); nil otherwise
    /// (`KeyHeads.search(onFrom:for:compareKey:)`).
    func search(_ key: UnsafeRawBufferPointer, onFrom start: Int) -> (index: Int, found: Bool)? {
        heads.probe.search(onFrom: start, for: key) { compareKey(at: $0, with: key) }
    }

    /// Whether a builder filling this leaf in key order (`TreeBuilder`, `TreeLoad.swift`)
    /// starts a new one before an entry of `key` and `value`: the leaf holds entries, and
    /// the entry would take its page past the page size.
    func isFull(before key: UnsafeRawBufferPointer, _ value: ValueSlot, limits: NodeLimits) -> Bool {
        count > 0 && pageBytes + Self.entrySizes(keyCount: key.count, value: value, limits: limits).page > limits.pageSize
    }

    /// The encoded entry size in memory and as a page.
    static func entrySizes(keyCount: Int, value: ValueSlot, limits: NodeLimits) -> (memory: Int, page: Int) {
        let keyPart = varintSize(keyCount) + keyCount + 1
        switch value {
        case .overflow:
            return (keyPart + LeafTag.overflowSize, keyPart + LeafTag.overflowSize)
        case .inline(let bytes):
            let memory = keyPart + varintSize(bytes.count) + bytes.count
            return (memory, bytes.count > limits.maxInlineValue ? keyPart + LeafTag.overflowSize : memory)
        }
    }

    /// Lays the entry out in `out`. (Through a writer struct: nested functions that
    /// captured the position had every write checked for exclusive access at run time,
    /// ~365 instructions of each typed insert.)
    private static func write(key: UnsafeRawBufferPointer, value: ValueSlot, into out: UnsafeMutableRawBufferPointer) {
        var writer = InPlaceWriter(out)
        writer.varint(key.count)
        writer.raw(key)
        writeValue(value, with: &writer)
    }

    /// Lays out the part of an entry after its key: the tag and the value or its reference.
    private static func writeValue(_ value: ValueSlot, with writer: inout InPlaceWriter) {
        switch value {
        case .inline(let bytes):
            writer.u8(LeafTag.inline)
            writer.varint(bytes.count)
            writer.raw(bytes)
        case .overflow(let address, let length):
            writer.u8(LeafTag.overflow)
            writer.littleEndian(address.offset)
            writer.littleEndian(address.length)
            writer.littleEndian(length)
        }
    }

    /// Inserts a new entry at `index` (the position `search` returned).
    ///
    /// The entry's bytes go at the end of `storage`; only the starts and heads after `index`
    /// move. (`insert(contentsOf:at:)` of zeros went through the generic replaceSubrange:
    /// 12% of a W1 load's instructions; hence the zeros appended in one copy.)
    func insert(at index: Int, key: UnsafeRawBufferPointer, value: ValueSlot, limits: NodeLimits) {
        let sizes = Self.entrySizes(keyCount: key.count, value: value, limits: limits)
        let position = storage.count
        Self.appendZeros(sizes.memory, to: &storage)
        storage.withUnsafeMutableBytes { raw in
            Self.write(key: key, value: value, into: UnsafeMutableRawBufferPointer(rebasing: raw[position ..< position + sizes.memory]))
        }
        isPacked = isPacked && index == starts.count
        starts.insertMoving(UInt32(position), at: index)
        if !heads.insert(key, at: index) { rebuildHeads() }
        pageBytes += sizes.page
    }

    /// Replaces the value of entry `index`, keeping its key and head. A value of the same
    /// encoded size is written where the old one lies; another is written with a copy of the
    /// key at the end of `storage`, the old entry's bytes left dead. (Removing the entry and
    /// inserting it again copied the key into an array of its own and moved the entries after
    /// it, their starts and their heads twice: callgrind, W1's update phase at 100k records,
    /// 525M instructions in the engine's puts before, 360M after.) A value lent from this
    /// leaf stays valid: the lender holds the old array, and the first change copies it.
    func replaceValue(at index: Int, with value: ValueSlot, limits: NodeLimits) {
        let range = entryRange(index)
        let (keyCount, oldPage) = withEntry(index) { key, old in
            (key.count, Self.entrySizes(keyCount: key.count, value: old, limits: limits).page)
        }
        let sizes = Self.entrySizes(keyCount: keyCount, value: value, limits: limits)
        let keyPart = varintSize(keyCount) + keyCount
        if sizes.memory == range.count {
            storage.withUnsafeMutableBytes { raw in
                var writer = InPlaceWriter(UnsafeMutableRawBufferPointer(rebasing: raw[range.lowerBound + keyPart ..< range.upperBound]))
                Self.writeValue(value, with: &writer)
            }
        } else {
            let position = storage.count
            Self.appendZeros(sizes.memory, to: &storage)
            storage.withUnsafeMutableBytes { raw in
                (raw.baseAddress! + position).copyMemory(from: raw.baseAddress! + range.lowerBound, byteCount: keyPart)
                var writer = InPlaceWriter(UnsafeMutableRawBufferPointer(rebasing: raw[position + keyPart ..< position + sizes.memory]))
                Self.writeValue(value, with: &writer)
            }
            starts[index] = UInt32(position)
            deadBytes += range.count
            isPacked = false
            packIfWasteful(limits: limits)
        }
        pageBytes += sizes.page - oldPage
    }

    /// Appends `count` zero bytes to `array` in one copy (appending `repeatElement(0, …)`
    /// copied byte by byte, ~235 instructions a put).
    private static func appendZeros(_ count: Int, to array: inout [UInt8]) {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: count) { zeros in
            zeros.initialize(repeating: 0)
            array.append(contentsOf: zeros)
        }
    }

    /// Removes entry `index`; its bytes stay, dead, until the leaf is packed again.
    func removeEntry(at index: Int, limits: NodeLimits) {
        let range = entryRange(index)
        let pageSize = withEntry(index) { key, value in Self.entrySizes(keyCount: key.count, value: value, limits: limits).page }
        starts.remove(at: index)
        heads.remove(at: index)
        pageBytes -= pageSize
        deadBytes += range.count
        isPacked = false
        // The last entry removed leaves only dead bytes: always a quarter, so packed here.
        packIfWasteful(limits: limits)
    }

    /// Moves the entries from `index` on into a new leaf, packed, and returns it. This leaf
    /// keeps the others, packed too.
    func splitOff(from index: Int, owner: UInt64, limits: NodeLimits) -> LeafNode {
        // Room to fill a page, as a copy has (`copy(owner:limits:)`): the half grows by puts.
        let (rightStorage, rightStarts) = packed(index ..< count, roomFor: limits)
        let right = LeafNode(owner: owner, storage: rightStorage, starts: rightStarts, heads: heads.splitOff(at: index), pageBytes: 0)
        if isPacked {
            storage.removeSubrange(Int(starts[index])...)
            starts.removeSubrange(index...)
        } else {
            (storage, starts) = packed(0 ..< index, roomFor: limits)
            deadBytes = 0
            isPacked = true
        }
        // A half's keys may share a longer prefix than the whole's did.
        tightenHeads()
        right.tightenHeads()
        // Only the moved half is measured: this leaf's size was exact, and keeps what the
        // right half did not take. (Measuring both walked every entry of the leaf at each
        // split, 2% of a W1 load's put instructions; callgrind.)
        right.pageBytes = right.measuredPageBytes(limits: limits)
        pageBytes -= right.pageBytes - 1
        assert(pageBytes == measuredPageBytes(limits: limits), "a leaf's page size is kept exact at every change")
        return right
    }

    /// Appends all entries of `other`, whose keys are all greater (its dead bytes with them).
    func append(contentsOf other: LeafNode) {
        let base = UInt32(storage.count) - 1
        storage.append(contentsOf: other.storage[1...])
        starts.append(contentsOf: other.starts.map { $0 + base })
        if !heads.append(other.heads) { rebuildHeads() }
        pageBytes += other.pageBytes - 1
        deadBytes += other.deadBytes
        isPacked = isPacked && other.isPacked
    }

    /// This leaf's encoded size as a page, measured entry by entry (`pageBytes` is kept
    /// by each change instead).
    func measuredPageBytes(limits: NodeLimits) -> Int {
        var total = 1
        for i in 0 ..< count {
            let entry = Self.entry(in: bytes, at: Int(starts[i]))
            total += Self.entrySizes(keyCount: entry.key.count, value: entry.value, limits: limits).page
        }
        return total
    }

    /// The index at which to split so both halves have about the same encoded size: the
    /// first entry that starts at or past half the live bytes, counted in key order.
    func balancedSplitIndex() -> Int {
        let half = (storage.count - deadBytes) / 2
        var start = 1
        for i in 0 ..< count {
            if i >= 1, start >= half { return min(i, count - 1) }
            start += entryRange(i).count
        }
        return max(1, count - 1)
    }
}

/// A branch node: `childCount - 1` separator keys; child `i` holds the keys `k` with
/// `keys[i-1] <= k < keys[i]`.
final class BranchNode: @unchecked Sendable {  // see LeafNode on exclusivity
    @exclusivity(unchecked) var owner: UInt64
    /// The separators. Their heads are kept beside them, as a leaf keeps its keys' heads:
    /// `insert`, `removeChild` and `splitOff` change both in place; any other change made
    /// through this property rebuilds the heads (merges and refills, which are rare).
    var keys: [[UInt8]] {
        get { separators }
        _modify {
            yield &separators
            heads = KeyHeads(separators)
        }
    }
    @exclusivity(unchecked) private var separators: [[UInt8]]
    @exclusivity(unchecked) private(set) var heads: KeyHeads
    /// Readers read the slots while the copy that takes them over marks them lent
    /// (`copy(owner:)`): different fields, and the slots' bytes never change once a snapshot
    /// can see this branch.
    @exclusivity(unchecked) private var children: BranchChildren
    /// Whether a copy has claimed this branch's references (`copy(owner:)`). Several threads
    /// copy one committed branch at once: the writer, a merge beside it, a checkpoint pass
    /// merging buffers, the verifier. Were two to take the references over, both would own
    /// and release them: the claim lets exactly one.
    private let handedOver = Atomic<Bool>(false)
    /// The branches that took over child references of this one (`BranchChildren`), held so
    /// that they outlive it: its copy, and the halves split off it while it inherited.
    @exclusivity(unchecked) private var heir: BranchNode?
    @exclusivity(unchecked) private var splitHeirs: [BranchNode] = []
    /// How many copies back this branch's references were last copied with a retain: a
    /// snapshot held long keeps every later version of a branch alive along its line of
    /// moves, so the line is cut (one retaining copy) every `maxLineage` versions.
    @exclusivity(unchecked) private var lineage: Int = 0
    /// The encoded size of this branch as a page.
    @exclusivity(unchecked) var pageBytes: Int
    /// Where this branch is stored, when it is the page a checkpoint or compaction wrote
    /// there (nil for a branch a transaction made or changed). Such a branch never changes,
    /// and the tree keeps it in memory rather than by its address: a lookup then reaches the
    /// leaves without asking the page cache for each branch on the way, a locked hash
    /// lookup per level (`NodeWriter`). A later checkpoint refers to it by this address
    /// instead of writing it again.
    let storedAt: FrameAddress?

    static let maxLineage = 64

    convenience init(owner: UInt64, keys: [[UInt8]], children: [NodeRef], storedAt: FrameAddress? = nil) {
        self.init(owner: owner, keys: keys, children: BranchChildren(children), storedAt: storedAt)
    }

    private init(owner: UInt64, keys: [[UInt8]], children: consuming BranchChildren, storedAt: FrameAddress? = nil) {
        self.owner = owner
        self.separators = keys
        self.heads = KeyHeads(keys)
        self.children = children
        self.pageBytes = 0
        self.storedAt = storedAt
        recomputePageBytes()
    }

    private init(owner: UInt64, keys: [[UInt8]], heads: KeyHeads, children: consuming BranchChildren, pageBytes: Int, lineage: Int) {
        self.owner = owner
        self.separators = keys
        self.heads = heads
        self.children = children
        self.pageBytes = pageBytes
        self.lineage = lineage
        self.storedAt = nil
    }

    /// Releases the heirs one by one rather than recursively: a snapshot held across many
    /// commits can keep a long line of versions, each holding the next.
    deinit {
        var pending = splitHeirs
        if let heir { pending.append(heir) }
        (heir, splitHeirs) = (nil, [])
        while var next = pending.popLast() {
            guard isKnownUniquelyReferenced(&next) else { continue }
            pending.append(contentsOf: next.splitHeirs)
            if let further = next.heir { pending.append(further) }
            (next.heir, next.splitHeirs) = (nil, [])
        }
    }

    /// A copy for the transaction `owner` to change. It takes this version's child
    /// references over without retaining them when it can (`BranchChildren`), and this
    /// version holds it from then on. Safe to call from several threads at once: one copy
    /// at most takes the references over, the others retain them.
    func copy(owner: UInt64) -> BranchNode {
        if children.holdsNodes, lineage < Self.maxLineage,
           handedOver.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged {
            let copy = BranchNode(owner: owner, keys: separators, heads: heads, children: BranchChildren(takingFrom: &children),
                                  pageBytes: pageBytes, lineage: lineage + 1)
            heir = copy
            return copy
        }
        return BranchNode(owner: owner, keys: separators, heads: heads, children: BranchChildren(copying: children),
                          pageBytes: pageBytes, lineage: 0)
    }

    /// Whether this branch took its references over from the version it copied (for tests).
    var inheritsReferences: Bool { children.inherits }

    static let childReferenceSize = 12

    static func keyCost(_ key: [UInt8]) -> Int { varintSize(key.count) + key.count }

    func recomputePageBytes() {
        pageBytes = 1 + varintSize(children.count) + children.count * Self.childReferenceSize
            + separators.reduce(0) { $0 + Self.keyCost($1) }
    }

    var childCount: Int { children.count }

    /// Child `index`, retained.
    func child(at index: Int) -> NodeRef { children[index] }

    /// Every child reference, retained (checkpoints, statistics, verification).
    var childReferences: [NodeRef] { children.array }

    /// Puts `child` in slot `index` (this transaction's branch only).
    func setChild(_ child: NodeRef, at index: Int) { children.replace(at: index, with: child) }

    /// Appends the children and separators of `right`, with `separator` between (a merge).
    func append(_ right: BranchNode, separator: [UInt8]) {
        separators.append(separator)
        separators.append(contentsOf: right.separators)
        heads = KeyHeads(separators)
        children.append(copying: right.children)
        recomputePageBytes()
    }

    /// The child whose range holds `key`: the number of separators `<= key`.
    func childIndex(for key: UnsafeRawBufferPointer) -> Int {
        let probe = heads.probe
        let (index, found) = probe.search(in: 0 ..< probe.count, for: key) { compareBytes(separators[$0], key) }
        return found ? index + 1 : index
    }

    /// The child whose range holds `key`, not retained: valid while this branch is.
    @inline(__always)
    func unretainedChild(for key: UnsafeRawBufferPointer) -> UnretainedNodeRef {
        unretainedChild(at: childIndex(for: key))
    }

    /// Child `index`, not retained: valid while this branch holds it.
    @inline(__always)
    func unretainedChild(at index: Int) -> UnretainedNodeRef {
        children.unretained(at: index)
    }

    /// The child whose range holds `key`, not retained, its node and search lines asked
    /// for (`SearchLines`); whether it had lines to ask for.
    @inline(__always)
    func prefetchedChild(for key: UnsafeRawBufferPointer) -> (child: UnretainedNodeRef, linesAsked: Bool) {
        children.prefetchedChild(at: childIndex(for: key))
    }

    /// Child `index`, not retained, its node and search lines asked for.
    @inline(__always)
    func prefetchedChild(at index: Int) -> (child: UnretainedNodeRef, linesAsked: Bool) {
        children.prefetchedChild(at: index)
    }

    /// Takes child `index`'s search lines again, after a change to it in place.
    func refreshLines(at index: Int) { children.refreshLines(at: index) }

    /// Child `index`'s search lines as this branch keeps them (for tests).
    func searchLines(at index: Int) -> SearchLines { children.lines(at: index) }

    /// Starts loading what `childIndex(for:)` reads first, the separators' heads: for a
    /// lookup that searches this branch a little later (`TreeReader.GroupWalk`).
    @inline(__always)
    func prefetchForSearch() {
        heads.probe.prefetch()
    }

    /// Starts loading child `index`'s reference, for a lookup that follows it a little later.
    @inline(__always)
    func prefetchChild(at index: Int) {
        children.prefetchSlot(at: index)
    }

    /// Inserts `child` at `index` with `separator` as its lower bound.
    /// (Rebuilding every head at each insert was ~4,300 instructions, 57 per record of a W1
    /// load; callgrind.)
    func insert(separator: [UInt8], child: NodeRef, at index: Int) {
        separators.insert(separator, at: index - 1)
        let fits = separator.withUnsafeBytes { heads.insert($0, at: index - 1) }
        if !fits { heads = KeyHeads(separators) }
        children.insert(child, at: index)
        pageBytes += Self.keyCost(separator) + Self.childReferenceSize
    }

    /// Removes child `index` and the separator in front of it.
    func removeChild(at index: Int) {
        pageBytes -= Self.keyCost(separators[index - 1]) + Self.childReferenceSize
        separators.remove(at: index - 1)
        heads.remove(at: index - 1)   // the rest still share the prefix
        children.remove(at: index)
    }

    /// Moves the upper half into a new branch; returns the separator between the halves.
    func splitOff(owner: UInt64) -> (separator: [UInt8], right: BranchNode) {
        let middle = children.count / 2
        let separator = separators[middle - 1]
        let right = BranchNode(owner: owner, keys: Array(separators[middle...]), children: children.split(from: middle))
        // The moved references may be shown by the version this one took them from.
        if children.inherits { splitHeirs.append(right) }
        separators.removeSubrange((middle - 1)...)
        _ = heads.splitOff(at: middle - 1)
        recomputePageBytes()
        return (separator, right)
    }
}

extension Array {
    /// Where the elements are, valid while this array's buffer is neither changed nor
    /// released: kept beside an array whose reads must not load its header or retain it.
    var elementsAddress: UnsafeRawPointer? { withUnsafeBytes { $0.baseAddress } }
}

extension Array where Element: BitwiseCopyable {
    /// Inserts `element` at `index`: appended, then moved into place with one memmove of the
    /// elements after it. (`insert(_:at:)` goes through the generic `replaceSubrange`: ~100
    /// instructions a call, twice per put into a leaf; callgrind.)
    mutating func insertMoving(_ element: Element, at index: Int) {
        precondition(index >= 0 && index <= count, "insertion index out of range")
        append(element)
        let moved = count - 1 - index
        guard moved > 0 else { return }
        withUnsafeMutableBufferPointer { buffer in
            let base = buffer.baseAddress!
            // copyMemory is a memmove: the regions overlap.
            UnsafeMutableRawPointer(base + index + 1).copyMemory(from: base + index, byteCount: moved * MemoryLayout<Element>.stride)
            base[index] = element
        }
    }

    /// A copy of the `count` elements at `address` (an array's `elementsAddress`), with
    /// room for `room` more before it grows.
    init(copying count: Int, at address: UnsafeRawPointer?, room: Int) {
        self.init()
        reserveCapacity(count + room)
        guard count > 0, let address else { return }
        append(contentsOf: UnsafeBufferPointer(start: address.assumingMemoryBound(to: Element.self), count: count))
    }
}
