/// A hash table from file offsets to values: what the frame caches look pages up in, once
/// per tree level of every lookup.
///
/// Open addressing with linear probing and Fibonacci hashing (multiply by 2⁶⁴/φ, keep the
/// top bits), so a lookup is a multiply, a shift and usually one slot: the key and its value
/// share the slot, so a hit costs one cache line where `Dictionary` touches its bitmap, its
/// key array and its value array, and hashes the offset with SipHash (callgrind, W1 get
/// after a reopen: the cache's lookups 66M → 29M instructions for 100,000 gets). Offsets are
/// not chosen by an attacker, so a seeded hash buys nothing here.
/// Deletion shifts later entries of a probe run back, so no tombstones build up.
struct OffsetTable<Value> {
    private struct Slot {
        var offset: UInt64
        var value: Value?
    }

    private var slots: [Slot]
    private var shift: UInt64
    private(set) var count = 0

    init() {
        slots = Array(repeating: Slot(offset: 0, value: nil), count: 16)
        shift = 64 - 4
    }

    private var mask: Int { slots.count - 1 }

    @inline(__always)
    private func home(of offset: UInt64) -> Int {
        Int(truncatingIfNeeded: (offset &* 0x9E37_79B9_7F4A_7C15) >> shift)
    }

    /// The slot holding `offset`, or nil.
    @inline(__always)
    func slot(of offset: UInt64) -> Int? {
        var i = home(of: offset)
        while slots[i].value != nil {
            if slots[i].offset == offset { return i }
            i = (i + 1) & mask
        }
        return nil
    }

    /// The value in a slot `slot(of:)` returned; set it in place (the slot stays taken).
    subscript(slot i: Int) -> Value {
        get { slots[i].value! }
        set { slots[i].value = newValue }
    }

    subscript(offset: UInt64) -> Value? {
        slot(of: offset).map { slots[$0].value! }
    }

    /// Stores `value` for `offset`; returns the value it replaces.
    @discardableResult
    mutating func updateValue(_ value: Value, forOffset offset: UInt64) -> Value? {
        if let i = slot(of: offset) {
            let old = slots[i].value
            slots[i].value = value
            return old
        }
        if (count + 1) * 4 > slots.count * 3 { grow() }
        var i = home(of: offset)
        while slots[i].value != nil { i = (i + 1) & mask }
        slots[i] = Slot(offset: offset, value: value)
        count += 1
        return nil
    }

    /// Removes `offset`; returns its value.
    @discardableResult
    mutating func removeValue(forOffset offset: UInt64) -> Value? {
        guard var hole = slot(of: offset) else { return nil }
        let old = slots[hole].value
        // Backward shift: move each later entry of the run whose home is not between the
        // hole and it into the hole, so every entry stays reachable from its home.
        var next = hole
        while true {
            next = (next + 1) & mask
            guard slots[next].value != nil else { break }
            let home = home(of: slots[next].offset)
            let staysPut = hole <= next ? (hole < home && home <= next) : (hole < home || home <= next)
            if !staysPut {
                slots[hole] = slots[next]
                hole = next
            }
        }
        slots[hole] = Slot(offset: 0, value: nil)
        count -= 1
        return old
    }

    /// Every offset and its value, in no particular order.
    var elements: [(offset: UInt64, value: Value)] {
        slots.compactMap { slot in slot.value.map { (slot.offset, $0) } }
    }

    private mutating func grow() {
        let old = slots
        slots = Array(repeating: Slot(offset: 0, value: nil), count: old.count * 2)
        shift -= 1
        count = 0
        for slot in old { if let value = slot.value { updateValue(value, forOffset: slot.offset) } }
    }
}
