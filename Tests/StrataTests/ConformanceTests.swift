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
}
