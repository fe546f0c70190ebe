// open.after-crash: how long an engine takes to open a file whose writer was killed mid-load,
// and proof that what it acknowledged survived and what it did not is all or nothing.
import BenchmarkSupport
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The process loading W1 until it is killed (this program, run with `--crash-load`).
enum CrashLoad {
    /// Records per transaction, as in W1's insert.batch.
    static let transactionSize = 1_000

    /// The child: loads W1's `records` users into `engine` at `directory` in durable
    /// transactions of `transactionSize`, printing "committed K" (records acknowledged) after
    /// each commit, until the parent kills it.
    static func load(_ target: String, records: Int) throws {
        guard let colon = target.firstIndex(of: ":"), let kind = EngineKind(rawValue: String(target[..<colon])) else {
            throw BenchError("--crash-load takes ENGINE:DIRECTORY, got '\(target)'")
        }
        let users = W1Data(records: records, lookups: 0, updates: 0, durableCommits: 0).usersInInsertOrder
        let engine = try kind.makeW1(directory: String(target[target.index(after: colon)...]))
        let quiet = Progress(enabled: false)
        for start in stride(from: 0, to: users.count, by: transactionSize) {
            let end = min(start + transactionSize, users.count)
            try engine.insert(Array(users[start ..< end]), transactionSize: transactionSize, progress: quiet)
            // Unbuffered: the parent acts on each line as it comes.
            FileHandle.standardOutput.write(Data("committed \(end)\n".utf8))
        }
        try engine.close()
    }
}

extension Runner {
    /// Starts a loader of W1 in another process, kills it (SIGKILL) once half of `inserted` is
    /// acknowledged, then times opening the engine here. Verifies that every acknowledged
    /// record is there and that the file holds exactly a prefix of whole transactions (the
    /// records of the first K commits, nothing of a later one).
    func measureOpenAfterCrash(_ label: String, _ kind: EngineKind, inserted: [User]) throws {
        guard wants("open.after-crash") else { return }
        let name = kind.rawValue
        let directory = try engineDirectory(label, name, "-crash")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        progress.begin("\(label) \(name) open.after-crash (loading in another process, killed halfway)")
        let acknowledged = try loadAndKill(kind, directory: directory, records: inserted.count, killAfter: inserted.count / 2)
        var engine: W1Engine?
        let seconds = try time { engine = try kind.makeW1(directory: directory) }
        let found = try engine!.scanAll()
        try engine!.close()
        let size = CrashLoad.transactionSize
        var prefix = Checksum()
        for user in inserted.prefix(found.count) { prefix.add(user) }
        guard found.count >= acknowledged, found.count % size == 0 || found.count == inserted.count, found == prefix else {
            throw BenchError("\(label) \(name) after a crash holds \(found), expected the first \(acknowledged) or more records in whole transactions of \(size)")
        }
        record(label, "open.after-crash", name, seconds * 1000, "ms")
        progress.end(String(format: "%.1f ms; %d acknowledged, %d found, verified", seconds * 1000, acknowledged, found.count))
    }

    /// Runs the loader until it has acknowledged `killAfter` records, kills it, and returns
    /// how many it acknowledged.
    private func loadAndKill(_ kind: EngineKind, directory: String, records: Int, killAfter: Int) throws -> Int {
        let child = Process()
        child.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        var arguments = ["--crash-load", "\(kind.rawValue):\(directory)", "--crash-records", String(records)]
        if let bytes = StrataKV.checkpointLogBytes { arguments += ["--checkpoint-log-bytes", String(bytes)] }
        if let bytes = StrataKV.checkpointLogBytesLimit { arguments += ["--checkpoint-log-bytes-limit", String(bytes)] }
        if let buffer = StrataKV.writeBuffer { arguments += ["--write-buffer", buffer.argument] }
        if let background = StrataKV.mergesWriteBufferInBackground {
            arguments += ["--write-buffer-merges", background ? "background" : "writer"]
        }
        child.arguments = arguments
        let output = Pipe()
        child.standardOutput = output
        try child.run()
        let reader = output.fileHandleForReading
        var text = "", acknowledged = 0
        while acknowledged < killAfter {
            let data = reader.availableData
            if data.isEmpty {
                child.waitUntilExit()
                throw BenchError("the \(kind.rawValue) loader ended (status \(child.terminationStatus)) after \(acknowledged) records, before it was killed")
            }
            text += String(decoding: data, as: UTF8.self)
            if let last = text.split(separator: "\n").last(where: { $0.hasPrefix("committed ") }), let count = Int(last.dropFirst(10)) {
                acknowledged = count
            }
        }
        kill(child.processIdentifier, SIGKILL)
        child.waitUntilExit()
        // Lines printed between the last read and the kill were acknowledged too.
        text += String(decoding: reader.readDataToEndOfFile(), as: UTF8.self)
        if let last = text.split(separator: "\n").last(where: { $0.hasPrefix("committed ") }), let count = Int(last.dropFirst(10)) {
            acknowledged = max(acknowledged, count)
        }
        return acknowledged
    }
}
