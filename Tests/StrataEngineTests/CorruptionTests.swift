import Foundation
import Testing
@testable import StrataEngine

/// Truncation and byte-flip sweeps: damaged files give a typed error naming the offset, or
/// open to a correct state — never a crash, never wrong data.
@Suite("Truncated and corrupted files")
struct CorruptionTests {
    /// A file with checkpoints, out-of-line values and a log tail; with the file end after
    /// each commit.
    static func makeFile() throws -> (fs: SimulatedFileSystem, image: [UInt8], ends: [UInt64], commits: Int) {
        let fs = SimulatedFileSystem()
        var options = smallOptions(pageSize: 512)
        options.checkpointOnClose = false
        let db = try Database(path: "/c.strata", options: options, fileSystem: fs)
        var ends: [UInt64] = [FileHeader.dataStart]
        let commits = 64
        for n in 1 ... commits {
            try NumberedWorkload.commit(n, to: db)
            ends.append(db.writerCounters().end)
            // Checkpoints between commits; the last one a few commits before the end, so
            // the sweeps cross page, value, checkpoint and log frames.
            if n % 12 == 0 { try db.checkpoint() }
        }
        try db.close()
        return (fs, fs.contents(of: "/c.strata"), ends, commits)
    }

    /// The frames of a clean file, as (offset, length).
    static func frames(of image: [UInt8]) -> [(offset: Int, length: Int)] {
        var frames: [(Int, Int)] = []
        var position = Int(FileHeader.dataStart)
        while position + FrameHeader.size <= image.count {
            let stored = image[position + 12 ..< position + 16].withUnsafeBytes { Int(UInt32(littleEndian: $0.loadUnaligned(as: UInt32.self))) }
            frames.append((position, FrameHeader.size + stored))
            position += FrameHeader.size + stored
        }
        return frames
    }

    @Test("truncating at every byte of the last frames opens to the last complete commit")
    func truncationSweep() throws {
        let (fs, image, ends, commits) = try Self.makeFile()
        let states = NumberedWorkload.states(through: commits)
        let sweepStart = Int(ends[commits - 14])
        for cut in sweepStart ... image.count {
            fs.setContents(Array(image[..<cut]), of: "/c.strata")
            let db = try Database(path: "/c.strata", options: smallOptions(), fileSystem: fs)
            let complete = ends.lastIndex { $0 <= UInt64(cut) }!
            #expect(try NumberedWorkload.content(of: db) == states[complete], "cut at \(cut)")
            let stats = try db.statistics()
            #expect(stats.fileSize == ends[complete] || cut > Int(ends[complete]) && stats.tornBytesDroppedAtOpen > 0 || stats.fileSize <= UInt64(cut), "cut at \(cut)")
            try db.close()
        }
    }

    @Test("flipping a byte anywhere gives a corruption error naming its frame, or changes nothing")
    func byteFlipSweep() throws {
        let (fs, image, _, commits) = try Self.makeFile()
        let states = NumberedWorkload.states(through: commits)
        let frames = Self.frames(of: image)
        let lastFrame = frames.last!
        var rng = SeededGenerator(seed: 99)
        var outcomes: [String: Int] = [:]
        let samples = TestScale.flipSamples
        for sample in 0 ..< samples {
            let offset = sample < 64 ? sample * 64 : Int.random(in: 0 ..< image.count, using: &rng)
            var damaged = image
            damaged[offset] ^= UInt8.random(in: 1 ... 255, using: &rng)
            fs.setContents(damaged, of: "/c.strata")
            do {
                let db = try Database(path: "/c.strata", options: Database.Options(readOnly: true), fileSystem: fs)
                let content = try NumberedWorkload.content(of: db)
                _ = try db.analyzeSpace()
                if content == states[commits] {
                    outcomes["unchanged", default: 0] += 1
                } else {
                    // Damage in the last frame is indistinguishable from a torn write.
                    #expect(offset >= lastFrame.offset && content == states[commits - 1], "flip at \(offset) gave wrong data")
                    outcomes["torn tail", default: 0] += 1
                }
            } catch let StrataError.corruption(_, reported, reason) {
                let frame = frames.last { $0.offset <= offset }
                let expected = offset < Int(FileHeader.dataStart) ? [0, 512, 1024] : [UInt64(frame!.offset)]
                #expect(expected.contains(reported) || offset < Int(FileHeader.dataStart), "flip at \(offset) reported \(reported): \(reason)")
                outcomes["corruption", default: 0] += 1
            } catch StrataError.notAStrataFile, StrataError.unsupportedFormat, StrataError.formatRequiresReadOnly {
                #expect(offset < 16, "flip at \(offset)")
                outcomes["header", default: 0] += 1
            }
        }
        reportFigure("byte flips: \(samples) tried; " + outcomes.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: ", ") + "; none read wrong data")
        #expect(outcomes["corruption", default: 0] > samples / 4)
        #expect(outcomes.values.reduce(0, +) == samples)
    }

    @Test("a damaged frame followed by valid commits is refused as corruption, or salvaged on request")
    func midFileDamageIsNotTruncated() throws {
        let (fs, image, ends, commits) = try Self.makeFile()
        var damaged = image
        let target = Int(ends[commits - 3]) + 30  // inside the third-last commit's frame
        damaged[target] ^= 0x55
        fs.setContents(damaged, of: "/c.strata")
        #expect {
            _ = try Database(path: "/c.strata", options: smallOptions(), fileSystem: fs)
        } throws: { error in
            guard case StrataError.corruption(_, let offset, let reason) = error else { return false }
            return offset == ends[commits - 3] && reason.contains("valid commits follow")
        }
        #expect(fs.contents(of: "/c.strata") == damaged, "refusing to open must not truncate")
        var salvage = smallOptions()
        salvage.recovery = .truncateAtFirstBadFrame
        let db = try Database(path: "/c.strata", options: salvage, fileSystem: fs)
        #expect(try NumberedWorkload.content(of: db) == NumberedWorkload.states(through: commits)[commits - 3])
    }
}
