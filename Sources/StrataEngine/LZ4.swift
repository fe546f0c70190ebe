import CLZ4

/// liblz4 block compression, used for frame payloads when it pays.
enum LZ4 {
    /// Compresses `source`, returning nil when the result would not save at least 1/8 of
    /// the input (the frame then stores the raw bytes).
    static func compressIfSmaller(_ source: UnsafeRawBufferPointer) -> [UInt8]? {
        guard source.count >= 64, source.count <= Int(LZ4_MAX_INPUT_SIZE) else { return nil }
        let bound = Int(LZ4_compressBound(Int32(source.count)))
        let limit = source.count - source.count / 8
        var out = [UInt8](repeating: 0, count: bound)
        let written = out.withUnsafeMutableBytes { dst in
            LZ4_compress_default(
                source.baseAddress!.assumingMemoryBound(to: CChar.self),
                dst.baseAddress!.assumingMemoryBound(to: CChar.self),
                Int32(source.count), Int32(bound))
        }
        guard written > 0, Int(written) <= limit else { return nil }
        out.removeLast(out.count - Int(written))
        return out
    }

    /// Decompresses exactly `rawLength` bytes, or nil when the input is malformed.
    static func decompress(_ source: UnsafeRawBufferPointer, rawLength: Int) -> [UInt8]? {
        guard rawLength > 0, source.count > 0 else { return rawLength == 0 && source.count == 0 ? [] : nil }
        // liblz4 takes C ints; callers bound lengths from disk before this, and this guard
        // keeps a missed bound from trapping or allocating gigabytes.
        guard rawLength <= FrameHeader.maxCompressedRawLength, source.count <= Int(Int32.max) else { return nil }
        var out = [UInt8](repeating: 0, count: rawLength)
        let n = out.withUnsafeMutableBytes { dst in
            LZ4_decompress_safe(
                source.baseAddress!.assumingMemoryBound(to: CChar.self),
                dst.baseAddress!.assumingMemoryBound(to: CChar.self),
                Int32(source.count), Int32(rawLength))
        }
        return n == Int32(rawLength) ? out : nil
    }
}
