import Foundation
import Strata
import StrataPostgres
import StrataSQLite

/// Every `Storage` the test suites run on: the DAO, ActiveRecord, Repository and
/// conformance suites take their backend as an argument, so one suite covers all four.
///
/// PostgreSQL is the server `STRATA_POSTGRES_URL` names (default: the role and database
/// `scripts/setup.sh` creates on localhost). Where none answers, the PostgreSQL cases are
/// left out with a notice, except in CI (`CI` set), where they fail.
public enum StorageBackend: String, CaseIterable, Sendable, CustomStringConvertible {
    case strata, memory, sqlite, postgres

    public var description: String { rawValue }

    /// The backends this run tests: all four, or without PostgreSQL outside CI when no
    /// server answers.
    public static let available: [StorageBackend] = {
        guard !PostgresTestServer.isRequired, PostgresTestServer.unreachable != nil else { return allCases }
        print("◇ PostgreSQL backend not tested: \(PostgresTestServer.unreachable!) (run scripts/setup.sh, or set STRATA_POSTGRES_URL)")
        return allCases.filter { $0 != .postgres }
    }()

    /// A new, empty storage. The same `place` opens the same database again (a file's
    /// path, a PostgreSQL schema); memory has one storage per place.
    /// - Throws: what opening the backend throws; for PostgreSQL in CI, that no server answers.
    /// - Parameter place: Which database: the same place opens the same one again.
    /// - Returns: The storage.
    public func make(place: String = UUID().uuidString) throws -> any Storage {
        switch self {
        case .strata:
            // Durability is the engine's crash tests' subject; these check behaviour.
            var options = StrataStorage.Options()
            options.durability = .relaxed
            return try StrataStorage(path: Self.directory + "/" + place + ".strata", options: options)
        case .memory:
            return try Self.memoryStorages.withLock { storages in
                if let known = storages[place] { return known }
                let made = try MemoryStorage()
                storages[place] = made
                return made
            }
        case .sqlite: return try SQLiteStorage(path: Self.directory + "/" + place + ".sqlite")
        case .postgres:
            return try PostgresStorage(url: PostgresTestServer.url, schema: "t_" + place.lowercased().replacingOccurrences(of: "-", with: "_"), maxConnections: 4)
        }
    }

    private static let memoryStorages = Mutex<[String: MemoryStorage]>([:])

    /// This run's database files; directories of earlier runs are removed when it is made.
    public static let directory: String = {
        let base = NSTemporaryDirectory()
        let mine = "strata-backends-\(ProcessInfo.processInfo.processIdentifier)"
        for old in (try? FileManager.default.contentsOfDirectory(atPath: base)) ?? [] where old.hasPrefix("strata-backends-") && old != mine {
            try? FileManager.default.removeItem(atPath: base + old)
        }
        try? FileManager.default.createDirectory(atPath: base + mine, withIntermediateDirectories: true)
        return base + mine
    }()
}

import Synchronization

/// The PostgreSQL server the tests use.
public enum PostgresTestServer {
    /// `STRATA_POSTGRES_URL`, or the role and database `scripts/setup.sh` creates.
    public static let url = ProcessInfo.processInfo.environment["STRATA_POSTGRES_URL"] ?? "postgres://strata:strata@localhost:5432/strata_test"

    /// In CI the PostgreSQL cases must run.
    public static let isRequired = ProcessInfo.processInfo.environment["CI"] != nil

    /// Why no server answers at `url`, or nil when one does.
    public static let unreachable: String? = {
        do {
            let storage = try PostgresStorage(url: url, maxConnections: 1)
            defer { try? storage.close() }
            _ = try storage.read { _ in 0 }
            return nil
        } catch {
            return "\(url): \(error)"
        }
    }()
}
