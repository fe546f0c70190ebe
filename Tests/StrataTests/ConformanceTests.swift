import Foundation
import Strata
import StrataConformance
import Testing

@Suite("Storage conformance")
struct ConformanceTests {
    @Test("StrataStorage", arguments: StorageConformance.checks)
    func strata(_ check: StorageConformance.Check) throws {
        let directory = NSTemporaryDirectory() + "strata-conformance-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let storage = try StrataStorage(path: directory + "/c.strata")
        try check.run(on: storage)
        try storage.close()
    }

    @Test("MemoryStorage", arguments: StorageConformance.checks)
    func memory(_ check: StorageConformance.Check) throws {
        try check.run(on: try MemoryStorage())
    }

    @Test("StrataStorage observation", arguments: StorageConformance.observationChecks)
    func strataObservation(_ check: StorageConformance.AsyncCheck) async throws {
        let directory = NSTemporaryDirectory() + "strata-observe-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var options = StrataStorage.Options()
        options.durability = .relaxed  // 300-commit bursts; durability is not what these check
        let storage = try StrataStorage(path: directory + "/c.strata", options: options)
        try await check.run(on: storage)
        try? storage.close()
    }

    @Test("MemoryStorage observation", arguments: StorageConformance.observationChecks)
    func memoryObservation(_ check: StorageConformance.AsyncCheck) async throws {
        try await check.run(on: try MemoryStorage())
    }
}
