#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Lexicographic comparison of byte strings: negative, zero or positive, as memcmp, with
/// a shorter string ordered before any longer string it prefixes.
@inlinable @inline(__always)
package func compareBytes(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Int {
    let n = min(a.count, b.count)
    if n > 0 {
        let c = memcmp(a.baseAddress!, b.baseAddress!, n)
        if c != 0 { return Int(c) }
    }
    return a.count - b.count
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
@inlinable @inline(__always)
package func equalBytes(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
    guard a.count == b.count else { return false }
    var i = 0
    while a.count - i >= 8 {
        if a.loadUnaligned(fromByteOffset: i, as: UInt64.self) != b.loadUnaligned(fromByteOffset: i, as: UInt64.self) { return false }
        i += 8
    }
    while i < a.count {
        if a[i] != b[i] { return false }
        i += 1
    }
    return true
}
