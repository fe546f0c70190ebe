import Testing
@testable import StrataEngine

/// The pieces every tree lookup goes through: the frame cache's offset table and the key
/// comparison, each checked against the plain definition it replaces.
@Suite("Lookup structures")
struct LookupStructureTests {
    @Test("the offset table holds what a dictionary holds through random inserts, replacements and removals",
          arguments: [1, 2, 3] as [UInt64])
    func offsetTableMatchesDictionary(seed: UInt64) {
        var rng = SeededGenerator(seed: seed)
        var table = OffsetTable<Int>()
        var model: [UInt64: Int] = [:]
        // Few distinct offsets, many operations: long probe runs, removals in the middle of
        // runs, and growth from 16 slots, all happen.
        let offsets = (0 ..< 600).map { _ in UInt64.random(in: 0 ... 1 << 40, using: &rng) & ~0xFFF }
        for step in 0 ..< 20_000 {
            let offset = offsets[Int.random(in: 0 ..< (step < 5_000 ? 150 : offsets.count), using: &rng)]
            if Bool.random(using: &rng) || Int.random(in: 0 ..< 4, using: &rng) == 0 {
                #expect(table.updateValue(step, forOffset: offset) == model.updateValue(step, forKey: offset))
            } else {
                #expect(table.removeValue(forOffset: offset) == model.removeValue(forKey: offset))
            }
            #expect(table.count == model.count)
        }
        for offset in offsets { #expect(table[offset] == model[offset]) }
        #expect(Dictionary(uniqueKeysWithValues: table.elements.map { ($0.offset, $0.value) }) == model)
    }

    @Test("a value changed through its slot is what a later lookup finds")
    func offsetTableSlotUpdate() throws {
        var table = OffsetTable<String>()
        table.updateValue("a", forOffset: 4096)
        let slot = try #require(table.slot(of: 4096))
        table[slot: slot] = "b"
        #expect(table[4096] == "b")
        #expect(table.slot(of: 8192) == nil)
    }

    @Test("key comparison orders byte strings as memcmp does, shorter prefixes first, at every length")
    func compareBytesIsLexicographic() {
        var rng = SeededGenerator(seed: 7)
        for _ in 0 ..< 20_000 {
            let length = Int.random(in: 0 ... 48, using: &rng)
            let a = (0 ..< length).map { _ in UInt8.random(in: 0 ... 3, using: &rng) * 85 }
            var b = a
            // Change, cut or extend b somewhere, so equal prefixes of every length occur.
            switch Int.random(in: 0 ..< 4, using: &rng) {
            case 0 where !b.isEmpty: b[Int.random(in: 0 ..< b.count, using: &rng)] = UInt8.random(in: 0 ... 255, using: &rng)
            case 1 where !b.isEmpty: b.removeLast(Int.random(in: 1 ... b.count, using: &rng))
            case 2: b.append(contentsOf: (0 ..< Int.random(in: 1 ... 20, using: &rng)).map { _ in UInt8.random(in: 0 ... 255, using: &rng) })
            default: break
            }
            let expected = a.lexicographicallyPrecedes(b) ? -1 : (a == b ? 0 : 1)
            #expect(compareBytes(a, b).signum() == expected, "\(a) vs \(b)")
        }
    }

    @Test("byte equality holds exactly for equal strings: every length to 40, a difference at every position")
    func equalBytesFindsEveryDifference() {
        for length in 0 ... 40 {
            let a = (0 ..< length).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
            a.withUnsafeBytes { ra in
                Array(a).withUnsafeBytes { #expect(equalBytes(ra, $0), "length \(length), equal") }
                for position in 0 ..< length {
                    var b = a
                    b[position] ^= 0x40
                    b.withUnsafeBytes { #expect(!equalBytes(ra, $0), "length \(length), differing at \(position)") }
                }
                (a + [0]).withUnsafeBytes { #expect(!equalBytes(ra, $0), "length \(length) against one longer") }
            }
        }
    }

    @Test("a leaf finds each key by its head and its bytes: short keys, zero bytes, and keys sharing their first eight bytes",
          arguments: [1, 2] as [UInt64])
    func leafSearchWithSharedHeads(seed: UInt64) {
        var rng = SeededGenerator(seed: seed)
        let limits = NodeLimits(pageSize: 1 << 15)
        // Keys drawn from few bytes, 1 to 12 long: many share heads, many end in zeros
        // that a padded head cannot tell from a shorter key.
        func randomKey() -> [UInt8] {
            (0 ..< Int.random(in: 1 ... 12, using: &rng)).map { _ in [0, 0, 1, 255][Int.random(in: 0 ..< 4, using: &rng)] }
        }
        let leaf = LeafNode(owner: 1)
        var model: [[UInt8]] = []
        for _ in 0 ..< 400 {
            let key = randomKey()
            key.withUnsafeBytes { raw in
                let (index, found) = leaf.search(raw)
                let expected = model.firstIndex { !$0.lexicographicallyPrecedes(key) } ?? model.count
                #expect(index == expected && found == (expected < model.count && model[expected] == key), "\(key)")
                if !found {
                    leaf.insert(at: index, key: raw, value: .inline(UnsafeRawBufferPointer(start: nil, count: 0)), limits: limits)
                    model.insert(key, at: index)
                } else if Bool.random(using: &rng) {
                    leaf.removeEntry(at: index, limits: limits)
                    model.remove(at: index)
                }
            }
        }
        let right = leaf.splitOff(from: leaf.count / 2, owner: 1, limits: limits)
        leaf.append(contentsOf: right)
        #expect((0 ..< leaf.count).map { leaf.key(at: $0) } == model)
        for (i, key) in model.enumerated() {
            #expect(key.withUnsafeBytes { leaf.search($0) } == (i, true))
        }
    }

    @Test("a leaf whose keys share a prefix takes heads after it, and still orders keys without it, shorter ones, and ones that end it",
          arguments: [4, 5] as [UInt64])
    func leafSearchAfterSharedPrefix(seed: UInt64) throws {
        var rng = SeededGenerator(seed: seed)
        let limits = NodeLimits(pageSize: 1 << 15)
        // W1-like keys: a tag byte, then a big-endian id from a narrow range, so every key of
        // the leaf shares its first seven bytes; plus a few keys that do not.
        func idKey(_ id: UInt64) -> [UInt8] { [0x30] + withUnsafeBytes(of: id.bigEndian) { Array($0) } }
        let leaf = LeafNode(owner: 1)
        var model: [[UInt8]] = []
        func insert(_ key: [UInt8]) {
            key.withUnsafeBytes { raw in
                let (index, found) = leaf.search(raw)
                guard !found else { return }
                leaf.insert(at: index, key: raw, value: .inline(UnsafeRawBufferPointer(start: nil, count: 0)), limits: limits)
                model.insert(key, at: index)
            }
        }
        func expectSearches(_ leaf: LeafNode, _ label: String) {
            // Among them, keys whose heads equal a stored key's: one byte shorter (the stored
            // key's last byte is zero) and one byte longer.
            let probes = model + [[0x30], [0x30, 0, 0], [0x2F, 255], [0x31], idKey(0x4200), Array(idKey(0x4200).dropLast()),
                                  idKey(0x42FF + 1), idKey(0x4280) + [0], idKey(0x4200) + [0], []]
            for probe in probes {
                let expected = model.firstIndex { !$0.lexicographicallyPrecedes(probe) } ?? model.count
                let found = expected < model.count && model[expected] == probe
                #expect(probe.withUnsafeBytes { leaf.search($0) } == (expected, found), "\(label): \(probe)")
                // From a cursor's position: an answer only for a probe between that entry
                // and the last.
                for start in [0, model.count / 2, model.count - 1] {
                    let within = !probe.lexicographicallyPrecedes(model[start]) && !model[model.count - 1].lexicographicallyPrecedes(probe)
                    let answer = probe.withUnsafeBytes { leaf.search($0, onFrom: start) }.map { [$0.index, $0.found ? 1 : 0] }
                    #expect(answer == (within ? [expected, found ? 1 : 0] : nil), "\(label), from \(start): \(probe)")
                }
            }
        }
        insert(idKey(0x4200))
        for _ in 0 ..< 150 { insert(idKey(0x4200 + UInt64.random(in: 1 ... 0xFE, using: &rng))) }
        // Split and merged back: the heads are rebuilt with the longest shared prefix.
        leaf.append(contentsOf: leaf.splitOff(from: leaf.count / 2, owner: 1, limits: limits))
        #expect(leaf.heads.prefixLength == 8)
        // Every key 9 bytes, one of them after the prefix: a probe whose head matches is found
        // without reading the key.
        #expect(leaf.heads.wholeLength == 9)
        expectSearches(leaf, "shared prefix")
        // Read back from its page: the same prefix, the same answers.
        let page = try PageCodec.decodeLeaf(leaf.pagePayload, address: FrameAddress(offset: 1 << 20, length: 1), limits: limits,
                                            context: CorruptionContext(path: "test", offset: 1 << 20, structure: "leaf"))
        #expect(page.heads.prefixLength == 8)
        expectSearches(page, "decoded page")
        // Keys without the prefix, before and after the others: the heads are rebuilt.
        insert([0x30, 0, 0, 0, 0, 0, 0, 0x41])
        insert(idKey(0x4300))
        insert([0x30])
        #expect(leaf.heads.prefixLength == 1)
        // Keys shorter than a head, after the one-byte prefix.
        for key: [UInt8] in [[0x30, 5], [0x30, 0, 1], [0x30, 0, 0, 0, 0, 0, 0, 0x42]] { insert(key) }
        #expect(leaf.heads.prefixLength == 1)
        #expect(leaf.heads.wholeLength == -1)
        expectSearches(leaf, "after keys without the prefix")
    }

    @Test("a branch picks the child whose range holds a key, by heads and bytes, after its separators change")
    func branchChildIndexWithSharedHeads() {
        var rng = SeededGenerator(seed: 3)
        func randomKey() -> [UInt8] {
            (0 ..< Int.random(in: 1 ... 12, using: &rng)).map { _ in [0, 0, 1, 255][Int.random(in: 0 ..< 4, using: &rng)] }
        }
        func expectChildIndexes(_ branch: BranchNode) {
            for _ in 0 ..< 300 {
                let probe = randomKey()
                let expected = branch.keys.filter { !probe.lexicographicallyPrecedes($0) }.count
                #expect(probe.withUnsafeBytes { branch.childIndex(for: $0) } == expected, "\(probe) in \(branch.keys)")
            }
            for (i, key) in branch.keys.enumerated() {
                #expect(key.withUnsafeBytes { branch.childIndex(for: $0) } == i + 1)
            }
        }
        let separators = Array(Set((0 ..< 120).map { _ in randomKey() })).sorted { $0.lexicographicallyPrecedes($1) }
        let branch = BranchNode(owner: 1, keys: separators, children: (0 ... separators.count).map { .stored(FrameAddress(offset: UInt64($0), length: 1)) })
        expectChildIndexes(branch)
        // What a split, a merge and a refill do to separators: remove, insert, replace.
        branch.removeChild(at: 5)
        branch.insert(separator: branch.keys[3] + [0, 0], child: .stored(FrameAddress(offset: 999, length: 1)), at: 5)
        branch.keys[10] = branch.keys[10] + [0]
        expectChildIndexes(branch)
        let (_, right) = branch.splitOff(owner: 2)
        expectChildIndexes(branch)
        expectChildIndexes(right)
    }
}
