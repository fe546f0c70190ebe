import Foundation
import Testing

/// Mistakes in a schema that the compiler refuses, with a message that says what to do:
/// each snippet is type-checked against the Strata module this test run built.
@Suite("Schema mistakes that do not compile")
struct CompileTimeErrorTests {
    /// The compiler's errors for `source`, which imports Strata.
    func errors(compiling source: String) throws -> [String] {
        try diagnostics(compiling: source, kind: "error")
    }

    /// The compiler's diagnostics of `kind` ("error", "warning") for `source`.
    func diagnostics(compiling source: String, kind: String) throws -> [String] {
        let built = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("strata-schema-\(UUID().uuidString).swift")
        try ("import Strata\n" + source).write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        // The engine's C modules are found by their module maps, as the package build finds them.
        let moduleMaps = ["CLZ4", "CPrefetch"].flatMap {
            ["-Xcc", "-fmodule-map-file=" + root.appendingPathComponent("Sources/\($0)/module.modulemap").path]
        }
        process.arguments = ["swiftc", "-typecheck", "-I", built.appendingPathComponent("Modules").path] + moduleMaps + [file.path]
        let output = Pipe()
        process.standardError = output
        process.standardOutput = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return text.split(separator: "\n").filter { $0.contains(": \(kind): ") }.map(String.init)
    }

    @Test("a well-formed schema type-checks (the harness itself works)")
    func validSchemaCompiles() throws {
        #expect(try errors(compiling: """
            struct Post: Model { var id: Int64; var title: String; var cover: [UInt8]
                static let schema = Schema<Post>(primaryKey: \\.id, indexes: [.index(\\.title), .index(\\.cover)]) }
            """) == [])
    }

    @Test("an index on an array of values is refused with what to do instead")
    func arrayIndexIsRefused() throws {
        let errors = try errors(compiling: """
            struct Post: Model { var id: Int64; var tags: [String]
                static let schema = Schema<Post>(primaryKey: \\.id, indexes: [.index(\\.tags)]) }
            """)
        #expect(errors.count == 1)
        #expect(errors.first?.contains("an index holds one key per record, and an array would need one per element") == true)
    }

    @Test("an empty primary key does not compile")
    func emptyPrimaryKeyIsRefused() throws {
        #expect(try !errors(compiling: """
            struct Post: Model { var id: Int64
                static let schema = Schema<Post>(indexes: []) }
            """).isEmpty)
    }

    @Test("a write whose result is not used compiles without a warning, blocking or async")
    func writeResultIsDiscardable() throws {
        let warnings = try diagnostics(compiling: """
            struct Note: Model { var id: Int64; var text: String
                static let schema = Schema<Note>(primaryKey: \\.id) }
            func save(_ storage: some Storage) async throws {
                try storage.write { try $0.persist(Note(id: 1, text: "a")) }
                try await storage.write { try $0.persist(Note(id: 2, text: "b")) }
            }
            """, kind: "warning")
        #expect(warnings.filter { $0.contains("unused") } == [], "\(warnings)")
    }

    @Test("in async functions, try await read and write run the async overload on every kind of storage")
    func awaitChoosesTheAsyncOverload() throws {
        let warnings = try diagnostics(compiling: """
            struct Note: Model { var id: Int64; var text: String
                static let schema = Schema<Note>(primaryKey: \\.id) }
            func onFile(_ s: StrataStorage) async throws { _ = try await s.read { try $0.readAll(Note.self) }; try await s.write { try $0.persist(Note(id: 1, text: "")) } }
            func inMemory(_ s: MemoryStorage) async throws { _ = try await s.read { try $0.readAll(Note.self) } }
            func generic(_ s: some Storage) async throws { _ = try await s.read { try $0.readAll(Note.self) } }
            func existential(_ s: any Storage) async throws { _ = try await s.read { try $0.readAll(Note.self) } }
            @MainActor func onTheMainActor(_ s: StrataStorage) async throws { _ = try await s.read { try $0.readAll(Note.self) } }
            """, kind: "warning")
        // "no 'async' operations occur within 'await' expression" would mean the blocking
        // overload was chosen. (Top-level code is the exception: the compiler ranks
        // overloads there as in a synchronous context, swiftlang/swift#74459; GettingStarted.md, Async.)
        #expect(warnings.filter { $0.contains("no 'async' operations") } == [], "\(warnings)")
    }
}
