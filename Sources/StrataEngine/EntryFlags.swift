/// One flag per entry of a buffered run or of pending writes, appended as entries are:
/// which entries are tombstones, and which carry a count not yet resolved
/// (`TreeChanges+WriteBuffer.swift`).
struct EntryFlags {
    private var words: [UInt64] = []

    init(capacity: Int = 0) { words.reserveCapacity(capacity / 64 + 1) }

    /// Adds the flag of entry `index`, the next one.
    @inline(__always)
    mutating func append(_ flag: Bool, at index: Int) {
        if index & 63 == 0 { words.append(0) }
        if flag { words[index >> 6] |= 1 << UInt64(index & 63) }
    }

    @inline(__always)
    subscript(index: Int) -> Bool { words[index >> 6] & (1 << UInt64(index & 63)) != 0 }
}
