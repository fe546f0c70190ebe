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
