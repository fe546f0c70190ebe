import Synchronization

/// Decoded frames by file offset, bounded by a byte budget: the tree's pages (`Node`) in one,
/// out-of-line values (`[UInt8]`) in another, so reading large values never evicts the tree.
/// Eviction drops the least recently used quarter when the budget is exceeded. Safe to use
/// from many threads.
final class FrameCache<Cached: Sendable>: Sendable {
    private struct Entry {
        var cached: Cached
        var cost: Int
        var lastUse: UInt64
        /// Never evicted while set: a write transaction's values, not yet on disk.
        var pinned = false
    }

    private struct State {
        var entries = OffsetTable<Entry>()
        var totalCost = 0
        var clock: UInt64 = 0
        var hits: UInt64 = 0
        var misses: UInt64 = 0
    }

    let budget: Int
    /// Leaves kept in memory by the trees, which share this budget: the cache holds at
    /// most what they leave of it.
    let kept: KeptLeaves?
    private let state = Mutex(State())

    init(budget: Int, sharingWith kept: KeptLeaves? = nil) {
        self.budget = max(budget, 64 * 1024)
        self.kept = kept
    }

    /// The most this cache holds now: its budget less what the kept leaves take.
    private var room: Int { budget - (kept?.current ?? 0) }

    /// The frame decoded from `offset`, when it is cached.
    func entry(at offset: UInt64) -> Cached? {
        state.withLock { s in
            s.clock &+= 1
            // One hash lookup: the entry is found once and touched in place.
            guard let slot = s.entries.slot(of: offset) else {
                s.misses += 1
                return nil
            }
            s.entries[slot: slot].lastUse = s.clock
            s.hits += 1
            return s.entries[slot: slot].cached
        }
    }

    /// Caches `cached`, decoded from the frame at `offset`; a `pinned` entry stays until
    /// `unpin` or `remove` (its cost still counts against the budget).
    func insert(_ cached: Cached, at offset: UInt64, cost: Int, pinned: Bool = false) {
        state.withLock { s in
            s.clock &+= 1
            if let old = s.entries.updateValue(Entry(cached: cached, cost: cost, lastUse: s.clock, pinned: pinned), forOffset: offset) {
                s.totalCost -= old.cost
            }
            s.totalCost += cost
            let room = room
            if s.totalCost > room { Self.evict(&s, target: room * 3 / 4) }
        }
    }

    /// Lets the entries at `offsets` be evicted again (and evicts, when pinned entries
    /// took the cache over its budget).
    func unpin(_ offsets: [UInt64]) {
        state.withLock { s in
            for offset in offsets { if let slot = s.entries.slot(of: offset) { s.entries[slot: slot].pinned = false } }
            let room = room
            if s.totalCost > room { Self.evict(&s, target: room * 3 / 4) }
        }
    }

    /// Drops the entries at `offsets`.
    func remove(_ offsets: [UInt64]) {
        state.withLock { s in
            for offset in offsets {
                if let old = s.entries.removeValue(forOffset: offset) { s.totalCost -= old.cost }
            }
        }
    }

    private static func evict(_ s: inout State, target: Int) {
        let byAge = s.entries.elements.filter { !$0.value.pinned }.sorted { $0.value.lastUse < $1.value.lastUse }
        for (offset, entry) in byAge {
            if s.totalCost <= target { break }
            s.entries.removeValue(forOffset: offset)
            s.totalCost -= entry.cost
        }
    }

    var counters: (hits: UInt64, misses: UInt64, bytes: Int, entries: Int) {
        state.withLock { ($0.hits, $0.misses, $0.totalCost, $0.entries.count) }
    }
}
