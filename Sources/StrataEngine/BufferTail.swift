import Synchronization

/// The newest writes of one tree's write buffer, as small commits left them
/// (docs/WRITE-BUFFER.md, "The tail"): each commit's pending writes kept where they were
/// written, appended after the last commit's, with nothing sorted, merged or copied.
///
/// A commit of a few records used to sort its writes into a run of their own, add it to
/// the runs (a new list of runs, its array and its filters' addresses) and, every fourth
/// commit, merge four small runs into a larger one; the state it replaced then freed what
/// those made. A third of a one-record durable commit's own CPU went there (perf, W1
/// commit.durable at 1M). Here it costs an append: the pending writes' leaf is kept as it
/// is (a *batch*), and each of its current entries gets a slot saying where it lies.
///
/// One tail is shared by every state that reads the tree, each through a `View` of the
/// positions it sees. Only the writer appends, always at the end of its own state's view,
/// and into memory no reader reads: a reader sees positions below its view's end, which
/// were written before the state holding that view was published (through a lock), and
/// slots never move (they are allocated once, at their most). A state the writer gave up
/// (a rolled-back transaction, a failed commit) may leave slots past the published end;
/// the next append writes over them.
///
/// A lookup scans its view's slots newest first, comparing whole-key hashes before bytes.
/// A cursor, a merge into the tree and a seal read the view as a sorted run, built once
/// per view and kept. Once the tail holds `capacity` entries or `byteCapacity` bytes it is
/// sealed: its view becomes a run (`TreeChanges.sealTail`), and the next small commit
/// starts a new tail.
final class BufferTail: @unchecked Sendable {
    /// The most entries a tail holds before it is sealed into a run: the size of the runs
    /// that are merged beside the writer (`SortedRuns.smallestMergedBeside`), so a sealed
    /// tail joins them, and few enough that a lookup's scan of its slots costs about what a
    /// small run's search did.
    static let capacity = 256
    /// The most bytes its batches hold (their entries as encoded, rewritten ones included).
    static let byteCapacity = 64 << 10

    /// What one state sees of a tail: positions `start ..< end`, never empty.
    struct View {
        let tail: BufferTail
        let start: Int
        let end: Int

        var count: Int { end - start }
        /// The bytes of the batches the view holds.
        var bytes: Int { tail.bytesBefore[end] - tail.bytesBefore[start] }
        /// The view's entries in key order, the newest of each key (`BufferTail.run`).
        var run: BufferRun { tail.run(self) }
    }

    /// Where an entry lies: entry `index` of batch `batch`.
    private struct Slot {
        var index: Int32
        var batch: UInt16
        var deleted: Bool
        var unresolved: Bool
    }

    /// The batches, retained while the tail lives: the pending writes' leaves, as written.
    private let batches: UnsafeMutablePointer<Unmanaged<LeafNode>?>
    private let slots: UnsafeMutablePointer<Slot>
    /// Per position, its key's `BloomFilter.hash`: what a lookup's scan compares.
    private let hashes: UnsafeMutablePointer<UInt64>
    /// Per position, the bytes of every batch before it (a batch counted at its first
    /// position); `capacity + 1` of them.
    private let bytesBefore: UnsafeMutablePointer<Int>
    /// The writer's: the highest position ever appended to, and the highest batch slot
    /// holding a leaf.
    private var highWater = 0
    private var batchesHeld = 0
    /// What readers work out from the slots once and keep: the sorted run of the last view
    /// asked for, and per position whether an unresolved entry's key is absent from the tree.
    private let derived = Mutex(Derived())

    private struct Derived {
        var run: (start: Int, end: Int, run: BufferRun)?
        /// Per position from 0: 1 when its entry is unresolved and its key absent from the
        /// tree, 0 when not, -1 not yet looked up.
        var absent: [Int8] = []
    }

    init() {
        batches = .allocate(capacity: Self.capacity)
        batches.initialize(repeating: nil, count: Self.capacity)
        slots = .allocate(capacity: Self.capacity)
        hashes = .allocate(capacity: Self.capacity)
        bytesBefore = .allocate(capacity: Self.capacity + 1)
        bytesBefore[0] = 0
    }

    deinit {
        for b in 0 ..< batchesHeld { batches[b]?.release() }
        batches.deallocate()
        slots.deallocate()
        hashes.deallocate()
        bytesBefore.deallocate()
    }

    /// `view` with `pending`'s current writes appended as the newest, in a new tail when
    /// `view` is nil; nil when they do not fit (the caller seals the tail and makes them a
    /// run). Called by the writer, which never writes to `pending` afterwards: its leaf
    /// becomes a batch of the tail, as it is.
    static func appending(_ pending: PendingWrites, to view: View?) -> View? {
        let start = view?.start ?? 0, position = view?.end ?? 0
        let leafBytes = pending.entries.bytes.count
        guard pending.keys > 0, pending.keys <= capacity - position,
              (view?.bytes ?? 0) + leafBytes <= byteCapacity else { return nil }
        let tail = view?.tail ?? BufferTail()
        tail.append(pending, at: position, leafBytes: leafBytes)
        return View(tail: tail, start: start, end: position + pending.keys)
    }

    private func append(_ pending: PendingWrites, at position: Int, leafBytes: Int) {
        if position < highWater { forget(from: position) }
        let batch = position == 0 ? 0 : Int(slots[position - 1].batch) + 1
        batches[batch]?.release()
        batches[batch] = .passRetained(pending.entries)
        batchesHeld = max(batchesHeld, batch + 1)
        var p = position
        let leaf = pending.entries
        pending.forEachCurrent { i in
            slots[p] = Slot(index: Int32(i), batch: UInt16(batch), deleted: pending.isDeleted(i), unresolved: pending.unresolved[i])
            hashes[p] = BloomFilter.hash(leaf.withUnchangingEntry(i) { key, _ in key })
            bytesBefore[p + 1] = bytesBefore[p] + (p == position ? leafBytes : 0)
            p += 1
        }
        highWater = max(highWater, p)
    }

    /// Drops what readers worked out from positions `position` on: the writer writes over
    /// them (their state was given up; no state that holds them is published).
    private func forget(from position: Int) {
        derived.withLock { derived in
            if let run = derived.run, run.end > position { derived.run = nil }
            if derived.absent.count > position { derived.absent.removeSubrange(position...) }
        }
    }

    /// The leaf of `batch`, retained for a caller that lends from it.
    @inline(__always)
    private func leaf(_ batch: UInt16) -> LeafNode { batches[Int(batch)].unsafelyUnwrapped.takeUnretainedValue() }

    @inline(__always)
    private func key(at position: Int) -> UnsafeRawBufferPointer {
        let slot = slots[position]
        return batches[Int(slot.batch)].unsafelyUnwrapped._withUnsafeGuaranteedRef {
            $0.withUnchangingEntry(Int(slot.index)) { key, _ in key }
        }
    }

    /// The newest write of `key` in `view`; `hash` is its `BloomFilter.hash`.
    func find(_ key: UnsafeRawBufferPointer, hash: UInt64, in view: View) -> BufferHit {
        var p = view.end
        while p > view.start {
            p -= 1
            guard hashes[p] == hash, compareBytes(self.key(at: p), key) == 0 else { continue }
            let slot = slots[p]
            return slot.deleted ? .deleted : .entry((leaf(slot.batch), Int(slot.index)))
        }
        return .absent
    }

    /// The entries of `view` in key order, the newest of each key, as a run (tombstones
    /// kept; an older write's unresolved count moves to the newest, as `BufferRun.merging`
    /// moves it). Built once per view and kept: a cursor, a merge and a seal of one state
    /// share it.
    func run(_ view: View) -> BufferRun {
        derived.withLock { derived in
            if let kept = derived.run, kept.start == view.start, kept.end == view.end { return kept.run }
            let run = sortedRun(view)
            derived.run = (view.start, view.end, run)
            return run
        }
    }

    private func sortedRun(_ view: View) -> BufferRun {
        // Newest first, and the sort is stable: of a key's writes, the newest comes first.
        let order = HeadSort.inKeyOrder((view.start ..< view.end).reversed().map(Int32.init)) { key(at: Int($0)) }
        var builder = BufferRun.Builder(bytes: view.bytes, entries: order.count)
        var i = 0
        while i < order.count {
            let newest = Int(order[i])
            var unresolved = slots[newest].unresolved
            i += 1
            while i < order.count, compareBytes(key(at: Int(order[i])), key(at: newest)) == 0 {
                unresolved = unresolved || slots[Int(order[i])].unresolved
                i += 1
            }
            let slot = slots[newest]
            builder.append(entry: Int(slot.index), of: leaf(slot.batch), deleted: slot.deleted, unresolved: unresolved)
        }
        return builder.finish()
    }

    /// What `view`'s unresolved entries add to the count of the tree at `root`: how many
    /// of their keys it lacks. Each is looked up once and the answer kept: such a key is in
    /// no older part of the buffer (a write finds a key the buffer holds, and is then
    /// resolved), so no merge of those into the tree changes the answer.
    func countOfUnresolved(in view: View, store: PageStore, root: NodeRef?) throws -> Int {
        try derived.withLock { derived in
            if derived.absent.count < view.end { derived.absent += repeatElement(-1, count: view.end - derived.absent.count) }
            var absent = 0
            for p in view.start ..< view.end where slots[p].unresolved {
                if derived.absent[p] < 0 {
                    derived.absent[p] = try TreeReader.locate(store: store, root: root, key: key(at: p)) == nil ? 1 : 0
                }
                absent += Int(derived.absent[p])
            }
            return absent
        }
    }
}
