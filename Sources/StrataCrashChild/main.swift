// Helper process for the engine's crash and lock tests; not a user tool.
//
//   StrataCrashChild commit PATH   commit numbered transactions until killed; print
//                                  "ok N" after commit N returned (it is durable then)
//   StrataCrashChild verify PATH   open PATH, check it holds exactly commits 1...N for
//                                  the highest N present; print "verified N"
//   StrataCrashChild lock PATH     try to open PATH for writing; print "locked" or "opened"
//   StrataCrashChild compactor PATH SECONDS
//                                  until SECONDS pass: open PATH for writing (retrying while
//                                  locked), compact it twice, close, wait for a writer's
//                                  commit; print "compactions N"
//   StrataCrashChild writer PATH SECONDS ID
//                                  until SECONDS pass: open PATH for writing (retrying while
//                                  locked), commit key (ID, n), close; print "ok ID n" after
//                                  each acknowledged commit
//   StrataCrashChild follow PATH   open PATH read-only and refresh it in a loop until
//                                  standard input closes, checking every state it sees:
//                                  "numbers" holds exactly commits 1...N, and each writer's
//                                  keys in "writers" are 1...n without a gap; then refresh
//                                  once more and print "followed STATES states, sequence S,
//                                  numbers N, writers E entries"
import Foundation
import StrataEngine
import Synchronization

/// Writes a line to stdout unbuffered, so the parent sees every acknowledgement at once.
func say(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }

let arguments = CommandLine.arguments
guard arguments.count >= 3 else {
    FileHandle.standardError.write(Data("usage: StrataCrashChild commit|verify|lock|compactor|writer PATH [SECONDS [ID]]\n".utf8))
    exit(2)
}
let path = arguments[2]

/// What transaction `n` writes: several keys, so a partial transaction would show, and
/// every seventh one deletes an older key, so recovery replays removals and merges.
func changes(of n: Int) -> (puts: [([UInt8], [UInt8])], deletes: [[UInt8]]) {
    let puts = (0 ..< 1 + n % 5).map { part in (Key(n, part).bytes, value(of: n, part: part)) }
    let deletes = n % 7 == 0 && n > 10 ? [Key(n - 10, 0).bytes] : []
    return (puts, deletes)
}

/// A checkpoint interval that grows with the store from 16 KiB of log to 1 MiB.
func growingIntervalOptions() -> Database.Options {
    var options = Database.Options()
    options.checkpointLogBytes = 16 << 10
    options.checkpointLogBytesLimit = 1 << 20
    return options
}

/// The highest transaction number present in the file.
func lastCommitted(_ db: Database) throws -> Int {
    try db.read { snapshot in
        guard snapshot.hasTree("numbers") else { return 0 }
        let cursor = try snapshot.cursor("numbers")
        guard try cursor.last(), case .int(let last)? = try Key(bytes: cursor.key).elements().first else { return 0 }
        return Int(last)
    }
}

/// A value whose size varies, sometimes over the out-of-line threshold.
func value(of n: Int, part: Int) -> [UInt8] {
    let size = n % 17 == 0 ? 3000 : 20 + (n * 31 + part) % 200
    return (0 ..< size).map { UInt8(truncatingIfNeeded: n &* 7 &+ part &+ $0) }
}

/// Checks that `snapshot` holds exactly commits 1...N of the "numbers" workload for the
/// highest N present, and returns N; exits with a message otherwise.
func checkNumbers(_ snapshot: Snapshot) throws -> Int {
    guard snapshot.hasTree("numbers") else { return 0 }
    let cursor = try snapshot.cursor("numbers")
    guard try cursor.last(), case .int(let lastValue)? = try Key(bytes: cursor.key).elements().first else { return 0 }
    let last = Int(lastValue)
    var expected: [[UInt8]: [UInt8]] = [:]
    for n in stride(from: 1, through: last, by: 1) {
        for (key, value) in changes(of: n).puts { expected[key] = value }
        for key in changes(of: n).deletes { expected[key] = nil }
    }
    var found = 0
    try snapshot.scan("numbers") { key, value in
        guard expected[Array(key)] == Array(value) else {
            say("mismatch at \(Key(bytes: Array(key))) in the state of commit \(last) (sequence \(snapshot.sequence))")
            exit(1)
        }
        found += 1
        return true
    }
    guard found == expected.count else {
        say("found \(found) entries, expected \(expected.count) for commits 1...\(last) (sequence \(snapshot.sequence))")
        exit(1)
    }
    return last
}

/// Checks that each writer's keys (ID, n) in "writers" run 1...n without a gap, and
/// returns how many entries the tree holds; exits with a message otherwise.
func checkWriters(_ snapshot: Snapshot) throws -> Int {
    guard snapshot.hasTree("writers") else { return 0 }
    var next: [Int64: Int64] = [:]
    var entries = 0
    try snapshot.scan("writers") { key, _ in
        entries += 1
        let elements = try Key(bytes: Array(key)).elements()
        guard case .int(let id)? = elements.first, id > 0, case .int(let n)? = elements.last else { return true }
        guard n == next[id, default: 1] else {
            say("writer \(id): commit \(n) follows \(next[id, default: 1] - 1) (sequence \(snapshot.sequence))")
            exit(1)
        }
        next[id] = n + 1
        return true
    }
    return entries
}

/// Opens `path` for writing, retrying while another handle holds the lock, until `deadline`.
func openForWriting(_ path: String, until deadline: Date) throws -> Database? {
    while Date() < deadline {
        do {
            return try Database(path: path)
        } catch StrataError.locked {
            continue
        }
    }
    return nil
}

/// Waits until "writers" holds more than `entries` entries (some writer committed), or until
/// `deadline`. The compactor waits so between its rounds: it reopens the moment it closes, so
/// on a loaded machine it could win every race for the lock and starve the writers, and the
/// race this helper exists for (a writer opening while compaction replaces the file) needs
/// both sides to run. It waits for a fact in the file, not for a length of time.
func waitForAnotherWriter(_ path: String, beyond entries: Int, until deadline: Date) throws {
    let reader = try Database(path: path, options: Database.Options(readOnly: true))
    defer { try? reader.close() }
    while Date() < deadline {
        _ = try reader.refresh()
        if try reader.read({ try $0.hasTree("writers") ? $0.count(in: "writers") : 0 }) > entries { return }
        usleep(1000)
    }
}

do {
    switch arguments[1] {
    case "compactor":
        let deadline = Date(timeIntervalSinceNow: Double(arguments[3])!)
        var compactions = 0
        while let db = try openForWriting(path, until: deadline) {
            try db.compact()
            try db.compact()
            let entries = try db.read { try $0.hasTree("writers") ? $0.count(in: "writers") : 0 }
            try db.close()
            compactions += 2
            try waitForAnotherWriter(path, beyond: entries, until: deadline)
        }
        say("compactions \(compactions)")
    case "writer":
        let deadline = Date(timeIntervalSinceNow: Double(arguments[3])!)
        let id = Int(arguments[4])!
        var n = 0
        while let db = try openForWriting(path, until: deadline) {
            n += 1
            let number = n
            try db.write { tx in
                try tx.createTree("writers", ifNotExists: true)
                try tx.put(Array("\(id):\(number)".utf8), forKey: Key(id, number).bytes, in: "writers")
            }
            say("ok \(id) \(n)")
            try db.close()
        }
    case "commit":
        var options = Database.Options()
        options.checkpointLogBytes = 48 * 1024
        // `commit <path> background`: every automatic checkpoint runs beside the commits.
        // `commit <path> growing`: an interval that grows with the store, from 16 KiB of log
        // to 1 MiB (`checkpointLogBytesLimit`), so kills land between checkpoints far apart.
        let mode = arguments.count > 3 ? arguments[3] : "default"
        if mode == "background" { options.backgroundCheckpoints = .always }
        if mode == "growing" { options = growingIntervalOptions() }
        let db = try Database(path: path, options: options)
        try db.write { tx in try tx.createTree("numbers", ifNotExists: true) }
        var n = try lastCommitted(db)
        while true {
            n += 1
            let number = n
            try db.write { tx in
                for (key, value) in changes(of: number).puts { try tx.put(value, forKey: key, in: "numbers") }
                for key in changes(of: number).deletes { try tx.delete(key, in: "numbers") }
            }
            say("ok \(n)")
        }
    case "verify":
        // `verify <path> growing` opens as `commit <path> growing` does, and says too where
        // that policy puts the next checkpoint for a store of this size.
        let growing = arguments.count > 3 && arguments[3] == "growing"
        let db = try Database(path: path, options: growing ? growingIntervalOptions() : Database.Options())
        let last = try checkNumbers(try db.snapshot())
        if growing { say("checkpoint due at \(try db.statistics().checkpointDueAtLogBytes) bytes of log") }
        try db.close()
        say("verified \(last)")
    case "follow":
        let db = try Database(path: path, options: Database.Options(readOnly: true))
        final class Flag: Sendable { let raised = Atomic<Bool>(false) }
        let inputClosed = Flag()
        Thread.detachNewThread {
            _ = FileHandle.standardInput.readDataToEndOfFile()
            inputClosed.raised.store(true, ordering: .releasing)
        }
        var states = 0
        while !inputClosed.raised.load(ordering: .acquiring) {
            if try db.refresh().hasChanges {
                states += 1
                _ = try checkNumbers(try db.snapshot())
                _ = try checkWriters(try db.snapshot())
            }
        }
        try db.refresh()
        let entries = try checkWriters(try db.snapshot())
        let numbers = try checkNumbers(try db.snapshot())
        say("followed \(states) states, sequence \(try db.snapshot().sequence), numbers \(numbers), writers \(entries) entries")
    case "lock":
        do {
            let db = try Database(path: path)
            say("opened")
            try db.close()
        } catch StrataError.locked {
            say("locked")
        }
    default:
        exit(2)
    }
} catch {
    FileHandle.standardError.write(Data("StrataCrashChild: \(error)\n".utf8))
    exit(1)
}
