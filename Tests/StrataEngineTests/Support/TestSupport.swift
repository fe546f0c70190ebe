import Foundation
import Logging
@testable import StrataEngine

/// SplitMix64: a seeded generator, so every randomized test can be replayed from its seed.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// The next `words` × 8 bytes: random, so they do not compress.
    mutating func bytes(words: Int) -> [UInt8] {
        (0 ..< words).flatMap { _ in withUnsafeBytes(of: next()) { Array($0) } }
    }
}

/// Sizes of the sweeps and crash loops. CI runs the defaults; set STRATA_STRESS=1 for the
/// large versions (README, "Running the large tests"), or a specific variable to override one.
enum TestScale {
    static var stress: Bool { ProcessInfo.processInfo.environment["STRATA_STRESS"] == "1" }

    static func value(_ name: String, ci: Int, stress large: Int) -> Int {
        if let text = ProcessInfo.processInfo.environment[name], let n = Int(text) { return n }
        return stress ? large : ci
    }

    static var crashCycles: Int { value("STRATA_CRASH_CYCLES", ci: 50, stress: 500) }
    static var powerLossPoints: Int { value("STRATA_POWER_LOSS_POINTS", ci: 3000, stress: 30000) }
    static var randomTransactions: Int { value("STRATA_RANDOM_TRANSACTIONS", ci: 3000, stress: 50000) }
    static var flipSamples: Int { value("STRATA_FLIP_SAMPLES", ci: 600, stress: 20000) }
    static var bigTreeKeys: Int { value("STRATA_BIG_TREE_KEYS", ci: 1_000_000, stress: 5_000_000) }
}

/// Prints one line of the figures README's "How Strata is tested" quotes, found in the
/// test log by its `figure:` prefix.
func reportFigure(_ line: String) { print("figure: " + line) }

/// A fresh directory under the system temporary directory, removed by `remove()`.
struct TemporaryDirectory {
    let path: String

    init() {
        path = NSTemporaryDirectory() + "strata-tests-" + UUID().uuidString
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    func file(_ name: String = "test.strata") -> String { path + "/" + name }

    func remove() { try? FileManager.default.removeItem(atPath: path) }
}

extension Array where Element == UInt8 {
    init(_ string: String) { self = Array(string.utf8) }
}

/// Every entry of a tree, in order.
func allEntries(_ reader: some TreeReading, _ tree: String) throws -> [([UInt8], [UInt8])] {
    var entries: [([UInt8], [UInt8])] = []
    try reader.scan(tree) { key, value in
        entries.append((Array(key), Array(value)))
        return true
    }
    return entries
}

/// Options for tests: small pages and checkpoints so that splits, overflow values and
/// checkpoints happen with little data.
/// Small pages and no automatic checkpoint; the engine's log is discarded, because the
/// crash sweeps repair thousands of torn tails on purpose (`ReportedEventsTests` captures it).
func smallOptions(pageSize: Int = 512, checkpointLogBytes: UInt64 = 1 << 40) -> Database.Options {
    var options = Database.Options()
    options.pageSize = pageSize
    options.checkpointLogBytes = checkpointLogBytes
    options.logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
    return options
}

/// A handle whose `close()` writes no checkpoint: it leaves the file as a crash after its
/// last commit would, with the log after the last checkpoint for the next open to replay.
func openWithoutCheckpointOnClose(_ path: String) throws -> Database {
    var options = Database.Options()
    options.checkpointOnClose = false
    return try Database(path: path, options: options)
}

/// Rewrites the header of the file at `path` with other format versions: the file as the
/// code of an older format (with no frames yet) created it.
func setFormatVersions(ofFileAt path: String, read: UInt16, write: UInt16) throws {
    var image = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
    var header = try FileHeader.decode(image, path: path)
    (header.readVersion, header.writeVersion) = (read, write)
    image.replaceSubrange(0 ..< FileHeader.size, with: header.encoded())
    try Data(image).write(to: URL(fileURLWithPath: path))
}

/// Every frame of the file at `path`, as `storedump frames` lists them.
func allFrames(ofFileAt path: String) throws -> [Inspector.FrameInfo] {
    var frames: [Inspector.FrameInfo] = []
    try Inspector(path: path).walkFrames { frames.append($0); return true }
    return frames
}
