import Foundation
import Testing
@testable import StrataEngine

/// Real processes: a child commits numbered transactions and is killed with SIGKILL at
/// random moments; a second process must not get the write lock.
@Suite("Process crashes and locking", .serialized)
struct ProcessCrashTests {
    /// The helper executable, built beside the test bundle.
    static var childPath: String {
        let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        return executable.deletingLastPathComponent().appendingPathComponent("StrataCrashChild").path
    }

    /// Starts a `follow` child on `path`: it refreshes until its input is closed, then prints
    /// what it saw (`finish`).
    static func startFollower(_ path: String) throws -> (process: Process, input: Pipe, output: Pipe, errors: Pipe) {
        let follower = Process()
        follower.executableURL = URL(fileURLWithPath: childPath)
        follower.arguments = ["follow", path]
        let input = Pipe(), output = Pipe(), errors = Pipe()
        (follower.standardInput, follower.standardOutput, follower.standardError) = (input, output, errors)
        try follower.run()
        return (follower, input, output, errors)
    }

    /// Tells a follower to stop, and returns its last line (or, when it failed, what it
    /// wrote to standard error) and exit status.
    static func finish(_ follower: (process: Process, input: Pipe, output: Pipe, errors: Pipe)) throws -> (output: String, status: Int32) {
        try follower.input.fileHandleForWriting.close()
        let output = String(decoding: follower.output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let errors = String(decoding: follower.errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        follower.process.waitUntilExit()
        let status = follower.process.terminationStatus
        return ((status == 0 ? output : output + errors).trimmingCharacters(in: .whitespacesAndNewlines), status)
    }

    /// Starts the child with `arguments`, its stdout on the returned pipe.
    static func start(_ arguments: [String]) throws -> (Process, Pipe) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: childPath)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        return (process, pipe)
    }

    /// Runs the child to completion and returns its stdout.
    static func run(_ arguments: [String]) throws -> (output: String, status: Int32) {
        let (process, pipe) = try start(arguments)
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (String(decoding: data, as: UTF8.self), process.terminationStatus)
    }

    /// How the committing child checkpoints: as the default policy chooses, every
    /// automatic checkpoint in the background (`Database.BackgroundCheckpoints.always`), or
    /// at an interval that grows with the store from 16 KiB of log to 1 MiB
    /// (`checkpointLogBytesLimit`), so that the log a crash leaves to replay grows too.
    static let checkpointModes = ["default", "background", "growing"]

    @Test("every acknowledged commit survives kill -9, and no partial commit is ever visible", arguments: checkpointModes)
    func killDuringCommits(checkpoints: String) throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file()
        var rng = SeededGenerator(seed: 31)
        var acknowledgedTotal = 0
        var previous = 0
        var lastInterval = ""
        for cycle in 0 ..< TestScale.crashCycles {
            let (process, pipe) = try Self.start(["commit", path, checkpoints])
            usleep(UInt32.random(in: 20_000 ... 150_000, using: &rng))
            kill(process.processIdentifier, SIGKILL)
            let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            #expect(process.terminationReason == .uncaughtSignal, "cycle \(cycle): the child should die by SIGKILL")
            let acknowledged = output.split(separator: "\n").compactMap { $0.hasPrefix("ok ") ? Int($0.dropFirst(3)) : nil }.last ?? previous

            let verify = try Self.run(["verify", path, checkpoints])
            #expect(verify.status == 0, "cycle \(cycle): \(verify.output)")
            let lines = verify.output.split(separator: "\n")
            let present = lines.last { $0.hasPrefix("verified ") }.flatMap { Int($0.dropFirst("verified ".count)) } ?? -1
            if checkpoints == "growing", cycle == TestScale.crashCycles - 1 {
                // The store outgrew the interval's minimum: the kills landed between
                // checkpoints more than 16 KiB of log apart.
                let due = lines.last { $0.hasPrefix("checkpoint due at ") }.flatMap { Int($0.split(separator: " ")[3]) } ?? 0
                #expect(due > 16 << 10, "\(verify.output)")
                lastInterval = ", the interval at the end \(due) bytes of log"
            }
            // Every acknowledged commit is there; at most the one in flight besides.
            #expect(present >= acknowledged && present <= acknowledged + 1, "cycle \(cycle): acknowledged \(acknowledged), present \(present)")
            acknowledgedTotal += acknowledged - previous
            previous = present
        }
        reportFigure("kill -9 (\(checkpoints) checkpoints): \(TestScale.crashCycles) cycles, \(acknowledgedTotal) acknowledged commits, every one present after reopen\(lastInterval)")
        #expect(acknowledgedTotal > TestScale.crashCycles, "the children should commit between kills")
    }

    @Test("a reader in another process that refreshes while a process commits sees only whole commits, through checkpoints",
          arguments: checkpointModes)
    func readerFollowingACommittingProcess(checkpoints: String) throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file()
        try Database(path: path).write { tx in try tx.createTree("numbers") }
        let follower = try Self.startFollower(path)
        let (committer, committerOutput) = try Self.start(["commit", path, checkpoints])
        // Let the committer acknowledge enough commits to checkpoint several times (it
        // checkpoints every 48 KiB of log), then kill it mid-commit.
        let target = TestScale.value("STRATA_FOLLOW_COMMITS", ci: 1500, stress: 20000)
        var acknowledged = 0, pending = ""
        while acknowledged < target {
            let data = committerOutput.fileHandleForReading.availableData
            if data.isEmpty { break }
            pending += String(decoding: data, as: UTF8.self)
            let lines = pending.split(separator: "\n", omittingEmptySubsequences: false)
            pending = String(lines.last ?? "")
            if let last = lines.dropLast().last(where: { $0.hasPrefix("ok ") }), let n = Int(last.dropFirst(3)) { acknowledged = n }
        }
        kill(committer.processIdentifier, SIGKILL)
        committer.waitUntilExit()
        let (followed, status) = try Self.finish(follower)
        #expect(acknowledged >= target, "the committer should acknowledge \(target) commits")
        #expect(status == 0, "the following reader saw a wrong state: \(followed)")
        let states = Int(followed.split(separator: " ").dropFirst().first ?? "") ?? 0
        #expect(states > 1, "the reader should see the file move: \(followed)")
        let numbers = Int(followed.components(separatedBy: "numbers ").last?.prefix { $0.isNumber } ?? "") ?? 0
        #expect(numbers >= acknowledged, "the last refresh shows every acknowledged commit: \(followed)")
        reportFigure("following reader (\(checkpoints) checkpoints): \(acknowledged) commits by another process, \(followed), each state checked whole")
    }

    @Test("a second process cannot open the file for writing while one holds it")
    func secondWriterProcessIsLocked() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file()
        let db = try Database(path: path)
        #expect(try Self.run(["lock", path]).output == "locked\n")
        try db.close()
        #expect(try Self.run(["lock", path]).output == "opened\n")
    }

    @Test("a second handle in the same process gets a clear 'locked' error; read-only handles do not")
    func secondWriterHandleIsLocked() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file()
        let db = try Database(path: path)
        try db.write { try $0.createTree("t") }
        #expect(throws: StrataError.locked(path: path)) { try Database(path: path) }
        let reader = try Database(path: path, options: Database.Options(readOnly: true))
        #expect(try reader.snapshot().hasTree("t"))
        #expect(throws: StrataError.readOnly(path: path)) { try reader.beginWrite() }
        try db.close()
        let again = try Database(path: path)
        try again.close()
        #expect(StrataError.locked(path: path).description.contains("database is locked"))
    }
}

/// Several processes open one file for writing while another compacts it in a loop: every
/// commit a writer saw acknowledged must be in the file afterwards.
@Suite("Writers racing compaction", .serialized)
struct CompactionRaceTests {
    @Test("no acknowledged commit is lost when writers open the file while another process compacts it")
    func writersRacingCompaction() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file()
        let seconds = String(TestScale.value("STRATA_RACE_SECONDS", ci: 6, stress: 30))
        try Database(path: path).write { tx in
            try tx.createTree("writers")
            for i in 0 ..< 2000 { try tx.put([UInt8](repeating: UInt8(i % 251), count: 100), forKey: Key(-1, i).bytes, in: "writers") }
        }
        // A reader in a fourth process refreshes throughout, checking each state it sees.
        let follower = try ProcessCrashTests.startFollower(path)
        let compactor = try ProcessCrashTests.start(["compactor", path, seconds])
        let writers = try (1 ... 3).map { try ProcessCrashTests.start(["writer", path, seconds, String($0)]) }
        var acknowledged: [(Int, Int)] = []
        for (process, pipe) in writers {
            let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            #expect(process.terminationStatus == 0, "writer failed: \(output)")
            for line in output.split(separator: "\n") where line.hasPrefix("ok ") {
                let parts = line.split(separator: " ")
                acknowledged.append((Int(parts[1])!, Int(parts[2])!))
            }
        }
        let compactorOutput = String(decoding: compactor.1.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        compactor.0.waitUntilExit()
        #expect(compactor.0.terminationStatus == 0, "compactor failed: \(compactorOutput)")
        #expect(compactorOutput.hasPrefix("compactions "), "\(compactorOutput)")
        #expect(!acknowledged.isEmpty, "the writers should get the lock between compactions")

        let db = try Database(path: path, options: Database.Options(readOnly: true))
        let lost = try db.read { snapshot in
            try acknowledged.filter { id, n in try snapshot.get(Key(id, n).bytes, in: "writers") == nil }
        }
        #expect(lost.isEmpty, "\(lost.count) of \(acknowledged.count) acknowledged commits are missing: \(lost.prefix(10))")
        reportFigure("compaction race: 3 writer processes and 1 compacting process for \(seconds) s; \(compactorOutput.trimmingCharacters(in: .whitespacesAndNewlines)), \(acknowledged.count) acknowledged commits, \(lost.count) lost")
        #expect(try db.snapshot().count(in: "writers") == 2000 + acknowledged.count)

        let (followed, status) = try ProcessCrashTests.finish(follower)
        #expect(status == 0, "the following reader saw a wrong state: \(followed)")
        #expect(followed.contains("writers \(2000 + acknowledged.count) entries"), "the following reader ends at the last commit: \(followed)")
        reportFigure("compaction race, reader: \(followed) across the compactions")
    }
}
