/// XXH64 (xxHash, 64-bit), the checksum of every frame and header slot.
///
/// Test vectors (seed 0): "" → 0xEF46DB3751D8E999, "a" → 0xD24EC4F1A98C6E5B,
/// "abc" → 0x44BC2CF5AD770999. See FORMAT.md.
public enum XXH64 {
    @usableFromInline static let p1: UInt64 = 0x9E37_79B1_85EB_CA87
    @usableFromInline static let p2: UInt64 = 0xC2B2_AE3D_27D4_EB4F
    @usableFromInline static let p3: UInt64 = 0x1656_67B1_9E37_79F9
    @usableFromInline static let p4: UInt64 = 0x85EB_CA77_C2B2_AE63
    @usableFromInline static let p5: UInt64 = 0x27D4_EB2F_1656_67C5

    @inlinable @inline(__always)
    static func rotl(_ x: UInt64, _ r: UInt64) -> UInt64 { (x << r) | (x >> (64 - r)) }

    @inlinable @inline(__always)
    static func round(_ acc: UInt64, _ input: UInt64) -> UInt64 {
        rotl(acc &+ input &* p2, 31) &* p1
    }

    @inlinable @inline(__always)
    static func merge(_ acc: UInt64, _ value: UInt64) -> UInt64 {
        (acc ^ round(0, value)) &* p1 &+ p4
    }

    /// The XXH64 digest of `bytes` with `seed`.
    ///
    /// - Parameters:
    ///   - bytes: The data.
    ///   - seed: The seed (0 by default).
    /// - Returns: The 64-bit digest.
    @inlinable
    public static func hash(_ bytes: UnsafeRawBufferPointer, seed: UInt64 = 0) -> UInt64 {
        let count = bytes.count
        var i = 0
        var h: UInt64
        @inline(__always) func u64(_ at: Int) -> UInt64 { UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: at, as: UInt64.self)) }
        if count >= 32 {
            var v1 = seed &+ p1 &+ p2, v2 = seed &+ p2, v3 = seed, v4 = seed &- p1
            while i + 32 <= count {
                v1 = round(v1, u64(i)); v2 = round(v2, u64(i + 8))
                v3 = round(v3, u64(i + 16)); v4 = round(v4, u64(i + 24))
                i += 32
            }
            h = rotl(v1, 1) &+ rotl(v2, 7) &+ rotl(v3, 12) &+ rotl(v4, 18)
            h = merge(h, v1); h = merge(h, v2); h = merge(h, v3); h = merge(h, v4)
        } else {
            h = seed &+ p5
        }
        h &+= UInt64(count)
        while i + 8 <= count {
            h ^= round(0, u64(i))
            h = rotl(h, 27) &* p1 &+ p4
            i += 8
        }
        if i + 4 <= count {
            h ^= UInt64(UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: i, as: UInt32.self))) &* p1
            h = rotl(h, 23) &* p2 &+ p3
            i += 4
        }
        while i < count {
            h ^= UInt64(bytes[i]) &* p5
            h = rotl(h, 11) &* p1
            i += 1
        }
        h ^= h >> 33; h &*= p2
        h ^= h >> 29; h &*= p3
        h ^= h >> 32
        return h
    }

    /// The XXH64 digest of a byte array.
    ///
    /// - Parameters:
    ///   - bytes: The data.
    ///   - seed: The seed (0 by default).
    /// - Returns: The 64-bit digest.
    @inlinable
    public static func hash(_ bytes: [UInt8], seed: UInt64 = 0) -> UInt64 {
        bytes.withUnsafeBytes { hash($0, seed: seed) }
    }
}
