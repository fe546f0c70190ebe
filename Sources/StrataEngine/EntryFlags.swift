/// One flag per entry of a buffered run or of pending writes, appended as entries are:
/// which entries are tombstones, and which carry a count not yet resolved
/// (`TreeChanges+WriteBuffer.swift`).
struct EntryFlags {
    /// The flags of the first 64 entries, in place: a run or pending writes of that many
    /// entries (every one-record commit's) allocate no array for them. (Two arrays per
    /// tree per one-record durable commit, and two per run its tier merges built, each an
    /// allocation and a free: callgrind, W1 commit.durable.)
    private var first: UInt64 = 0
    /// The flags of entries 64 on, 64 to a word.
    private var rest: [UInt64] = []

    init(capacity: Int = 0) {
        if capacity > 64 { rest.reserveCapacity((capacity - 1) / 64) }
    }

    /// Adds the flag of entry `index`, the next one.
    @inline(__always)
    mutating func append(_ flag: Bool, at index: Int) {
        guard index >= 64 else {
            if flag { first |= 1 << UInt64(index) }
            return
        }
        if index & 63 == 0 { rest.append(0) }
        if flag { rest[(index >> 6) - 1] |= 1 << UInt64(index & 63) }
    }

    @inline(__always)
    subscript(index: Int) -> Bool {
        let word = index < 64 ? first : rest[(index >> 6) - 1]
        return word & (1 << UInt64(index & 63)) != 0
    }
}
