/// A blocked Bloom filter over the keys of one buffered run (`BufferRun`): whether a run
/// may hold a key, answered from one cache line, so that a lookup of a key the runs do not
/// hold (most writes of a load, and every read of a key in the tree) skips each run's
/// binary search.
///
/// Each key sets `probes` bits within one 512-bit block chosen by its hash (Putze, Sanders
/// and Singler, "Cache-, Hash- and Space-Efficient Bloom Filters"); at `bitsPerKey` bits a
/// key that is absent passes about 1% of the time. Built once, with its run, never changed.
struct BloomFilter {
    static let bitsPerKey = 10
    static let probes = 6
    private static let wordsPerBlock = 8

    private var words: [UInt64]
    private let blockMask: Int

    /// An empty filter sized for `keys` keys.
    init(keys: Int) {
        var blocks = 1
        while blocks * 512 < keys * Self.bitsPerKey { blocks <<= 1 }
        words = Array(repeating: 0, count: blocks * Self.wordsPerBlock)
        blockMask = blocks - 1
    }

    /// The hash a filter takes for `key`: the write buffer's one hash of a key, computed
    /// once per lookup and shared by the pending writes' table and every run's filter.
    @inline(__always)
    static func hash(_ key: UnsafeRawBufferPointer) -> UInt64 { XXH64.hash(key) }

    mutating func insert(hash: UInt64) {
        let block = Self.firstWord(of: hash, blockMask: blockMask)
        words.withUnsafeMutableBufferPointer { words in
            for probe in 0 ..< Self.probes {
                let bit = Self.bit(probe, of: hash)
                words[block + bit >> 6] |= 1 << UInt64(bit & 63)
            }
        }
    }

    /// This filter's membership test, read from where its words lie rather than through its
    /// array: valid while the filter lives unchanged (a run's never changes once built).
    var probe: Probe { words.withUnsafeBufferPointer { Probe(words: $0.baseAddress!, blockMask: blockMask) } }

    /// A filter's tests, read from its words' address: `SortedRuns` keeps one per run side
    /// by side, so a lookup asks for every run's block before testing any, and their misses
    /// overlap instead of each run's object, then its words, then its block waiting in turn.
    struct Probe {
        let words: UnsafePointer<UInt64>
        let blockMask: Int

        /// Starts loading the block `hash` falls in.
        @inline(__always)
        func prefetch(hash: UInt64) {
            prefetchLines(from: words + BloomFilter.firstWord(of: hash, blockMask: blockMask), count: MemoryLayout<UInt64>.stride)
        }

        /// False when no key with this hash was inserted; true when one may have been.
        @inline(__always)
        func mayContain(hash: UInt64) -> Bool {
            let block = words + BloomFilter.firstWord(of: hash, blockMask: blockMask)
            for probe in 0 ..< BloomFilter.probes {
                let bit = BloomFilter.bit(probe, of: hash)
                if block[bit >> 6] & (1 << UInt64(bit & 63)) == 0 { return false }
            }
            return true
        }
    }

    /// The first word of the block `hash` falls in: from the hash's bits mixed again, so
    /// that the block and the bits within it do not come from the same bits.
    @inline(__always)
    private static func firstWord(of hash: UInt64, blockMask: Int) -> Int {
        (Int(truncatingIfNeeded: (hash &* 0x9E37_79B9_7F4A_7C15) >> 32) & blockMask) * wordsPerBlock
    }

    /// Bit `probe` of the block: nine bits of the hash each.
    @inline(__always)
    private static func bit(_ probe: Int, of hash: UInt64) -> Int {
        Int(truncatingIfNeeded: hash >> UInt64(9 * probe)) & 511
    }
}
