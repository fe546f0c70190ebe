import Foundation
import StrataRepository
import Testing

@Suite("FileSystemRepository: ids never escape the directory or collide; writes are atomic")
struct FileSystemRepositoryTests {
    static let hostileIDs = [
        "../../etc/passwd", "", ".", "..", "/", "a/b", "/absolute", "nul\0byte", "\0",
        String(repeating: "x", count: 10_000), String(repeating: "é", count: 5_000),
        "Case", "case", "CASE", "caf\u{E9}", "cafe\u{301}",  // NFC and NFD spellings are different ids
        "%41", "A", "i%41", "h0123456789abcdef0123456789abcdef", ".tmp-file", "emoji 🦊", "tab\tnew\nline",
    ]

    func withDirectory(_ body: (String, String) async throws -> Void) async throws {
        let parent = NSTemporaryDirectory() + "strata-fs-" + UUID().uuidString
        let directory = parent + "/items"
        try FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: parent) }
        try await body(parent, directory)
    }

    @Test("hostile ids round-trip, each to its own file inside the directory")
    func hostileIDsStayInside() async throws {
        try await withDirectory { parent, directory in
            let repository = try FileSystemRepository(directory: directory)
            for (n, id) in Self.hostileIDs.enumerated() { try await repository.create(id: id, item: n) }
            for (n, id) in Self.hostileIDs.enumerated() { #expect(try await repository.read(Int.self, id: id) == n, "\(id.prefix(20))") }
            #expect(try FileManager.default.contentsOfDirectory(atPath: parent) == ["items"])
            let files = try FileManager.default.contentsOfDirectory(atPath: directory)
            #expect(files.count == Self.hostileIDs.count)
            for file in files {
                #expect(file.utf8.count <= 255 && !file.contains("/") && file != "." && file != "..")
                var isDirectory: ObjCBool = false
                #expect(FileManager.default.fileExists(atPath: directory + "/" + file, isDirectory: &isDirectory) && !isDirectory.boolValue)
            }
            #expect(try await repository.list() == Self.hostileIDs.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) })
        }
    }

    @Test("file names: safe characters are kept, everything else escaped, long ids hashed")
    func fileNames() {
        #expect(FileSystemBackend.fileName(for: "") == "i")
        #expect(FileSystemBackend.fileName(for: "user_1-a") == "iuser_1-a")
        #expect(FileSystemBackend.fileName(for: "../x") == "i%2E%2E%2Fx")
        #expect(FileSystemBackend.fileName(for: "A") == "i%41")
        #expect(FileSystemBackend.fileName(for: String(repeating: "x", count: 10_000)).hasPrefix("h"))
        #expect(FileSystemBackend.fileName(for: String(repeating: "x", count: 10_000)).count == 33)
    }

    @Test("a file that holds another id than its name says is reported, not returned")
    func collisionIsDetected() async throws {
        try await withDirectory { _, directory in
            let repository = try FileSystemRepository(directory: directory)
            try await repository.create(id: "a", item: 1)
            // Simulate a hash collision: item "b"'s file name now holds item "a".
            try FileManager.default.moveItem(atPath: directory + "/ia", toPath: directory + "/ib")
            await #expect { let _: Int = try await repository.read(id: "b") } throws: { error in
                guard case RepositoryError.corruptRecord(id: "b", _) = error else { return false }
                return true
            }
        }
    }

    @Test("an update is a rename of a complete file: no temporary files remain")
    func atomicWritesLeaveNoTemporaries() async throws {
        try await withDirectory { _, directory in
            let repository = try FileSystemRepository(directory: directory)
            try await repository.create(id: "a", item: Client(name: "one"))
            try await repository.update(id: "a", item: Client(name: "two"))
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory) == ["ia"])
            // A crash between writing a temporary file and renaming it leaves one; the next open removes it.
            _ = FileManager.default.createFile(atPath: directory + "/.tmp-leftover", contents: Data([1, 2, 3]))
            _ = try FileSystemRepository(directory: directory)
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory) == ["ia"])
            #expect(try await repository.read(Client.self, id: "a") == Client(name: "two"))
        }
    }

    @Test("a file cut short is reported as damaged")
    func truncatedFile() async throws {
        try await withDirectory { _, directory in
            let repository = try FileSystemRepository(directory: directory)
            try await repository.create(id: "a", item: Client(name: "one"))
            try Data([0x05, 0x61]).write(to: URL(fileURLWithPath: directory + "/ia"))
            await #expect(throws: RepositoryError.self) { let _: Client = try await repository.read(id: "a") }
        }
    }
}
