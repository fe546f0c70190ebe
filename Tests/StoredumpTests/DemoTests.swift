import Foundation
import StrataTestBackends
import Testing

/// The demo runs the app layers' tour on every backend and prints the same results.
@Suite("strata-demo", .serialized)
struct DemoTests {
    func demo(_ arguments: [String], in directory: String) throws -> (output: String, status: Int32) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent().appendingPathComponent("strata-demo")
        process.arguments = arguments
        process.currentDirectoryURL = URL(fileURLWithPath: directory)
        let out = Pipe()
        process.standardOutput = out
        process.standardError = out
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (String(decoding: data, as: UTF8.self), process.terminationStatus)
    }

    /// The app layers' part of a run, with the one timestamp it prints masked.
    func appSections(_ output: String) -> String {
        let lines = output.split(separator: "\n", omittingEmptySubsequences: false)
        guard let start = lines.firstIndex(of: "== Typed storage: Codable models, indexes, queries") else { return "" }
        // The file's run goes on with what only a file has: a second handle, moving data, checkpoints.
        let end = lines[start...].firstIndex { $0.hasPrefix("== Following the file") || $0.hasPrefix("== Moving data") || $0.hasPrefix("== Checkpoint") } ?? lines.endIndex
        return lines[start ..< end].map { $0.replacing(/created \S+/, with: "created <date>") }.joined(separator: "\n")
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test("--backend memory prints the same app results as the file")
    func sameResultsOnEveryBackend() throws {
        let directory = NSTemporaryDirectory() + "strata-demo-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let file = try demo([], in: directory), memory = try demo(["--backend", "memory"], in: directory)
        #expect(file.status == 0 && memory.status == 0)
        for layer in ["== DAO:", "== Live queries:", "== CRUD repository:", "== ActiveRecord:"] {
            #expect(appSections(file.output).contains(layer), "the tour shows \(layer)")
        }
        #expect(appSections(memory.output) == appSections(file.output))
        #expect(file.output.contains("== Moving data: every collection copied to another storage, verified"))
        #expect(file.output.contains("after the writer erased Frances, the file watch delivered: 2"), "the read-only handle follows the writer")
    }

    @Test("--backend sqlite and --backend postgres URL print the same app results as memory, their plans in SQL")
    func sameResultsOnSQLBackends() throws {
        let directory = NSTemporaryDirectory() + "strata-demo-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let memory = try demo(["--backend", "memory"], in: directory)
        var runs = [("SQLite", try demo(["--backend", "sqlite"], in: directory))]
        if StorageBackend.available.contains(.postgres) {
            runs.append(("PostgreSQL", try demo(["--backend", "postgres", PostgresTestServer.url], in: directory)))
        }
        // The plan lines differ (the SQL backends show their statement); results do not.
        func results(_ output: String) -> String { appSections(output).split(separator: "\n").filter { !$0.hasPrefix("  plan:") }.joined(separator: "\n") }
        for (name, run) in runs {
            #expect(run.status == 0, "\(name): \(run.output)")
            #expect(results(run.output) == results(memory.output), "\(name)")
            #expect(run.output.contains("  plan: Member: indexRange(index: \"age\"), \(name): SELECT"), "\(name)")
        }
    }

    @Test("an unknown backend is a usage error, and no file is created")
    func unknownBackend() throws {
        let directory = NSTemporaryDirectory() + "strata-demo-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let run = try demo(["--backend", "oracle"], in: directory)
        #expect(run.status == 2)
        #expect(run.output.contains("usage: strata-demo [PATH] [--backend strata|memory|sqlite|postgres URL]"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).isEmpty)
    }
}
