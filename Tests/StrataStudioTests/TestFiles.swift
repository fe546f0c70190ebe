import Foundation
#if canImport(Glibc)
import Glibc
#endif
import StrataEngine

/// Files and programs Studio's tests use: the fixture program writes W1 files and commits
/// from another process; the demo writes the demo file.
enum TestFiles {
    static let binaries = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()

    static func binary(_ name: String) -> String { binaries.appendingPathComponent(name).path }

    static func directory() throws -> String {
        let path = NSTemporaryDirectory() + "strata-studio-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// Runs a program to its end. - Returns: its output (stdout and stderr).
    @discardableResult
    static func run(_ program: String, _ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: program)
        process.arguments = arguments
        let out = Pipe()
        process.standardOutput = out
        process.standardError = out
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let output = String(decoding: data, as: UTF8.self)
        guard process.terminationStatus == 0 else {
            throw TestFileError("\((program as NSString).lastPathComponent) \(arguments.joined(separator: " ")) exited \(process.terminationStatus): \(output)")
        }
        return output
    }

    /// A program running beside a test, its output read as it comes; `stop()` closes its
    /// standard input (a program that outlives the test sees that and ends) and kills it.
    final class Running {
        private let process = Process()
        private let output = Pipe(), input = Pipe()
        private var received = ""

        init(_ program: String, _ arguments: [String]) throws {
            process.executableURL = URL(fileURLWithPath: program)
            process.arguments = arguments
            process.standardOutput = output
            process.standardError = output
            process.standardInput = input
            try process.run()
        }

        /// Reads until the program prints a line that is `line`. - Returns: the lines before it.
        /// - Throws: when the program ends first, with what it printed.
        func lines(until line: String) throws -> [String] {
            while true {
                let lines = received.split(separator: "\n").map(String.init)
                if let end = lines.firstIndex(of: line) { return Array(lines[..<end]) }
                let data = output.fileHandleForReading.availableData
                guard !data.isEmpty else {
                    process.waitUntilExit()
                    throw TestFileError("the program ended (status \(process.terminationStatus)) before printing \(line): \(received)")
                }
                received += String(decoding: data, as: UTF8.self)
            }
        }

        func stop() {
            try? input.fileHandleForWriting.close()
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    /// A W1-shaped file: `count` users (indexes on age, email, city) and the hostile collection.
    static func w1(_ path: String, count: Int) throws {
        try run(binary("StrataStudioFixture"), ["w1", path, String(count)])
    }

    static func demo(_ path: String) throws {
        try run(binary("strata-demo"), [path])
    }

    /// A copy of `source` whose checkpoint frame fails its checksum: the file does not open.
    static func damagedCopy(of source: String, to path: String) throws {
        let offset = try Inspector(path: source).info().checkpoint!.offset
        try FileManager.default.copyItem(atPath: source, toPath: path)
        let handle = FileHandle(forUpdatingAtPath: path)!
        try handle.seek(toOffset: offset + 30)
        try handle.write(contentsOf: Data([0xFF, 0xFF, 0xFF, 0xFF]))
        try handle.close()
    }
}

struct TestFileError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
