// Helper process for Studio's tests: writes the files the browser test opens, and commits
// to one from a process other than the server's. Not a user tool.
//
//   StrataStudioFixture w1 PATH COUNT    a W1-shaped "users" collection (the benchmark's
//                                        user records) and a "hostile" collection of
//                                        values a page must show as text
//   StrataStudioFixture commit PATH ID   persist one more user
//   StrataStudioFixture serve-blocked PATH
//                                        serve PATH with Studio, then block every shared
//                                        concurrency thread; prints the URL, then "blocked",
//                                        and runs until its standard input closes
import Foundation
import Strata
import StrataStudio

/// The benchmark's W1 user record.
struct User: Model {
    var id: Int64
    var name: String
    var email: String
    var age: Int
    var city: String
    var tags: [String]
    var createdAt: Date

    static let collectionName = "users"
    static let schema = Schema<User>(primaryKey: \.id, indexes: [.index(\.age), .unique(\.email), .index(\.city)])

    init(id: Int64) {
        let cities = ["Oslo", "Lima", "Kyoto", "Accra", "Quito", "Perth", "Tartu", "Cork"]
        self.id = id
        name = "user \(id)"
        email = "user\(id)@example.com"
        age = 18 + Int(id * 7 % 60)
        city = cities[Int(id % Int64(cities.count))]
        tags = id % 3 == 0 ? ["admin", "beta"] : ["beta"]
        createdAt = Date(timeIntervalSince1970: 1_700_000_000 + Double(id) * 60)
    }
}

/// Values that would be markup, break out of a string, or swamp a page if shown carelessly.
struct Hostile: Model {
    var id: Int64
    var note: String
    static let collectionName = "hostile"
    static let schema = Schema<Hostile>(primaryKey: \.id)

    static let all = [
        Hostile(id: 1, note: "<script>window.studioInjected = true; alert('injected')</script>"),
        Hostile(id: 2, note: "<img src=x onerror=\"window.studioInjected = true\">"),
        Hostile(id: 3, note: "\"double\" and 'single' quotes, a back\\slash, </td></tr></table>"),
        Hostile(id: 4, note: "control characters: \u{0}\u{1}\u{7}\u{8}\u{1B}[31m \n\t\r end"),
        Hostile(id: 5, note: String(repeating: "1 MB string. ", count: 80_660)),
    ]
}

/// Serves `path` with Studio, then holds each of Swift's shared cooperative threads (one per
/// core) with a task that waits, and prints the URL and "blocked": what an app whose
/// synchronous work holds every shared thread does to Studio's pages, alone in a process, so
/// that no other work competes for those threads. Ends when standard input closes.
func serveWithSharedThreadsBlocked(_ path: String) -> Never {
    let listening = DispatchSemaphore(value: 0)
    nonisolated(unsafe) var url = ""
    Task.detached {
        do {
            try await StudioServer.run(Studio(path: path), port: 0) { url = $0; listening.signal() }
        } catch {
            FileHandle.standardError.write(Data("StrataStudioFixture: \(error)\n".utf8))
            exit(1)
        }
    }
    listening.wait()
    let width = ProcessInfo.processInfo.activeProcessorCount
    let started = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0)
    for _ in 0 ..< width { Task.detached { started.signal(); release.wait() } }
    for _ in 0 ..< width where started.wait(timeout: .now() + 60) == .timedOut {
        FileHandle.standardError.write(Data("StrataStudioFixture: fewer than \(width) shared threads took a task\n".utf8))
        exit(1)
    }
    FileHandle.standardOutput.write(Data("\(url)\nblocked\n".utf8))
    _ = FileHandle.standardInput.readDataToEndOfFile()
    exit(0)
}

let arguments = CommandLine.arguments
if arguments.count == 3 && arguments[1] == "serve-blocked" { serveWithSharedThreadsBlocked(arguments[2]) }
guard arguments.count == 4 else {
    FileHandle.standardError.write(Data("usage: StrataStudioFixture w1 PATH COUNT | commit PATH ID | serve-blocked PATH\n".utf8))
    exit(2)
}
do {
    let storage = try StrataStorage(path: arguments[2])
    switch arguments[1] {
    case "w1":
        let count = Int64(arguments[3])!
        let batch: Int64 = 10_000
        for start in stride(from: 1, through: count, by: Int(batch)) {
            try storage.write { tx in
                for id in start..<min(start + batch, count + 1) { _ = try tx.persist(User(id: id)) }
            }
        }
        try storage.write { tx in
            for record in Hostile.all { _ = try tx.persist(record) }
        }
    case "commit":
        _ = try storage.persist(User(id: Int64(arguments[3])!))
    default:
        exit(2)
    }
    try storage.close()
} catch {
    FileHandle.standardError.write(Data("StrataStudioFixture: \(error)\n".utf8))
    exit(1)
}

