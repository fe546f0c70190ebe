#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Lexicographic comparison of byte strings: negative, zero or positive, as memcmp, with
/// a shorter string ordered before any longer string it prefixes.
///
/// Keys are mostly short (an 8-byte id, an index value and its id), and a B-tree lookup
/// compares a dozen of them: eight bytes at a time as big-endian words, in line, costs a
/// fraction of a `memcmp` call for them (callgrind: the call and its dispatch were 8% of
/// a lookup). Long strings still go to `memcmp`, which is faster past a few words.
@inlinable @inline(__always)
package func compareBytes(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Int {
    let n = min(a.count, b.count)
    guard n > 0 else { return a.count - b.count }
    if n > 32 {
        let c = memcmp(a.baseAddress!, b.baseAddress!, n)
        return c != 0 ? Int(c) : a.count - b.count
    }
    var i = 0
    while n - i >= 8 {
        let x = UInt64(bigEndian: a.loadUnaligned(fromByteOffset: i, as: UInt64.self))
        let y = UInt64(bigEndian: b.loadUnaligned(fromByteOffset: i, as: UInt64.self))
        if x != y { return x < y ? -1 : 1 }
        i += 8
    }
    while i < n {
        let x = a[i], y = b[i]
        if x != y { return x < y ? -1 : 1 }
        i += 1
    }
    return a.count - b.count
}

/// A key's first eight bytes as a big-endian number, zero-padded: its head. Heads order as
/// their keys do wherever they differ (a padded zero sorts as a shorter key does); keys
/// with equal heads are told apart by their bytes. Nodes keep their keys' heads in one
/// array, so a search reads a key's bytes only where heads tie; a query sorts the primary
/// keys it gathers by their heads the same way (`PrimaryKeyList`).
@inlinable @inline(__always)
package func keyHead(_ key: UnsafeRawBufferPointer) -> UInt64 {
    if key.count >= 8 { return UInt64(bigEndian: key.loadUnaligned(as: UInt64.self)) }
    var head: UInt64 = 0
    for i in 0 ..< key.count { head |= UInt64(key[i]) << (56 - 8 * i) }
    return head
}

/// The head of `key` after its first `skip` bytes (0 to 8): one load where the key has
/// eight bytes past them, two shifts where it has eight in all, zero-padded. Heads taken
/// after the bytes a set of keys shares tell apart keys that agree on their first bytes
/// (a typed key's tag and the high bytes of its id), which whole-key heads leave tied.
@inline(__always)
func keyHead(_ key: UnsafeRawBufferPointer, after skip: Int) -> UInt64 {
    if key.count >= skip &+ 8 { return UInt64(bigEndian: key.loadUnaligned(fromByteOffset: skip, as: UInt64.self)) }
    guard key.count >= 8 else { return keyHead(key) << (8 &* UInt64(truncatingIfNeeded: skip)) }
    // The key's last eight bytes, shifted so that byte `skip` leads (by one to eight
    // bytes: a shift by 64 leaves zero).
    let last = UInt64(bigEndian: key.loadUnaligned(fromByteOffset: key.count &- 8, as: UInt64.self))
    return last << (8 &* UInt64(truncatingIfNeeded: skip &- (key.count &- 8)))
}

/// How many of their first eight bytes all `count` keys share, `key(i)` being the `i`-th
/// (in any order): what `keyHead(_:after:)` may skip.
func sharedHeadBytes(count: Int, key: (Int) -> UnsafeRawBufferPointer) -> Int {
    guard count > 1 else { return 0 }
    let first = key(0), firstHead = keyHead(first)
    var shared = min(first.count, 8)
    for i in 1 ..< count where shared > 0 {
        let next = key(i)
        shared = min(shared, next.count, (keyHead(next) ^ firstHead).leadingZeroBitCount / 8)
    }
    return shared
}

@inlinable
func compareBytes(_ a: [UInt8], _ b: UnsafeRawBufferPointer) -> Int {
    a.withUnsafeBytes { compareBytes($0, b) }
}

@inlinable
func compareBytes(_ a: [UInt8], _ b: [UInt8]) -> Int {
    a.withUnsafeBytes { ra in b.withUnsafeBytes { compareBytes(ra, $0) } }
}

/// Whether two byte strings are equal: a word at a time, with no call, for the short
/// strings that scans compare in place (a `memcmp` call cost more than comparing them).
/// What is left after the whole words, and strings shorter than a word, are compared as two
/// overlapping loads covering them, not a byte at a time (~9 instructions a byte, most of
/// the check of a W2 document's tag that has the wanted tag's length).
@inlinable @inline(__always)
package func equalBytes(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
    let n = a.count
    guard n == b.count else { return false }
    guard n >= 8 else { return equalShortBytes(a, b, count: n) }
    // `i` stays below `n`, so the sums cannot overflow.
    var i = 0
    while n &- i > 8 {
        if a.loadUnaligned(fromByteOffset: i, as: UInt64.self) != b.loadUnaligned(fromByteOffset: i, as: UInt64.self) { return false }
        i &+= 8
    }
    return a.loadUnaligned(fromByteOffset: n &- 8, as: UInt64.self) == b.loadUnaligned(fromByteOffset: n &- 8, as: UInt64.self)
}

/// `equalBytes` for `count` (the length of both) below eight: the first and last four bytes
/// (or two, or the one byte), which overlap where `count` is less than twice that.
@inlinable @inline(__always)
func equalShortBytes(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer, count n: Int) -> Bool {
    if n >= 4 {
        return a.loadUnaligned(as: UInt32.self) == b.loadUnaligned(as: UInt32.self)
            && a.loadUnaligned(fromByteOffset: n &- 4, as: UInt32.self) == b.loadUnaligned(fromByteOffset: n &- 4, as: UInt32.self)
    }
    if n >= 2 {
        return a.loadUnaligned(as: UInt16.self) == b.loadUnaligned(as: UInt16.self)
            && a.loadUnaligned(fromByteOffset: n &- 2, as: UInt16.self) == b.loadUnaligned(fromByteOffset: n &- 2, as: UInt16.self)
    }
    return n == 0 || a.load(as: UInt8.self) == b.load(as: UInt8.self)
}
