import CLZ4
import Foundation

/// liblz4 block compression, used for frame payloads when it pays.
enum LZ4 {
    /// The most bytes compressing `count` bytes can take (`LZ4_compressBound`); nil past
    /// what liblz4 takes.
    static func compressedBound(_ count: Int) -> Int? {
        count <= Int(LZ4_MAX_INPUT_SIZE) ? Int(LZ4_compressBound(Int32(count))) : nil
    }

    /// Compresses `source` into `destination`, which holds at least
    /// `compressedBound(source.count)` bytes, and returns the compressed length; nil when
    /// the result would not save at least 1/8 of the input (the frame then stores the raw
    /// bytes), and then `destination` holds nothing to use.
    ///
    /// Each call compresses one independent block with a reused state, in one of two ways
    /// by its size (both write the same block format; readers cannot tell them apart):
    /// - Under `wholeStateSize` (most log frames): through the state as a stream, reset with
    ///   `LZ4_resetStream_fast`. `LZ4_compress_default` clears its 16 KiB state with a memset
    ///   on every call, which callgrind measured at two thirds of a small durable commit's
    ///   instructions.
    /// - From `wholeStateSize` up (pages, large values): `LZ4_compress_fast_extState`, which
    ///   clears the state, and for a block under 64 KiB indexes it by 16-bit offsets in a
    ///   table twice the streaming path's size. It finds more matches faster: on W2's 4 KiB
    ///   documents 1.34× the speed and 3.9% smaller output, on 1 KiB 1.08× and 5.7% smaller;
    ///   at 512 bytes the clear costs more than it saves (C against liblz4 1.9.4, this
    ///   machine). A W2 load spent 73% of its instructions compressing documents.
    static func compressIfSmaller(_ source: UnsafeRawBufferPointer, into destination: UnsafeMutableRawBufferPointer) -> Int? {
        guard source.count >= 64, let bound = compressedBound(source.count), destination.count >= bound else { return nil }
        let limit = source.count - source.count / 8
        let whole = source.count >= wholeStateSize
        guard let written = streams.withStream({ stream in
            let from = source.baseAddress!.assumingMemoryBound(to: CChar.self)
            let to = destination.baseAddress!.assumingMemoryBound(to: CChar.self)
            if whole {
                return LZ4_compress_fast_extState(UnsafeMutableRawPointer(stream), from, to, Int32(source.count), Int32(bound), 1)
            }
            LZ4_resetStream_fast(stream)
            return LZ4_compress_fast_continue(stream, from, to, Int32(source.count), Int32(bound), 1)
        }) else { return nil }
        guard written > 0, Int(written) <= limit else { return nil }
        return Int(written)
    }

    /// The size from which a block is compressed with a cleared state (see `compressIfSmaller`).
    static let wholeStateSize = 1024

    private static let streams = StreamPool()

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

/// Compression states to reuse, one per thread compressing at a time: taken and given back
/// around each block, created when none is free (a 16 KiB allocation and clear, once).
private final class StreamPool: @unchecked Sendable {
    // Guarded by `lock`; states are never freed (a handful per process).
    private var free: [UnsafeMutablePointer<LZ4_stream_t>] = []
    private let lock = NSLock()

    /// Nil when no state is free and none can be allocated (the caller stores raw bytes).
    func withStream<R>(_ body: (UnsafeMutablePointer<LZ4_stream_t>) -> R) -> R? {
        lock.lock()
        let reused = free.popLast()
        lock.unlock()
        guard let stream = reused ?? LZ4_createStream() else { return nil }
        defer {
            lock.lock()
            free.append(stream)
            lock.unlock()
        }
        return body(stream)
    }
}
