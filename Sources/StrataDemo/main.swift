// strata-demo: a tour of Strata on an embedded database file.
//
//   swift run strata-demo [PATH] [--backend strata|memory|sqlite|postgres URL]
//                                              (default: ./demo.strata, strata)
//
// Run it twice: the second run opens the file the first one wrote and finds its data.
// `--backend memory|sqlite|postgres URL` runs the app layers' part of the tour (typed
// storage, DAO, live queries, repository, ActiveRecord) on MemoryStorage, a SQLite file
// (PATH, default ./demo.sqlite) or a PostgreSQL server (in a new schema), and prints the
// same results.
import Foundation
import Strata
import StrataDAO
import StrataEngine
import StrataExamples
import StrataPostgres
import StrataRecord
import StrataRepository
import StrataSQLite

/// The demo's model: a Codable struct with a primary key and two indexes.
struct Member: Model, Equatable {
    var id: Int64
    var name: String
    var email: String
    var age: Int
    var city: String

    static let schema = Schema<Member>(primaryKey: \.id, indexes: [.index(\.age), .unique(\.email)])
}

/// The command line: an optional path and an optional `--backend`.
struct DemoArguments {
    var path: String { explicitPath ?? (backend == "sqlite" ? "demo.sqlite" : "demo.strata") }
    var explicitPath: String?
    var backend = "strata"
    /// The PostgreSQL server, for `--backend postgres`.
    var url: String?

    init(_ arguments: [String]) throws {
        var rest = arguments[...]
        var sawPath = false
        while let argument = rest.popFirst() {
            switch argument {
            case "--backend":
                guard let value = rest.popFirst(), ["strata", "memory", "sqlite", "postgres"].contains(value) else {
                    throw DemoUsage("--backend takes strata, memory, sqlite or postgres URL")
                }
                backend = value
                if value == "postgres" {
                    guard let url = rest.popFirst(), !url.hasPrefix("-") else { throw DemoUsage("--backend postgres takes the server's URL: postgres://user:password@host/database") }
                    self.url = url
                }
            case "-h", "--help": throw DemoUsage(nil)
            case _ where argument.hasPrefix("-"): throw DemoUsage("unknown option \(argument)")
            default:
                guard !sawPath else { throw DemoUsage("one path at most") }
                (explicitPath, sawPath) = (argument, true)
            }
        }
    }
}

struct DemoUsage: Error {
    let problem: String?
    init(_ problem: String?) { self.problem = problem }
    static let text = "usage: strata-demo [PATH] [--backend strata|memory|sqlite|postgres URL]"
}

let arguments: DemoArguments
do {
    arguments = try DemoArguments(Array(CommandLine.arguments.dropFirst()))
} catch let usage as DemoUsage {
    if let problem = usage.problem {
        FileHandle.standardError.write(Data("strata-demo: \(problem)\n\(DemoUsage.text)\n".utf8))
        exit(2)
    }
    print(DemoUsage.text)
    exit(0)
}
let path = arguments.path

func section(_ title: String) { print("\n== \(title)") }

func formatBytes(_ n: UInt64) -> String {
    n < 10_000 ? "\(n) B" : n < 10_000_000 ? "\(n / 1024) KiB" : "\(n / (1024 * 1024)) MiB"
}

do {
    if arguments.backend == "memory" {
        print("Strata demo on MemoryStorage (the engine, in memory)")
        try await appTour(storage: try MemoryStorage())
        exit(0)
    }
    if arguments.backend == "sqlite" {
        // A new file each run, so the tour prints what it prints on every backend.
        try? FileManager.default.removeItem(atPath: path)
        print("Strata demo on SQLiteStorage (\(path), through GRDB)")
        try await appTour(storage: try SQLiteStorage(path: path))
        exit(0)
    }
    if arguments.backend == "postgres", let url = arguments.url {
        let schema = "strata_demo_" + String(Int(Date().timeIntervalSince1970 * 1000))
        print("Strata demo on PostgresStorage (schema \(schema); DROP SCHEMA \(schema) CASCADE removes it)")
        let storage = try PostgresStorage(url: url, schema: schema)
        try await appTour(storage: storage)
        try storage.close()
        exit(0)
    }
    let existed = FileManager.default.fileExists(atPath: path)
    let db = try Database(path: path)
    print("Strata engine demo on \(path) (\(existed ? "opened existing file" : "created new file"))")

    section("Engine: trees of ordered byte keys, one atomic durable transaction")
    let run = try db.read { snapshot in snapshot.hasTree("runs") ? try snapshot.count(in: "runs") : 0 } + 1
    try db.write { tx in
        try tx.createTree("runs", ifNotExists: true)
        try tx.createTree("users", ifNotExists: true)
        try tx.put(Array("run \(run) at \(Date())".utf8), forKey: Key(run).bytes, in: "runs")
        let names = ["ada", "alan", "barbara", "edsger", "grace", "john", "ken", "margaret"]
        for (i, name) in names.enumerated() {
            // Keys are tuples (String, Int): byte order is value order.
            let value = Array("{\"name\":\"\(name)\",\"run\":\(run),\"age\":\(30 + i)}".utf8)
            try tx.put(value, forKey: Key(name, run).bytes, in: "users")
        }
    }
    print("committed run \(run): 1 run record, 8 users (durable: fdatasync before commit returned)")

    section("Reads: point lookup, prefix scan, reverse range scan")
    try db.read { snapshot in
        if let value = try snapshot.get(Key("grace", run).bytes, in: "users") {
            print("get (\"grace\", \(run)) -> \(String(decoding: value, as: UTF8.self))")
        }
        var matches: [String] = []
        try snapshot.scan("users", in: .prefix(Key().appendingStringPrefix("a"))) { key, _ in
            matches.append(Key(bytes: Array(key)).description)
            return true
        }
        print("prefix \"a\": \(matches.count) keys, first \(matches.prefix(3).joined(separator: " "))")
        var newestFirst: [String] = []
        try snapshot.scan("runs", reverse: true) { _, value in
            newestFirst.append(String(decoding: value, as: UTF8.self))
            return newestFirst.count < 3
        }
        print("latest runs: \(newestFirst.joined(separator: " | "))")
    }

    section("Snapshots: a reader keeps its view while the writer commits")
    let before = try db.snapshot()
    try db.write { tx in try tx.delete(Key("ada", run).bytes, in: "users") }
    print("after deleting (\"ada\", \(run)): old snapshot sees it: \(try before.contains(Key("ada", run).bytes, in: "users")), new one: \(try db.snapshot().contains(Key("ada", run).bytes, in: "users"))")

    section("Rollback: a throwing transaction leaves nothing behind")
    struct Abort: Error {}
    do {
        try db.write { tx in
            try tx.put(Array("temporary".utf8), forKey: Key("zed", run).bytes, in: "users")
            throw Abort()
        }
    } catch is Abort {
        print("rolled back: (\"zed\", \(run)) present? \(try db.snapshot().contains(Key("zed", run).bytes, in: "users"))")
    }

    let storage = StrataStorage(database: db)
    try await appTour(storage: storage)
    try await followingTour(writer: storage, path: path)

    section("Moving data: every collection copied to another storage, verified")
    let copy = try MemoryStorage()
    let report = try StorageTransfer.copy([Member.self, DialogModel.self, MessageModel.self], from: storage, to: copy, batchSize: 4)
    print(report.collections.map { "\($0.name) \($0.records) records, checksum \(String($0.checksum, radix: 16))" }.joined(separator: "; "))

    section("Checkpoint, space and compaction")
    try db.checkpoint()
    let space = try db.analyzeSpace()
    for tree in space.trees {
        print("tree \(tree.name): \(tree.entryCount) entries, depth \(tree.depth), \(tree.leafPages) leaf + \(tree.branchPages) branch pages, \(formatBytes(tree.storedBytes)) on disk")
    }
    print("file \(formatBytes(space.fileSize)): live \(formatBytes(space.liveBytes)), dead \(formatBytes(space.deadBytes))")
    let compaction = try db.compact()
    print("compacted: \(formatBytes(compaction.bytesBefore)) -> \(formatBytes(compaction.bytesAfter))")

    section("Statistics")
    let stats = try db.statistics()
    print("commit sequence \(stats.commitSequence), checkpoint covers \(stats.checkpointSequence)")
    print("bytes read at open: \(stats.bytesReadAtOpen) (header, checkpoint and log tail only), commits replayed: \(stats.commitsReplayedAtOpen)")
    print("cache: \(stats.cacheHits) hits, \(stats.cacheMisses) misses, \(stats.cachedPages) pages; leaves kept in memory: \(stats.keptLeafBytes) bytes")
    try db.close()
    print("\nclosed \(path); run again to reopen it")
} catch {
    FileHandle.standardError.write(Data("strata-demo: \(error)\n".utf8))
    exit(1)
}

/// The part of the tour that app code runs: the same on every backend.
func appTour(storage: some Storage) async throws {
    try typedAndDAOTour(storage: storage)
    try await liveQueryTour(storage: storage)
    try await repositoryTour(storage: storage)
    try recordTour(storage: storage)
}

/// A live query: the current result, then one per commit that changes it.
func liveQueryTour(storage: some Storage) async throws {
    section("Live queries: a fresh result after each commit that changes it")
    var bostonians = storage.observe(Member.filter(\.city == "Boston").sorted(by: \.name)).makeAsyncIterator()
    print("now: \(try await bostonians.next()?.map(\.name) ?? [])")
    try await storage.write { try $0.persist(Member(id: 8, name: "Louise", email: "louise@example.com", age: 39, city: "Boston")) }
    print("after a commit adding Louise: \(try await bostonians.next()?.map(\.name) ?? [])")
    try await storage.write { try $0.erase(Member.self, primaryKey: Int64(8)) }
    print("after a commit erasing her: \(try await bostonians.next()?.map(\.name) ?? [])")
}

/// A second, read-only handle on the file — as a widget, an extension or another process
/// would open it — follows the writer's commits: by refresh(), and by itself while observed.
func followingTour(writer: StrataStorage, path: String) async throws {
    section("Following the file: a read-only handle sees other handles' and processes' commits")
    let dashboard = try StrataStorage(path: path, options: .init(readOnly: true))
    try writer.persist(Member(id: 9, name: "Frances", email: "frances@example.com", age: 44, city: "Boston"))
    print("read-only handle before refresh: \(try dashboard.count(Member.filter(\.city == "Boston"))) in Boston (its view when it opened)")
    try dashboard.refresh()
    print("after refresh(): \(try dashboard.count(Member.filter(\.city == "Boston")))")
    var live = dashboard.observeCount(Member.filter(\.city == "Boston")).makeAsyncIterator()
    print("observed on the read-only handle: \(try await live.next() ?? -1)")
    try writer.erase(Member.self, primaryKey: Int64(9))
    print("after the writer erased Frances, the file watch delivered: \(try await live.next() ?? -1)")
    try dashboard.close()
}

/// Typed storage and the DAO, called synchronously.
func typedAndDAOTour(storage: some Storage) throws {
    section("Typed storage: Codable models, indexes, queries")
    let members = [("Ada", 36, "London"), ("Alan", 41, "Wilmslow"), ("Grace", 85, "Arlington"), ("Edsger", 72, "Austin"),
                   ("Barbara", 84, "Boston"), ("Ken", 27, "Berkeley"), ("Margaret", 33, "Boston")]
        .enumerated().map { Member(id: Int64($0.offset + 1), name: $0.element.0, email: "\($0.element.0.lowercased())@example.com", age: $0.element.1, city: $0.element.2) }
    try storage.persist(members)   // upsert, one transaction
    print("persisted \(try storage.count(Member.self)) members")
    let over40 = Member.filter(\.age > 40).sorted(by: \.age)
    print("age > 40 by age: \(try storage.read(over40).map { "\($0.name) \($0.age)" }.joined(separator: ", "))")
    print("  plan: \(try storage.explain(over40))")
    let inBoston = try storage.read(Member.filter(#Predicate { $0.city == "Boston" && $0.age < 80 }))
    print("#Predicate city == Boston && age < 80: \(inBoston.map(\.name))")
    do {
        try storage.create(Member(id: 99, name: "Copy", email: "ada@example.com", age: 1, city: "-"))
    } catch let error as StorageError {
        print("unique index refused a duplicate email: \(error)")
    }

    section("DAO: plain objects in, plain objects out; the database stays behind a translator")
    let dialogs = DAO(storage: storage, translator: DialogTranslator())
    let plains = (1 ... 4).map { DialogPlainObject.sample($0, pinned: $0 % 2 == 1) }
    try dialogs.persist(plains)
    print("persisted \(plains.count) dialogs with \(plains.count * 3) messages in one transaction")
    print("count: \(try dialogs.count()) dialogs, \(try storage.count(MessageModel.self)) messages in their own collection")
    let pinned = try dialogs.read(predicatedBy: #Predicate { $0.isPinned }, orderedBy: \.id, ascending: false)
    print("pinned, newest first: \(pinned.map { "dialog \($0.id) (\($0.messages.count) messages)" }.joined(separator: ", "))")
    let unread = MessageModel.filter(\.isRead == false && \.isIncoming == true)
    print("unread incoming across dialogs: \(try storage.count(unread)) (plan: \(try storage.explain(unread).access))")
    try dialogs.erase(byPrimaryKey: 2)
    print("erased dialog 2 and, by its translator, its messages: \(try dialogs.count()) dialogs, \(try storage.count(MessageModel.self)) messages")
}
