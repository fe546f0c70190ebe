// The machine's physical limits, measured in the same run as the engines, so Strata's
// figures can be read as a fraction of what the hardware allows.
import BenchmarkSupport
import CPeers
import Foundation

struct Limit: Codable {
    var name: String
    var value: Double
    var unit: String
}

enum LimitName {
    static let sequentialWrite = "sequential write + one fdatasync"
    static let appendSync = "write 4 KiB + fdatasync, appending"
    static let overwriteSync = "write 4 KiB + fdatasync, preallocated"
    static let memcpy = "memcpy"
    static func lz4(_ direction: String, pageSize: Int) -> String { "LZ4 \(direction), \(pageSize / 1024) KiB W1 pages" }
}

enum Limits {
    /// Measures every limit; `scale` (0...1) shrinks the amounts for smoke runs.
    static func measure(in directory: String, scale: Double, progress: Progress) throws -> [Limit] {
        var limits: [Limit] = []
        let path = directory + "/limits.bin"
        defer { unlink(path) }

        progress.begin("limits: sequential write")
        let bandwidth = try sequentialWrite(path, bytes: max(8 << 20, Int(Double(512 << 20) * scale)))
        limits.append(Limit(name: LimitName.sequentialWrite, value: bandwidth, unit: "MB/s"))
        progress.end(String(format: "%.0f MB/s", bandwidth))

        let syncs = max(100, Int(1000 * scale))
        progress.begin("limits: write+fdatasync")
        let append = try syncedWrites(path, count: syncs, preallocated: false)
        let overwrite = try syncedWrites(path, count: syncs, preallocated: true)
        limits.append(Limit(name: LimitName.appendSync, value: append, unit: "ops/s"))
        limits.append(Limit(name: LimitName.overwriteSync, value: overwrite, unit: "ops/s"))
        progress.end(String(format: "%.0f/s appending, %.0f/s preallocated", append, overwrite))

        progress.begin("limits: LZ4 and memcpy")
        for pageSize in [4096, 16384] {
            let (compress, decompress) = lz4(pageSize: pageSize, totalBytes: max(4 << 20, Int(Double(256 << 20) * scale)))
            limits.append(Limit(name: LimitName.lz4("compress", pageSize: pageSize), value: compress, unit: "MB/s"))
            limits.append(Limit(name: LimitName.lz4("decompress", pageSize: pageSize), value: decompress, unit: "MB/s"))
        }
        limits.append(Limit(name: LimitName.memcpy, value: memcpyBandwidth(bytes: 64 << 20, rounds: max(2, Int(16 * scale))), unit: "MB/s"))
        progress.end("done")
        return limits
    }

    private static func open(_ path: String) throws -> Int32 {
        let fd = Glibc.open(path, O_RDWR | O_CREAT | O_TRUNC, 0o644)
        guard fd >= 0 else { throw BenchError("open \(path): \(String(cString: strerror(errno)))") }
        return fd
    }

    private static func write(_ fd: Int32, _ buffer: [UInt8], at offset: Int) throws {
        let n = buffer.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, off_t(offset)) }
        guard n == buffer.count else { throw BenchError("write: \(String(cString: strerror(errno)))") }
    }

    /// MB/s for `bytes` written in 1 MiB chunks and made durable by one fdatasync.
    static func sequentialWrite(_ path: String, bytes: Int) throws -> Double {
        let fd = try open(path)
        defer { close(fd) }
        let chunk = [UInt8](repeating: 0xA5, count: 1 << 20)
        let elapsed = try time {
            for offset in stride(from: 0, to: bytes, by: chunk.count) { try write(fd, chunk, at: offset) }
            guard fdatasync(fd) == 0 else { throw BenchError("fdatasync: \(String(cString: strerror(errno)))") }
        }
        return Double(bytes) / 1e6 / elapsed
    }

    /// Synced 4 KiB writes per second: appending (the file grows, so metadata is synced
    /// too) or overwriting space written and synced beforehand.
    static func syncedWrites(_ path: String, count: Int, preallocated: Bool) throws -> Double {
        Double(count) / (try syncSeconds(path, count: count, preallocated: preallocated))
    }

    /// The seconds `count` synced 4 KiB writes take (`syncedWrites`).
    static func syncSeconds(_ path: String, count: Int, preallocated: Bool) throws -> Double {
        let fd = try open(path)
        defer { close(fd) }
        let page = [UInt8](repeating: 0x5A, count: 4096)
        if preallocated {
            let zeros = [UInt8](repeating: 0, count: count * page.count)
            try write(fd, zeros, at: 0)
            guard fsync(fd) == 0 else { throw BenchError("fsync: \(String(cString: strerror(errno)))") }
        }
        return try time {
            for i in 0 ..< count {
                try write(fd, page, at: i * page.count)
                guard fdatasync(fd) == 0 else { throw BenchError("fdatasync: \(String(cString: strerror(errno)))") }
            }
        }
    }

    /// LZ4 block compression speed on pages packed with W1 records (binary encoding), MB/s of raw data.
    static func lz4(pageSize: Int, totalBytes: Int) -> (compress: Double, decompress: Double) {
        let page = w1Page(size: pageSize)
        let bound = Int(LZ4_compressBound(Int32(pageSize)))
        var compressed = [CChar](repeating: 0, count: bound)
        var restored = [CChar](repeating: 0, count: pageSize)
        let rounds = max(1, totalBytes / pageSize)
        var compressedSize: Int32 = 0
        let compressTime = time {
            page.withUnsafeBufferPointer { src in
                src.withMemoryRebound(to: CChar.self) { src in
                    for _ in 0 ..< rounds { compressedSize = LZ4_compress_default(src.baseAddress, &compressed, Int32(pageSize), Int32(bound)) }
                }
            }
        }
        let decompressTime = time {
            for _ in 0 ..< rounds { _ = LZ4_decompress_safe(compressed, &restored, compressedSize, Int32(pageSize)) }
        }
        precondition(restored.map { UInt8(bitPattern: $0) } == page, "LZ4 round trip")
        let megabytes = Double(rounds * pageSize) / 1e6
        return (megabytes / compressTime, megabytes / decompressTime)
    }

    static func memcpyBandwidth(bytes: Int, rounds: Int) -> Double {
        let source = UnsafeMutableRawPointer.allocate(byteCount: bytes, alignment: 64)
        let destination = UnsafeMutableRawPointer.allocate(byteCount: bytes, alignment: 64)
        defer { source.deallocate(); destination.deallocate() }
        memset(source, 1, bytes)
        memset(destination, 0, bytes)
        // Copy back and forth and read a byte of each result, so no copy can be elided.
        var check = 0
        let elapsed = time {
            for round in 0 ..< rounds {
                let (to, from) = round % 2 == 0 ? (destination, source) : (source, destination)
                memcpy(to, from, bytes)
                check &+= Int(to.load(fromByteOffset: (round &* 4_099) % bytes, as: UInt8.self))
            }
        }
        precondition(check == rounds, "memcpy copied what it was given")
        return Double(bytes * rounds) / 1e6 / elapsed
    }
}

/// Seconds `body` took.
func time(_ body: () throws -> Void) rethrows -> Double {
    let start = ContinuousClock.now
    try body()
    return milliseconds(ContinuousClock.now - start) / 1000
}

/// `duration` in milliseconds, as the reports give pauses and latencies.
func milliseconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) * 1000 + Double(duration.components.attoseconds) / 1e15
}
