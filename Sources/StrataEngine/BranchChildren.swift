import CPrefetch

/// A branch's child references, in a buffer that the branch's copy can take over instead of
/// sharing it.
///
/// Why: a write transaction copies every branch on the path to each leaf it changes (the
/// older version stays visible to snapshots). With the children in an `Array`, the copy
/// shared the buffer until its first change, then copied it, retaining each of ~120
/// children, and the old version's release later released them all again: cold cache
/// lines, one atomic operation each. In a one-record durable commit at 1M records that was
/// 23 µs of its ~60 µs of work (perf).
///
/// How: the copy moves the references bitwise (`init(takingFrom:)`), and the source keeps
/// its bytes, unowned, for the snapshots that still read it (`isLent`). The source's node
/// then holds the copy's node strongly (`BranchNode.heir`), so the copy, which owns what
/// the source shows, cannot go before the source. A reference the copy later replaces or
/// removes may still be shown by the source, so it is not released but kept (`retired`)
/// until the copy goes. References that came in any other way (inserted, or copied with a
/// retain) are released as usual.
///
/// Beside each reference a slot keeps where the child's search lines are (`SearchLines`),
/// so that a lookup choosing the child asks for them with the child itself.
struct BranchChildren: ~Copyable {
    /// A child reference and where its search reads first.
    private struct Slot {
        var reference: NodeRef
        var lines: SearchLines

        init(_ reference: NodeRef) {
            self.reference = reference
            lines = reference.searchLines
        }
    }

    private var base: UnsafeMutablePointer<Slot>
    private(set) var count: Int
    private var capacity: Int
    /// The references were moved to a copy, which owns them now; these bytes stay for the
    /// readers of this version and are not released with it.
    private(set) var isLent = false
    /// Some references here were moved from an older version that may still show them:
    /// what is replaced or removed goes to `retired` rather than being released.
    private(set) var inherits = false
    /// Some slot has held an in-memory node (not only page addresses): only then does
    /// moving instead of copying save anything.
    private(set) var holdsNodes = false
    /// References an older version may still show, released with this one.
    private var retired: [NodeRef] = []

    /// Copies `references` (retaining them).
    init(_ references: [NodeRef]) {
        capacity = max(references.count, 4)
        base = .allocate(capacity: capacity)
        count = references.count
        for (i, reference) in references.enumerated() { (base + i).initialize(to: Slot(reference)) }
        holdsNodes = references.contains { !$0.isStored }
    }

    /// Copies `other`'s references (retaining them); the two are independent.
    init(copying other: borrowing BranchChildren) {
        capacity = max(other.count, 4)
        base = .allocate(capacity: capacity)
        count = other.count
        base.initialize(from: other.base, count: other.count)
        holdsNodes = other.holdsNodes
    }

    /// Takes `other`'s references without retaining them; `other` keeps its bytes for its
    /// readers (`isLent`), and the caller must keep the result alive as long as `other`.
    init(takingFrom other: inout BranchChildren) {
        precondition(!other.isLent, "a branch's children are moved to one copy at most")
        capacity = other.count + 4
        base = .allocate(capacity: capacity)
        count = other.count
        UnsafeMutableRawPointer(base).copyMemory(from: other.base, byteCount: other.count * MemoryLayout<Slot>.stride)
        other.isLent = true
        inherits = true
        holdsNodes = other.holdsNodes
    }

    /// References `from...` moved out of `other` (splitting a branch): the caller keeps the
    /// result alive as long as `other` when `other.inherits`.
    private init(splitting other: inout BranchChildren, from start: Int) {
        let moved = other.count - start
        capacity = max(moved, 4)
        base = .allocate(capacity: capacity)
        count = moved
        base.moveInitialize(from: other.base + start, count: moved)
        other.count = start
        inherits = other.inherits
        holdsNodes = other.holdsNodes
    }

    deinit {
        if !isLent { base.deinitialize(count: count) }
        base.deallocate()
    }

    /// Child `index`, retained.
    @inline(__always)
    subscript(index: Int) -> NodeRef {
        precondition(index >= 0 && index < count, "child index out of range")
        return base[index].reference
    }

    /// Child `index`, not retained: valid while this buffer holds it.
    @inline(__always)
    func unretained(at index: Int) -> UnretainedNodeRef {
        precondition(index >= 0 && index < count, "child index out of range")
        return base[index].reference.unretained
    }

    /// Child `index`, not retained, after asking for its node and its search lines
    /// together (`SearchLines`); whether it had lines to ask for.
    @inline(__always)
    func prefetchedChild(at index: Int) -> (child: UnretainedNodeRef, linesAsked: Bool) {
        precondition(index >= 0 && index < count, "child index out of range")
        let slot = base + index
        let child = slot.pointee.reference.unretained
        child.prefetchNode()
        return (child, slot.pointee.lines.prefetch())
    }

    /// Child `index`'s search lines as this buffer keeps them (for tests).
    func lines(at index: Int) -> SearchLines {
        precondition(index >= 0 && index < count, "child index out of range")
        return base[index].lines
    }

    /// Takes child `index`'s search lines again from the child: after a change to the child
    /// that may have moved them (a put into a leaf this transaction owns).
    @inline(__always)
    mutating func refreshLines(at index: Int) {
        precondition(index >= 0 && index < count, "child index out of range")
        base[index].lines = base[index].reference.searchLines
    }

    /// Starts loading child `index`'s slot, for a lookup that reads it a little later
    /// (`TreeReader.GroupWalk`). A hint: it never faults.
    @inline(__always)
    func prefetchSlot(at index: Int) {
        strata_prefetch(UnsafeRawPointer(base + index))
    }

    /// Every reference, retained, as an array (checkpoints, statistics, verification).
    var array: [NodeRef] { UnsafeBufferPointer(start: base, count: count).map(\.reference) }

    /// Puts `reference` in slot `index`; the one it replaces is released or retired.
    mutating func replace(at index: Int, with reference: NodeRef) {
        precondition(!isLent && index >= 0 && index < count, "child index out of range, or a lent version changed")
        if base[index].reference.isSame(as: reference) { return refreshLines(at: index) }
        let old = (base + index).move()
        (base + index).initialize(to: Slot(reference))
        if !reference.isStored { holdsNodes = true }
        discard(old.reference)
    }

    /// Inserts `reference` at `index`.
    mutating func insert(_ reference: NodeRef, at index: Int) {
        precondition(!isLent && index >= 0 && index <= count, "child index out of range, or a lent version changed")
        reserve(count + 1)
        (base + index + 1).moveInitialize(from: base + index, count: count - index)
        (base + index).initialize(to: Slot(reference))
        count += 1
        if !reference.isStored { holdsNodes = true }
    }

    /// Removes slot `index`; its reference is released or retired.
    mutating func remove(at index: Int) {
        precondition(!isLent && index >= 0 && index < count, "child index out of range, or a lent version changed")
        let old = (base + index).move()
        (base + index).moveInitialize(from: base + index + 1, count: count - index - 1)
        count -= 1
        discard(old.reference)
    }

    /// Appends `other`'s references, retained.
    mutating func append(copying other: borrowing BranchChildren) {
        precondition(!isLent, "a lent version changed")
        reserve(count + other.count)
        (base + count).initialize(from: other.base, count: other.count)
        count += other.count
        holdsNodes = holdsNodes || other.holdsNodes
    }

    /// Moves slots `start...` into a new buffer.
    mutating func split(from start: Int) -> BranchChildren {
        precondition(!isLent && start >= 0 && start <= count, "split index out of range, or a lent version changed")
        return BranchChildren(splitting: &self, from: start)
    }

    private mutating func discard(_ old: consuming NodeRef) {
        if inherits && !old.isStored { retired.append(old) }
    }

    private mutating func reserve(_ needed: Int) {
        guard needed > capacity else { return }
        let grown = max(needed, capacity * 2)
        let new = UnsafeMutablePointer<Slot>.allocate(capacity: grown)
        new.moveInitialize(from: base, count: count)
        base.deallocate()
        base = new
        capacity = grown
    }
}

extension NodeRef {
    /// A page address: no node in memory, nothing counted.
    @inline(__always)
    var isStored: Bool {
        if case .stored = self { return true }
        return false
    }

    /// Whether both refer to the same node object or the same page.
    @inline(__always)
    func isSame(as other: NodeRef) -> Bool {
        switch (self, other) {
        case (.leaf(let a), .leaf(let b)): a === b
        case (.branch(let a), .branch(let b)): a === b
        case (.stored(let a), .stored(let b)): a == b
        default: false
        }
    }
}
