import Foundation
import Strata
import StrataEngine
import Testing

/// Files written by earlier versions of Strata, committed under `Fixtures/`, must keep
/// opening and reading the same. Each fixture comes with the JSON of every record as it
/// was written; a test reads the file with today's code and compares.
///
/// To add a fixture for the format as it is now (when FORMAT.md changes), run
/// `STRATA_WRITE_FIXTURES=1 swift test --filter FormatFixtureTests` and commit the files.
@Suite("Format fixtures: older files open and read the same", .serialized)
struct FormatFixtureTests {
    struct Address: Codable, Equatable, Sendable {
        var city: String
        var zip: String?
    }

    enum Level: String, Codable, Sendable, KeyComponent { case low, high }

    /// Every kind of stored value: integers, floating, text, bytes, date, UUID, URL,
    /// optional, nested struct, array, dictionary, enum.
    struct Customer: Model, Equatable {
        var id: Int64 = 0
        var name: String
        var email: String
        var balance: Double
        var joined: Date
        var token: UUID
        var site: URL?
        var avatar: Data
        var address: Address
        var tags: [String]
        var counts: [String: Int]
        var level: Level
        var nickname: String?
        var initials: String { String(name.prefix(1)) }
        static let collectionName = "customers"
        static let schema = Schema<Customer>.autoIncrementing(\.id, indexes: [
            .unique(\.email), .index(\.level, \.balance), .index(\.initials, name: "initials"), .index(\.nickname),
        ])
    }

    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")

    /// The customers a fixture holds: deterministic, with a value large enough to be
    /// stored out of line.
    static func customers() -> [Customer] {
        (1 ... 60).map { n in
            Customer(
                name: ["Ada", "Grace", "Lin", "Edsger"][n % 4] + " \(n)", email: "c\(n)@example.com", balance: Double(n) * 10.25 - 100,
                joined: Date(timeIntervalSince1970: 1_700_000_000 + Double(n) * 86_400), token: UUID(uuidString: String(format: "00000000-0000-4000-8000-%012d", n))!,
                site: n % 3 == 0 ? URL(string: "https://example.com/\(n)") : nil, avatar: Data(repeating: UInt8(n), count: n == 7 ? 9_000 : 8),
                address: Address(city: ["Oslo", "Lima", "Pune"][n % 3], zip: n % 2 == 0 ? "\(1000 + n)" : nil),
                tags: (0 ..< n % 4).map { "t\($0)" }, counts: ["visits": n, "orders": n / 3], level: n % 5 == 0 ? .high : .low,
                nickname: n % 4 == 0 ? nil : "nick\(n)")
        }
    }

    /// Writes a fixture: two checkpoints' worth of commits, an update and a delete, and a
    /// log tail after the last checkpoint (so opening replays it). Since format 2 the tail
    /// holds customer 7, whose 9,000-byte avatar its commit wrote to a value frame.
    /// (format 1's fixture checkpointed after the first 40.)
    static func write(to path: String) throws {
        var options = Database.Options()
        options.checkpointOnClose = false
        let storage = try StrataStorage(path: path, options: options)
        let all = customers()
        try storage.persist(Array(all[0 ..< 5]))
        try storage.database.checkpoint()
        try storage.persist(Array(all[5 ..< 40]))
        try storage.persist(Array(all[40...]))
        try storage.write { writer in
            var changed = all[4]
            changed.id = 5
            changed.balance = 1_234.5
            try writer.persist(changed)
            try writer.erase(Customer.self, primaryKey: Int64(9))
        }
        try storage.close()
    }

    /// The JSON of every record, in primary-key order, as the inspector reads it.
    static func dump(_ path: String) throws -> [String] {
        let database = try Database(path: path, options: .init(readOnly: true))
        defer { try? database.close() }
        var lines: [String] = []
        try CollectionInspector(snapshot: database.snapshot()).records(in: Customer.collectionName) { record in
            lines.append(record.key.description + " " + record.value.json)
            return true
        }
        return lines
    }

    /// Copies a committed fixture to a temporary file (tests never change the original).
    func copy(_ name: String) throws -> String {
        let path = NSTemporaryDirectory() + "strata-fixture-" + UUID().uuidString + ".strata"
        try FileManager.default.copyItem(atPath: Self.directory.appendingPathComponent(name).path, toPath: path)
        return path
    }

    /// One per format version, oldest first.
    static let fixtures = ["2026-11-format1.strata", "2026-11-format2.strata", "2026-11-format3.strata"]

    @Test("writes the current format's fixture when asked to", .enabled(if: ProcessInfo.processInfo.environment["STRATA_WRITE_FIXTURES"] == "1"))
    func writeFixtures() throws {
        let path = Self.directory.appendingPathComponent(Self.fixtures.last!).path
        try? FileManager.default.removeItem(atPath: path)
        try Self.write(to: path)
        try (Self.dump(path).joined(separator: "\n") + "\n").write(toFile: path + ".json", atomically: true, encoding: .utf8)
    }

    @Test("a committed fixture opens and every record reads as it was written", arguments: fixtures)
    func readsAsWritten(_ name: String) throws {
        let path = try copy(name)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let expected = try String(contentsOfFile: Self.directory.appendingPathComponent(name + ".json").path, encoding: .utf8)
        #expect(try Self.dump(path).joined(separator: "\n") + "\n" == expected)
        let storage = try StrataStorage(path: path)
        defer { try? storage.close() }
        var customers = Self.customers()
        customers[4].balance = 1_234.5
        customers.remove(at: 8)
        let read = try storage.read(Customer.query())
        #expect(read.map(\.id) == (1 ... 60).filter { $0 != 9 }.map(Int64.init))
        #expect(read.map { Customer(name: $0.name, email: $0.email, balance: $0.balance, joined: $0.joined, token: $0.token, site: $0.site, avatar: $0.avatar,
                                    address: $0.address, tags: $0.tags, counts: $0.counts, level: $0.level, nickname: $0.nickname) } == customers)
    }

    @Test("a committed fixture's indexes answer queries and it takes new writes", arguments: fixtures)
    func indexesAndWrites(_ name: String) throws {
        let path = try copy(name)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let storage = try StrataStorage(path: path)
        #expect(try storage.read(Customer.filter(\.email == "c12@example.com")).map(\.id) == [12])
        #expect(try storage.explain(Customer.filter(\.email == "c12@example.com")).access == .indexPoints(index: "email", count: 1))
        #expect(try storage.read(Customer.filter(\.nickname == nil)).count == 15)
        let created = try storage.create(Self.customers()[0].with { $0.email = "new@example.com" })
        #expect(created.id == 61)
        try storage.close()
        let verify = try StrataStorage(path: path)
        #expect(try verify.read(Customer.query()).count == 60)
        try verify.close()
    }
}

extension FormatFixtureTests.Customer {
    func with(_ change: (inout Self) -> Void) -> Self {
        var copy = self
        change(&copy)
        return copy
    }
}
