import Foundation
import Strata
import StrataConformance
import StrataTestBackends
import Testing

/// The behaviour every `Storage` must have, checked on each backend: the Strata file,
/// memory, SQLite and PostgreSQL.
@Suite("Storage conformance")
struct ConformanceTests {
    static let cases = StorageBackend.available.flatMap { backend in StorageConformance.checks.map { (backend, $0) } }
    static let observationCases = StorageBackend.available.flatMap { backend in StorageConformance.observationChecks.map { (backend, $0) } }

    @Test("every check on every backend", arguments: cases)
    func conformance(_ backend: StorageBackend, _ check: StorageConformance.Check) throws {
        let storage = try backend.make()
        try check.run(on: storage)
        try? storage.close()
    }

    @Test("observation on every backend", arguments: observationCases)
    func observation(_ backend: StorageBackend, _ check: StorageConformance.AsyncCheck) async throws {
        let storage = try backend.make()
        try await check.run(on: storage)
        try? storage.close()
    }
}
