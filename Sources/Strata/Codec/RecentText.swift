/// The short ASCII strings a decoding context made lately, found again by their bytes: a
/// value read before (a tag, a status, a country code) is returned as the `String` made the
/// first time instead of being made again.
///
/// Stored text repeats: W2's documents draw their 20 tags from a small vocabulary, and
/// making each a `String` cost ~190 instructions (the standard library validated the bytes,
/// then copied them into the string one at a time), where finding it here costs ~55
/// (callgrind, W2 typed scan.filter). Only text of at most 15 bytes is kept: such a `String` is stored in place,
/// so returning it copies two words and counts no reference.
///
/// Text that does not repeat (names, say) would only pay for the lookup. So the table
/// counts: when fewer than a quarter of 1,024 lookups found their text, it stands aside for
/// the next 65,536 strings, then tries again.
///
/// A context is lent to one decode at a time (`ReusableDecodingContext`), so this needs no
/// lock. It is a value the context holds in place, not an object: reaching an object
/// through the context retained and released it for every string.
///
/// A trivial value: whoever makes one with `allocate` frees it with `deallocate`, once.
struct RecentText {
    /// The longest text kept: the most a `String` holds in place.
    static let maxLength = 15

    private struct Slot {
        var words: (UInt64, UInt64)
        /// −1 for an empty slot.
        var length: Int
        var string: String
    }

    /// 16 KiB of slots in 256 sets of two, a set chosen by the text's bytes: room for a
    /// vocabulary of a few hundred (W2's 200 tags; with one slot per text, 64 of them
    /// found about one in three).
    private static let slotCount = 512
    private let slots: UnsafeMutablePointer<Slot>
    private var lookups = 0, found = 0
    /// Strings still to make without looking (after a window that found too little).
    private var standingAside = 0

    private init(slots: UnsafeMutablePointer<Slot>) { self.slots = slots }

    /// An empty table.
    static func allocate() -> RecentText {
        let slots = UnsafeMutablePointer<Slot>.allocate(capacity: slotCount)
        slots.initialize(repeating: Slot(words: (0, 0), length: -1, string: ""), count: slotCount)
        return RecentText(slots: slots)
    }

    func deallocate() {
        slots.deinitialize(count: Self.slotCount)
        slots.deallocate()
    }

    /// Whether to look the next string up: false while the table stands aside (the caller
    /// then makes the string itself, as if there were no table).
    @inline(__always)
    mutating func isLooking() -> Bool {
        guard standingAside == 0 else {
            standingAside &-= 1
            return false
        }
        return true
    }

    /// `bytes` (at most `maxLength`) as the `String` made for them before, or as `make`
    /// makes it now (and kept); nil when `make` refuses them.
    mutating func string(_ bytes: UnsafeRawBufferPointer, making make: (UnsafeRawBufferPointer) -> String?) -> String? {
        let words = Self.words(bytes)
        let set = slots + Self.set(words) &* 2
        lookups &+= 1
        if lookups == 1024 { closeWindow() }
        for way in 0 ..< 2 where set[way].length == bytes.count && set[way].words == words {
            found &+= 1
            return set[way].string
        }
        // Only text `make` accepted is kept, so text found by its bytes would pass it too.
        guard let string = make(bytes) else { return nil }
        // The newer text first: the older of the two gives way.
        set[1] = set[0]
        set[0] = Slot(words: words, length: bytes.count, string: string)
        return string
    }

    /// Ends a window of lookups: stands aside when too few found their text.
    private mutating func closeWindow() {
        if found < lookups / 4 { standingAside = 65_536 }
        (lookups, found) = (0, 0)
    }

    /// Two words that, with the length, tell `bytes` (at most 15) apart from any other
    /// text: the first and last eight bytes (or four, or the bytes themselves), overlapping
    /// where the text is shorter than both. Only bytes of the text are read.
    @inline(__always)
    private static func words(_ bytes: UnsafeRawBufferPointer) -> (UInt64, UInt64) {
        let n = bytes.count
        if n >= 8 {
            return (bytes.loadUnaligned(as: UInt64.self), bytes.loadUnaligned(fromByteOffset: n &- 8, as: UInt64.self))
        }
        if n >= 4 {
            return (UInt64(bytes.loadUnaligned(as: UInt32.self)), UInt64(bytes.loadUnaligned(fromByteOffset: n &- 4, as: UInt32.self)))
        }
        var word: UInt64 = 0
        for (i, byte) in bytes.enumerated() { word |= UInt64(byte) &<< (8 &* UInt64(i)) }
        return (word, 0)
    }

    /// The set of two slots for text with these words: the top eight bits of their mix.
    @inline(__always)
    private static func set(_ words: (UInt64, UInt64)) -> Int {
        Int(truncatingIfNeeded: (((words.0 &* 0x9E37_79B9_7F4A_7C15) ^ words.1) &* 0xBF58_476D_1CE4_E5B9) &>> 56)
    }
}
