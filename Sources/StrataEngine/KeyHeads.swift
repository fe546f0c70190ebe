/// The search aid both node kinds keep beside their sorted keys: the bytes every key of the
/// node starts with (its prefix, up to eight bytes), and each key's head (`keyHead`) taken
/// after that prefix.
///
/// A binary search compares heads, contiguous in one array, and reads a key's bytes only
/// where heads tie. Taking heads after the shared prefix is what makes ties rare: the keys of
/// one node usually agree on their first bytes (a typed W1 key is a tag and an 8-byte id, and
/// a leaf's ids differ only in their last byte or two), so heads of the whole keys tied at
/// about four probes of every leaf search, each a key decoded from the leaf's bytes and
/// compared (callgrind: ~290 of a typed get's ~5,250 instructions; at 1M records, a cache
/// miss per tie). Heads after the prefix tell them apart at once.
///
/// In memory only: pages store whole keys, and the heads are rebuilt when a page is read.
struct KeyHeads {
    /// What a search reads, apart from the heads array: trivial, so a node hands it to a
    /// search by value. (The searches were methods of `KeyHeads`, and calling one on a
    /// node's heads copied them out of the node, retaining the array: an atomic operation on
    /// its header, a miss that each lookup in a large tree waited for; perf, W1 get at 1M: a
    /// sixth of the time.)
    private(set) var probe = Probe()
    /// Each key's head after the prefix, in key order.
    private(set) var heads: [UInt64] = [] {
        didSet {
            probe.count = heads.count
            probe.elements = heads.elementsAddress
        }
    }
    var prefixLength: Int { probe.prefixLength }
    var count: Int { probe.count }
    var wholeLength: Int { probe.wholeLength }

    /// Heads of no keys.
    init() {}

    /// The heads of `count` keys in ascending order, `key(i)` being the `i`-th (its bytes
    /// valid during the call), after the prefix the first and last share — which every key
    /// between them shares too. (Nodes keep their keys sorted; page decoders check the order
    /// before building heads.)
    init(count: Int, key: (Int) -> UnsafeRawBufferPointer) {
        guard count > 0 else { return }
        setPrefix(first: key(0), last: key(count - 1))
        heads.reserveCapacity(count)
        var length = key(0).count
        for i in 0 ..< count {
            let next = key(i)
            if next.count != length { length = -1 }
            heads.append(Probe.head(of: next, after: prefixLength))
        }
        setWholeLength(length)
        probe.count = heads.count   // an initializer's writes call no observer
        probe.elements = heads.elementsAddress
    }

    /// The heads of `keys`, in ascending order.
    init(_ keys: [[UInt8]]) {
        guard let first = keys.first, let last = keys.last else { return }
        first.withUnsafeBytes { a in last.withUnsafeBytes { b in setPrefix(first: a, last: b) } }
        heads = keys.map { $0.withUnsafeBytes { Probe.head(of: $0, after: prefixLength) } }
        setWholeLength(keys.allSatisfy { $0.count == first.count } ? first.count : -1)
        probe.count = heads.count   // an initializer's writes call no observer
        probe.elements = heads.elementsAddress
    }

    /// Records that every key is `length` bytes long (−1: not all one length), when a head
    /// holds all of such a key after the prefix.
    private mutating func setWholeLength(_ length: Int) {
        probe.wholeLength = length >= 0 && length - prefixLength <= 8 ? length : -1
    }

    /// Takes the bytes the first and last keys share (at most eight) as the prefix, or none
    /// when neither is longer than a head: whole heads then tell the keys apart (an 8-byte
    /// id, say), and skipping a prefix would only cost its check (3% of an engine get).
    private mutating func setPrefix(first: UnsafeRawBufferPointer, last: UnsafeRawBufferPointer) {
        guard max(first.count, last.count) > 8 else { return }
        let differing = keyHead(first) ^ keyHead(last)
        probe.prefixLength = min(differing.leadingZeroBitCount / 8, first.count, last.count)
        probe.prefixMask = prefixLength == 0 ? 0 : ~0 << (64 - 8 * UInt64(prefixLength))
        probe.prefixWord = keyHead(first) & probe.prefixMask
    }

    /// Adds the head of `key`, which sorts at `index`; false, with nothing changed, when
    /// `key` lacks the prefix: the caller then rebuilds the heads of all its keys.
    mutating func insert(_ key: UnsafeRawBufferPointer, at index: Int) -> Bool {
        let first = heads.isEmpty
        if first { (probe.prefixLength, probe.prefixWord, probe.prefixMask) = (0, 0, 0) }
        let head: UInt64
        if prefixLength == 0 {
            head = keyHead(key)
        } else {
            guard case .within(let within) = probe.standing(of: key) else { return false }
            head = within
        }
        if first {
            setWholeLength(key.count)
        } else if key.count != wholeLength {
            probe.wholeLength = -1
        }
        heads.insertMoving(head, at: index)
        return true
    }

    /// A copy of the heads `probe` reads, their array copied with room for `room` more
    /// (`LeafNode.copy`). It takes the probe, not the heads: copying a `KeyHeads` retains
    /// its array, an atomic operation on a header the copy otherwise never touches.
    init(copying probe: Probe, room: Int) {
        self.probe = probe
        heads = [UInt64](copying: probe.count, at: probe.elements, room: room)
        self.probe.elements = heads.elementsAddress   // an initializer's writes call no observer
    }

    mutating func remove(at index: Int) {
        heads.remove(at: index)
    }

    /// Moves the heads from `index` on into heads of their own, for a node splitting there:
    /// both halves keep the prefix, which all their keys still share. (Rebuilding both from
    /// their keys at every split was 3% of an engine insert's instructions.)
    mutating func splitOff(at index: Int) -> KeyHeads {
        var right = self
        right.heads = Array(heads[index...])
        heads.removeSubrange(index...)
        return right
    }

    /// Appends `other`'s heads, for a node taking in the keys of the node after it; false,
    /// with nothing changed, when their prefixes differ: the caller then rebuilds.
    mutating func append(_ other: KeyHeads) -> Bool {
        guard heads.isEmpty || other.heads.isEmpty || (prefixLength, probe.prefixWord) == (other.prefixLength, other.probe.prefixWord) else { return false }
        if heads.isEmpty {
            probe = other.probe   // the count and elements follow at the append below
        } else if !other.heads.isEmpty, wholeLength != other.wholeLength {
            probe.wholeLength = -1
        }
        heads.append(contentsOf: other.heads)
        return true
    }

    /// Whether keys running from `first` to `last` share a longer prefix than these heads
    /// skip, so that rebuilding them would spare ties.
    func wouldLengthen(first: UnsafeRawBufferPointer, last: UnsafeRawBufferPointer) -> Bool {
        var rebuilt = KeyHeads()
        rebuilt.setPrefix(first: first, last: last)
        return rebuilt.prefixLength > prefixLength
    }
}

extension KeyHeads {
    /// The part of the heads a search reads: the prefix, the count, the whole-key length
    /// and where the heads are, all trivial (see `KeyHeads.probe`). Valid while the heads it
    /// was taken from are unchanged: the caller holds the node, and a node changes only
    /// before any reader can see it.
    struct Probe {
        /// How many bytes every key of the node begins with, at most eight: the longest such
        /// prefix when the heads were built (keys inserted since may share a longer one; a
        /// shorter prefix is still correct).
        fileprivate(set) var prefixLength = 0
        /// Those bytes as a big-endian number, zero-padded: the prefix is compared with a key's
        /// head in one step.
        fileprivate(set) var prefixWord: UInt64 = 0
        /// The bits of a head that hold the prefix.
        fileprivate(set) var prefixMask: UInt64 = 0
        /// Where `heads`' elements are, taken again at every change of it: what `prefetch`
        /// reads. Through `heads.withUnsafeBytes` the prefetch loaded the array's header (a
        /// miss) and retained the array, and the lookup waited for both (perf: a quarter of a
        /// W1 get at 1M). Only ever a prefetch hint, which cannot fault.
        fileprivate(set) var elements: UnsafeRawPointer?
        /// `heads.count`, kept beside the array's reference, in the node's own cache line: a
        /// search's first probe depends only on the node then, not also on the array's header
        /// (at 1M records, a lookup misses the cache on both; perf showed the wait for the
        /// header at a quarter of a leaf search's time).
        fileprivate(set) var count = 0
        /// The length of every key, when all have one length and a head holds all of each key
        /// after the prefix (−1 otherwise): then a probe of that length whose head equals a key's
        /// is that key, and the search never reads the key's bytes. Without it, every lookup that
        /// found its key compared the two once more, reading a key from the leaf's bytes
        /// (callgrind: ~80 instructions; at 1M records also a cache miss).
        fileprivate(set) var wholeLength = -1

        @inline(__always)
        fileprivate static func head(of key: UnsafeRawBufferPointer, after skip: Int) -> UInt64 { keyHead(key, after: skip) }

        /// Where `key` stands against the keys that have the prefix.
        fileprivate enum Standing {
            /// It sorts before all of them.
            case before
            /// It sorts after all of them.
            case after
            /// It has the prefix too; this is its head after it.
            case within(head: UInt64)
        }

        /// Where `key` stands, from one or two loads where the key has eight bytes (a call or a
        /// byte loop here cost as much as the ties the prefix saves).
        @inline(__always)
        fileprivate func standing(of key: UnsafeRawBufferPointer) -> Standing {
            guard key.count >= 8 else { return standing(ofShort: key) }
            let word = UInt64(bigEndian: key.loadUnaligned(as: UInt64.self)) & prefixMask
            if word != prefixWord { return word < prefixWord ? .before : .after }
            return .within(head: Self.head(of: key, after: prefixLength))
        }

        /// `standing` for a key shorter than eight bytes.
        @inline(never)
        private func standing(ofShort key: UnsafeRawBufferPointer) -> Standing {
            let word = keyHead(key) & prefixMask
            if word != prefixWord { return word < prefixWord ? .before : .after }
            // Equal as padded words: a key shorter than the prefix is a proper prefix of it.
            if key.count < prefixLength { return .before }
            return .within(head: Self.head(of: key, after: prefixLength))
        }

        /// Starts loading the heads' cache lines together, before a search probes them
        /// (`prefetchLines`).
        @inline(__always)
        func prefetch() {
            prefetchLines(from: elements, count: count &* 8)
        }

        /// The head `key` is compared by, or where it sorts when it lacks the prefix.
        @inline(__always)
        private func target(of key: UnsafeRawBufferPointer) -> Standing {
            prefixLength == 0 ? .within(head: keyHead(key)) : standing(of: key)
        }

        /// How key `i`, whose head is `head`, compares with `key`, whose head is `target`
        /// (memcmp order); `compareKey(i)` is called only where heads tie.
        @inline(__always)
        /// (Static, and given `wholeLength`, so that the searches' closures capture no `self`:
        /// capturing it copied these heads out of their node, retaining the array, a miss and an
        /// atomic operation a lookup waited for.)
        private static func compare(_ head: UInt64, _ target: UInt64, _ key: UnsafeRawBufferPointer, _ i: Int, wholeLength: Int,
                                    _ compareKey: (Int) -> Int) -> Int {
            head != target ? (head < target ? -1 : 1) : (key.count == wholeLength ? 0 : compareKey(i))
        }

        /// Binary search among the keys in `range` (those before it sort below `key`, those
        /// after above): the index of `key` or of the first larger key, and whether it matched.
        /// `compareKey(i)` compares key `i` with `key` (memcmp order) and is called only where
        /// heads tie.
        ///
        /// `narrowed(low, high)` is called once, when the keys left to search are those from
        /// `low` to `high` and at most `Self.narrowWidth` apart (high may be `count`): a leaf
        /// starts loading those entries' bytes then, so that the entry the search ends on has
        /// arrived when it is read.
        @inline(__always)
        func search(in range: Range<Int>, for key: UnsafeRawBufferPointer, narrowed: (Int, Int) -> Void = { _, _ in },
                    compareKey: (Int) -> Int) -> (index: Int, found: Bool) {
            // A key without the prefix sorts before or after every key of the node.
            let target: UInt64
            switch self.target(of: key) {
            case .before: return (range.lowerBound, false)
            case .after: return (range.upperBound, false)
            case .within(let head): target = head
            }
            let (heads, wholeLength) = (headsBuffer, wholeLength)
            return Self.bisect(low: range.lowerBound, high: range.upperBound, narrowed: narrowed) {
                Self.compare(heads[$0], target, key, $0, wholeLength: wholeLength, compareKey)
            }
        }

        /// How few keys are left when a search calls `narrowed`: their entries span a few
        /// cache lines of a leaf.
        static let narrowWidth = 6

        /// For a cursor on key `start`: the index of `key`, or of the first larger key, when
        /// `key` sorts between key `start` and the last key (both included); nil otherwise.
        /// Gallops from `start` (1, 2, 4, … keys on) to a key at or after `key`, then searches
        /// that stretch, comparing heads: a run of ascending lookups a few keys apart (the
        /// records an index names, fetched in primary-key order) costs a few head comparisons
        /// each. (Comparing the keys' bytes instead, each decoded from the leaf, was ~200
        /// instructions of each record a typed index scan returned.)
        @inline(__always)
        func search(onFrom start: Int, for key: UnsafeRawBufferPointer, compareKey: (Int) -> Int) -> (index: Int, found: Bool)? {
            guard start < count, case .within(let target) = self.target(of: key) else { return nil }
            let (heads, wholeLength) = (headsBuffer, wholeLength)
            func order(_ i: Int) -> Int { Self.compare(heads[i], target, key, i, wholeLength: wholeLength, compareKey) }
            let here = order(start)
            if here == 0 { return (start, true) }
            let last = heads.count - 1
            guard here < 0, start < last else { return nil }
            let atLast = order(last)
            if atLast == 0 { return (last, true) }
            guard atLast > 0 else { return nil }
            // Key `start` sorts below `key`, key `last` above.
            var low = start + 1, high = last
            var probe = low, step = 1
            while probe < high {
                let c = order(probe)
                if c == 0 { return (probe, true) }
                if c > 0 { high = probe; break }
                low = probe + 1
                probe += step
                step *= 2
            }
            return Self.bisect(low: low, high: high, order)
        }

        /// The heads as a buffer, from `elements` and `count`: neither loads the array's header
        /// nor retains the array, which a lookup in a large tree waited for (perf, W1 get at
        /// 1M: the retain of the heads array was a sixth of the time). Valid while these heads
        /// are unchanged: the caller holds the node, and a node changes only before any
        /// reader can see it.
        @inline(__always)
        private var headsBuffer: UnsafeBufferPointer<UInt64> {
            UnsafeBufferPointer(start: elements?.assumingMemoryBound(to: UInt64.self), count: count)
        }

        /// The binary search both searches end with: `order(i)` tells how key `i` compares with
        /// the one sought; keys before `low` sort below it, keys from `high` on above.
        @inline(__always)
        private static func bisect(low: Int, high: Int, narrowed: (Int, Int) -> Void = { _, _ in },
                                   _ order: (Int) -> Int) -> (index: Int, found: Bool) {
            var low = low, high = high
            var told = false
            while low < high {
                if !told, high &- low <= narrowWidth {
                    told = true
                    narrowed(low, high)
                }
                let mid = (low + high) / 2
                let c = order(mid)
                if c == 0 { return (mid, true) }
                if c < 0 { low = mid + 1 } else { high = mid }
            }
            return (low, false)
        }
    }
}
