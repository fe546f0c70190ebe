import Synchronization

/// Decoded frames by file offset, bounded by a byte budget: the tree's pages (`Node`) in one,
/// out-of-line values (`[UInt8]`) in another, so reading large values never evicts the tree.
/// Eviction drops the least recently used quarter when the budget is exceeded. Safe to use
/// from many threads.
///
/// Scans do not evict what lookups use. A page a scan reads (a cursor, compaction, a
/// verify or space report walking every page) enters as if used before every page a lookup
/// touched, and a scan reading it again does not make it recent: eviction drops the pages
/// scans brought in, oldest first, before any page a lookup used. So a scan of a tree larger
/// than the cache leaves the hot pages of point lookups in place, while a tree that fits
/// stays cached for the next scan (midpoint insertion, as InnoDB's buffer pool does for
/// read-ahead, at the old end).
final class FrameCache<Cached: Sendable>: Sendable {
    /// Who reads a frame: a lookup, whose pages are the hot set, or a scan.
    enum Access {
        case lookup
        case scan
    }

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
        /// The use times lookups stamp, all above every stamp a scan's insertion takes, so
        /// that eviction (oldest first) drops scanned pages before looked-up ones.
        var clock: UInt64 = 1 << 48
        /// The stamps of pages scans brought in, in the order they came.
        var scanClock: UInt64 = 0
        var hits: UInt64 = 0
        var misses: UInt64 = 0
    }

    let budget: Int
    /// Leaves kept in memory by the trees, which share this budget: the cache holds at
    /// most what they leave of it.
    let kept: KeptLeaves?
    private let state = Mutex(State())

    init(budget: Int, sharingWith kept: KeptLeaves? = nil) {
        self.budget = Self.budget(for: budget)
        self.kept = kept
    }

    /// The budget a cache asked for `requested` bytes has: at least 64 KiB.
    static func budget(for requested: Int) -> Int { max(requested, 64 * 1024) }

    /// The most this cache holds now: its budget less what the kept leaves take.
    private var room: Int { budget - (kept?.current ?? 0) }

    /// The frame decoded from `offset`, when it is cached; a lookup's read makes it recent,
    /// a scan's leaves its age as it is.
    func entry(at offset: UInt64, for access: Access = .lookup) -> Cached? {
        state.withLock { s in
            // One hash lookup: the entry is found once and touched in place.
            guard let slot = s.entries.slot(of: offset) else {
                s.misses += 1
                return nil
            }
            if access == .lookup {
                s.clock &+= 1
                s.entries[slot: slot].lastUse = s.clock
            }
            s.hits += 1
            return s.entries[slot: slot].cached
        }
    }

    /// Caches `cached`, decoded from the frame at `offset`: as recent when a lookup read it,
    /// as older than every looked-up page when a scan did. A `pinned` entry stays until
    /// `unpin` or `remove` (its cost still counts against the budget).
    func insert(_ cached: Cached, at offset: UInt64, cost: Int, pinned: Bool = false, for access: Access = .lookup) {
        state.withLock { s in
            let stamp: UInt64
            switch access {
            case .lookup:
                s.clock &+= 1
                stamp = s.clock
            case .scan:
                s.scanClock &+= 1
                stamp = s.scanClock
            }
            if let old = s.entries.updateValue(Entry(cached: cached, cost: cost, lastUse: stamp, pinned: pinned), forOffset: offset) {
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
