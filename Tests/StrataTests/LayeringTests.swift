import Foundation
import Testing

/// The layers talk through their public doors: the pattern modules (DAO, ActiveRecord,
/// Repository) and the conformance suite are built on `Strata` alone, never on the engine.
@Suite("Layering")
struct LayeringTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    @Test("no file of a pattern module imports StrataEngine", arguments: ["StrataDAO", "StrataRecord", "StrataRepository", "StrataConformance"])
    func patternModulesDoNotImportTheEngine(_ module: String) throws {
        let directory = Self.root.appendingPathComponent("Sources").appendingPathComponent(module)
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".swift") }
        #expect(!files.isEmpty)
        for file in files {
            let text = try String(contentsOf: directory.appendingPathComponent(file), encoding: .utf8)
            let imports = text.split(separator: "\n").filter { $0.hasPrefix("import ") || $0.hasPrefix("@_exported import ") }
            #expect(!imports.contains { $0.contains("StrataEngine") }, "\(module)/\(file) imports the engine")
        }
    }

    @Test("Package.swift gives the pattern modules no dependency on the engine")
    func manifestDeclaresStrataOnly() throws {
        let manifest = try String(contentsOf: Self.root.appendingPathComponent("Package.swift"), encoding: .utf8)
        for module in ["StrataDAO", "StrataRecord", "StrataRepository", "StrataConformance"] {
            let line = manifest.split(separator: "\n").first { $0.contains(".target(name: \"\(module)\"") }
            #expect(line?.contains("dependencies: [\"Strata\"]") == true, "\(module): \(line ?? "not found")")
        }
    }
}
