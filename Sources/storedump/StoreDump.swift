import ArgumentParser
import Foundation
import Synchronization
import Strata
import StrataEngine
import StrataStudio

/// `storedump`: look inside a Strata file, verify it, and see where the space goes.
/// Read-only except `compact`; safe while another process writes (it reads the state as of
/// opening).
@main
struct StoreDump: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "storedump",
        abstract: "Inspect, verify and compact Strata database files.",
        discussion: "Every subcommand is read-only except compact. Add --json for machine-readable output.",
        subcommands: [Info.self, Collections.self, Frames.self, Tree.self, Dump.self, Get.self, Find.self, Verify.self, Stats.self, Compact.self, Export.self, Import.self, Serve.self])

    /// Parses and runs as ArgumentParser does, except that a command-line mistake prints one
    /// line naming it (not the whole help) and exits 2, like every other error storedump
    /// reports. `--help` and the subcommands' own exit codes are unchanged.
    static func main() {
        do {
            var command = try parseAsRoot()
            try command.run()
        } catch {
            if error is ExitCode || exitCode(for: error) == .success { exit(withError: error) }
            var message = String(fullMessage(for: error).split(separator: "\n").first ?? "invalid command line")
            if message.hasPrefix("Error: ") { message.removeFirst("Error: ".count) }
            Output.error("\(message) (run 'storedump --help' for usage)")
            Foundation.exit(2)
        }
    }
}

struct FileOptions: ParsableArguments {
    @Argument(help: "The database file.")
    var file: String

    @Flag(help: "Print JSON instead of tables.")
    var json = false

    func inspector() throws -> Inspector {
        // Only a missing file is "no such file"; any other reason it cannot be opened
        // (permissions, a path through a plain file) comes from the open, naming the file.
        if access(file, F_OK) != 0, errno == ENOENT { throw StoreDumpError("no such file: \(file)") }
        return try Inspector(path: file)
    }
}

/// Runs a subcommand body, turning any error into one line on stderr and exit status 2.
func reporting(_ body: () throws -> Void) throws {
    do {
        try body()
    } catch let exit as ExitCode {
        throw exit
    } catch {
        Output.error("\(error)")
        throw ExitCode(2)
    }
}

struct StoreDumpError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

struct Info: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Header, slots, latest checkpoint and commit, trees, torn tail.")
    @OptionGroup var options: FileOptions

    func run() throws {
        try reporting {
            let info = try options.inspector().info()
            if options.json { return try Output.json(info) }
            print("file           \(info.path) (\(Output.bytes(info.fileSize)))")
            print("format         \(info.magic), read version \(info.readVersion), write version \(info.writeVersion), page size \(info.pageSize)")
            print("salt           \(info.salt)")
            print("created        \(Output.date(info.created))")
            for slot in info.slots {
                print("slot @\(slot.offset)".padding(toLength: 15, withPad: " ", startingAt: 0)
                    + (slot.valid ? "generation \(slot.generation ?? 0), checkpoint \(slot.checkpointOffset.map { "@\($0)" } ?? "none"), sequence \(slot.sequence ?? 0)" : "empty or invalid"))
            }
            print("checkpoint     " + (info.checkpoint.map { "commit \($0.sequence) @\($0.offset), \(Output.date($0.time))" } ?? "none"))
            print("last commit    " + (info.lastCommit.map { "commit \($0.sequence) @\($0.offset), \(Output.date($0.time))" } ?? "none"))
            print("log tail       \(Output.bytes(info.logBytesSinceCheckpoint)) since the checkpoint (replayed at open)")
            print("tail           " + (info.tornTailBytes == 0 ? "clean" : "\(info.tornTailBytes) torn bytes (an interrupted write; the next writable open drops them)")
                + (info.preallocatedBytes == 0 ? "" : ", then \(Output.bytes(info.preallocatedBytes)) preallocated for the log (trimmed on close)"))
            print("")
            Output.table(["tree", "entries"], info.trees.map { [$0.name, "\($0.entries)"] })
        }
    }
}

struct Collections: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Collections: records, fields, primary key and indexes.")
    @OptionGroup var options: FileOptions

    func run() throws {
        try reporting {
            let collections = try CollectionInspector(snapshot: options.inspector().database.snapshot()).collections()
            if options.json { return try Output.json(collections) }
            for c in collections {
                print("\(c.name): \(c.records) records (\(c.modelType))")
                print("  primary key  \(zip(c.primaryKey, c.primaryKeyTypes + Array(repeating: "?", count: c.primaryKey.count)).map { "\($0) \($1)" }.joined(separator: ", "))")
                print("  fields       \(c.fields.map { "\($0) \(c.storedTypes?[$0] ?? c.fieldTypes[$0] ?? "?")" }.joined(separator: ", "))")
                for index in c.indexes {
                    print("  index        \(index.name) (\(index.fields.joined(separator: ", ")))\(index.unique ? " unique" : ""), \(index.entries) entries")
                }
                if let next = c.nextID { print("  next id      \(next)") }
                for (model, fields) in (c.readers ?? [:]).sorted(by: { $0.key < $1.key }) {
                    print("  read by      \(model): \(fields.joined(separator: ", "))")
                }
                if !c.unreadFields.isEmpty {
                    print("  unread       \(c.unreadFields.joined(separator: ", ")): stored, but no model that declares its fields reads them "
                        + "(renamed without @Field(originalName:), or dropped)")
                }
            }
        }
    }
}

struct Frames: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Every frame: offset, type, lengths, compression, checksum.")
    @OptionGroup var options: FileOptions
    @Option(help: "Only frames of this type: log, page, value, checkpoint.") var type: String?
    @Option(help: "Start at this offset (a frame boundary).") var from: UInt64?
    @Option(help: "At most this many frames.") var limit: Int?

    func run() throws {
        try reporting {
            if let type, !FrameType.allCases.map(\.description).contains(type) {
                throw StoreDumpError("unknown frame type '\(type)'; use log, page, value or checkpoint")
            }
            var frames: [Inspector.FrameInfo] = []
            try options.inspector().walkFrames(from: from) { frame in
                if type == nil || frame.type == type { frames.append(frame) }
                return limit.map { frames.count < $0 } ?? true
            }
            if options.json { return try Output.json(frames) }
            Output.table(["offset", "type", "stored", "raw", "ratio", "unsynced before", "checksum", "content"], frames.map { f in
                [String(f.offset), f.type, String(f.storedLength), String(f.rawLength),
                 f.rawLength == 0 ? "-" : String(format: "%.2f", Double(f.storedLength) / Double(f.rawLength)),
                 String(f.pendingBefore), f.checksumOK ? "ok" : "BAD", f.error ?? f.detail ?? ""]
            })
        }
    }
}

struct Tree: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "A B-tree's shape (depth, pages per level, fan-out, fill, key ranges), or one page.")
    @OptionGroup var options: FileOptions
    @Argument(help: "A tree name, or a collection name (its records tree).") var name: String?
    @Option(help: "Show the page at this offset instead.") var page: UInt64?
    @Flag(help: "With --page, include the frame's raw bytes.") var hex = false

    func run() throws {
        try reporting {
            let inspector = try options.inspector()
            if let page {
                let info = try inspector.page(at: page, hex: hex)
                if options.json { return try Output.json(info) }
                print("\(info.kind) page @\(info.offset): \(info.storedBytes) bytes stored, \(info.rawBytes) raw")
                if info.kind == "leaf" {
                    Output.table(["key", "value bytes", "out of line"], info.entries.map { [$0.key, String($0.valueLength), $0.valueOffset.map { "@\($0)" } ?? ""] })
                } else {
                    Output.table(["child", "length", "keys from"], info.children.map { ["@\($0.offset)", String($0.length), $0.lowerKey ?? "(start)"] })
                }
                if let hex = info.hex { print(hex) }
                return
            }
            guard let name else { throw StoreDumpError("name a tree (see `storedump info`) or pass --page OFFSET") }
            let trees = try inspector.database.snapshot().treeNames
            let tree = trees.contains(name) ? name : trees.contains("c:" + name) ? "c:" + name : name
            let shape = try inspector.shape(of: tree)
            if options.json { return try Output.json(shape) }
            print("tree \(shape.tree): \(shape.entries) entries, depth \(shape.depth)")
            Output.table(["level", "pages", "fan-out", "fill"], shape.levels.map {
                [String($0.depth), String($0.pages), String(format: "%.1f", $0.averageFanOut), String(format: "%.0f%%", $0.fill * 100)]
            })
            print("")
            Output.table(["page", "level", "kind", "entries", "bytes", "first key", "last key"], shape.pages.prefix(200).map {
                [$0.offset.map { "@\($0)" } ?? "(memory)", String($0.depth), $0.kind, String($0.entries), String($0.bytes), $0.firstKey ?? "", $0.lastKey ?? ""]
            })
            if shape.pages.count > 200 { print("… \(shape.pages.count - 200) more pages (use --json for all)") }
        }
    }
}

struct Dump: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Every record of a collection as JSON lines, in primary-key order.")
    @OptionGroup var options: FileOptions
    @Argument(help: "The collection.") var collection: String
    @Option(help: "At most this many records.") var limit: Int?
    @Option(help: "Start at this primary key (text, comma-separated for composite keys).") var from: String?

    func run() throws {
        try reporting {
            let collections = try CollectionInspector(snapshot: options.inspector().database.snapshot())
            let start = try from.map { try collections.parseKey($0, types: try collections.collection(collection).primaryKeyTypes) }
            try collections.records(in: collection, from: start, limit: limit) { record in
                print(record.value.json)
                return true
            }
        }
    }
}

struct Get: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "One record by primary key, as JSON.")
    @OptionGroup var options: FileOptions
    @Argument(help: "The collection.") var collection: String
    @Argument(help: "The primary key, as text (comma-separated for composite keys).") var key: String

    func run() throws {
        try reporting {
            let collections = try CollectionInspector(snapshot: options.inspector().database.snapshot())
            guard let record = try collections.record(in: collection, keyText: key) else {
                throw StoreDumpError("collection '\(collection)' has no record with primary key \(key)")
            }
            print(record.value.json)
        }
    }
}

struct Find: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Records matching a predicate, as JSON lines; indexes are used as by the library.",
        discussion: """
        Predicate grammar (keywords in any case):
          field = | != | < | <= | > | >= value      age >= 30, name = 'Ada'
          field [NOT] IN (value, ...)               city IN ('Oslo', 'Lima')
          field BETWEEN value AND value             year BETWEEN 1960 AND 1970
          field BEGINSWITH 'text'                   title BEGINSWITH 'The'
          field CONTAINS 'text'                     summary CONTAINS 'robot'
          field [NOT] LIKE 'pattern'                email LIKE '*@example.?om'  (* any run, ? one; case-sensitive)
          field [NOT] ILIKE 'pattern'               name ILIKE 'ada*'            (the same, ignoring case)
          NOT p, p AND p, p OR p, ( p )
        Values: numbers, 'strings' or "strings", true, false, null. Fields: property paths (address.city).
        """)
    @OptionGroup var options: FileOptions
    @Argument(help: "The collection.") var collection: String
    @Argument(help: "The predicate (quote it for the shell).") var predicate: String
    @Flag(help: "Print the plan instead of the records.") var explain = false
    @Option(help: "At most this many records.") var limit: Int?
    @Option(help: "Skip this many records first.") var offset: Int = 0
    @Option(parsing: .unconditional, help: "Sort by fields: name,-age sorts by name, then age descending.") var sort: String?

    func run() throws {
        try reporting {
            let parsed: TextPredicate
            do {
                parsed = try TextPredicate.parse(predicate)
            } catch let error as TextQueryError {
                throw StoreDumpError("predicate does not parse at column \(error.column): \(error.message)")
            }
            let sortKeys = (sort ?? "").split(separator: ",").map { part in
                part.hasPrefix("-") ? (field: String(part.dropFirst()), ascending: false) : (field: String(part), ascending: true)
            }
            let collections = try CollectionInspector(snapshot: options.inspector().database.snapshot())
            let (plan, records) = try collections.find(in: collection, where: parsed, sortedBy: sortKeys, limit: limit, offset: offset)
            if explain {
                if options.json { return try Output.json(plan) }
                return print(plan)
            }
            for record in records { print(record.value.json) }
        }
    }
}

struct Verify: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check checksums, pages, B-tree invariants, out-of-line values, the commit chain and indexes.",
        discussion: "Exit status 0 when clean, 1 when a fault is found, 2 when the file cannot be read.")
    @OptionGroup var options: FileOptions
    @Flag(help: "Only frame checksums and the commit chain.") var quick = false

    func run() throws {
        var clean = true
        try reporting {
            if access(options.file, F_OK) != 0, errno == ENOENT { throw StoreDumpError("no such file: \(options.file)") }
            let report = try VerificationReport.verify(path: options.file, quick: quick) { Output.progress("verifying", $0, $1) }
            clean = report.clean
            if options.json { return try Output.json(report) }
            for fault in report.faults { print(fault) }
            let errors = report.faults.filter { $0.severity == .error }.count
            if !report.opens {
                print("\(errors) fault (the file does not open; see `storedump frames` for the rest)")
            } else {
                print(clean ? "clean" + (report.faults.isEmpty ? "" : " (\(report.faults.count) warnings)") : "\(errors) faults")
            }
        }
        if !clean { throw ExitCode(1) }
    }
}

struct Stats: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Where the space goes: per tree, live and dead bytes, compression, fill, what compact would reclaim.")
    @OptionGroup var options: FileOptions

    func run() throws {
        try reporting {
            let space = try options.inspector().database.analyzeSpace { Output.progress("analysing", $0, $1) }
            if options.json { return try Output.json(space) }
            Output.table(["tree", "entries", "depth", "pages", "stored", "raw", "ratio", "fill", "dead", "out of line"], space.trees.map { t in
                [t.name, String(t.entryCount), String(t.depth), String(t.leafPages + t.branchPages), Output.bytes(t.storedBytes), Output.bytes(t.rawBytes),
                 t.rawBytes == 0 ? "-" : String(format: "%.2f", Double(t.storedBytes) / Double(t.rawBytes)), String(format: "%.0f%%", t.fillFactor * 100),
                 Output.bytes(t.deadBytes), t.overflowValues == 0 ? "" : "\(t.overflowValues) (\(Output.bytes(t.overflowStoredBytes)))"]
            })
            print("")
            print("file      \(Output.bytes(space.fileSize))")
            print("live      \(Output.bytes(space.liveBytes)) (header, latest checkpoint and what it references, log tail)")
            if space.preallocatedBytes > 0 { print("free      \(Output.bytes(space.preallocatedBytes)) preallocated for the log (trimmed on close)") }
            print("dead      \(Output.bytes(space.deadBytes)) (superseded pages and checkpointed log: `storedump compact` reclaims about this much;")
            print("          \(Output.bytes(space.unattributedDeadBytes)) of it belongs to no current tree: old checkpoints, dropped trees)")
        }
    }
}

struct Compact: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Rewrite the live data compactly: into a new file, or in place (crash-safe).")
    @OptionGroup var options: FileOptions
    @Option(help: "Write the compacted copy here; the original is left as it is.") var output: String?
    @Flag(help: "Replace the file itself (needs the write lock).") var inPlace = false

    struct Result: Encodable {
        var bytesBefore: UInt64
        var bytesAfter: UInt64
        var output: String
    }

    func run() throws {
        try reporting {
            guard (output != nil) != inPlace else { throw StoreDumpError("pass exactly one of --output PATH or --in-place") }
            guard FileManager.default.fileExists(atPath: options.file) else { throw StoreDumpError("no such file: \(options.file)") }
            let target: String
            if let output {
                guard !FileManager.default.fileExists(atPath: output) else { throw StoreDumpError("\(output) already exists; choose a new path") }
                // Copy, then compact the copy in place: the original is only read.
                try FileManager.default.copyItem(atPath: options.file, toPath: output)
                target = output
            } else {
                target = options.file
            }
            let db = try Database(path: target)
            let result = try db.compact { Output.progress("compacting", $0, $1) }
            try db.close()
            if options.json { return try Output.json(Result(bytesBefore: result.bytesBefore, bytesAfter: result.bytesAfter, output: target)) }
            print("compacted \(target): \(Output.bytes(result.bytesBefore)) -> \(Output.bytes(result.bytesAfter))")
        }
    }
}

struct Export: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Write collections as JSON lines: each collection's catalog entry, then its records.")
    @Argument(help: "The database file.") var file: String
    @Option(help: "Only these collections (comma-separated).") var collections: String?
    @Option(help: "Write here instead of standard output.") var output: String?

    func run() throws {
        try reporting {
            guard FileManager.default.fileExists(atPath: file) else { throw StoreDumpError("no such file: \(file)") }
            var options = StrataStorage.Options()
            options.readOnly = true
            let storage = try StrataStorage(path: file, options: options)
            defer { try? storage.close() }
            let names = collections.map { $0.split(separator: ",").map(String.init) }
            if let output {
                guard FileManager.default.createFile(atPath: output, contents: nil), let handle = FileHandle(forWritingAtPath: output) else {
                    throw StoreDumpError("cannot create \(output)")
                }
                defer { try? handle.close() }
                let count = try storage.exportJSONLines(collections: names) { try handle.write(contentsOf: Data(($0 + "\n").utf8)) }
                print("exported \(count) records to \(output)")
            } else {
                try storage.exportJSONLines(collections: names) { print($0) }
            }
        }
    }
}

struct Import: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Read JSON lines written by export into a file (created when missing), in one transaction.")
    @Argument(help: "The database file.") var file: String
    @Option(help: "The JSON lines to read; - for standard input.") var from: String

    func run() throws {
        try reporting {
            let text: String
            if from == "-" {
                text = String(decoding: FileHandle.standardInput.readDataToEndOfFile(), as: UTF8.self)
            } else {
                guard let data = FileManager.default.contents(atPath: from) else { throw StoreDumpError("no such file: \(from)") }
                text = String(decoding: data, as: UTF8.self)
            }
            let storage = try StrataStorage(path: file)
            defer { try? storage.close() }
            let report = try storage.importJSONLines(text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init))
            for (collection, count) in report.records.sorted(by: { $0.key < $1.key }) {
                print("\(collection): \(count) records imported")
            }
            for (collection, indexes) in report.indexesLeftToTheModel.sorted(by: { $0.key < $1.key }) {
                print("\(collection): indexes on computed values left for the model to build: \(indexes.joined(separator: ", "))")
            }
        }
    }
}

struct Serve: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Strata Studio: browse the file in a web browser (read-only; follows other processes' commits).",
        discussion: """
        Serves the page on 127.0.0.1 (this machine only) and prints its URL; Ctrl-C stops it.
        The file is opened read-only, without the writer's lock: an app keeps writing while
        you look, and each commit it makes appears on the open page.
        """)
    @Argument(help: "The database file.") var file: String
    @Option(help: "The port to listen on; 0 picks a free one.") var port: Int = 8080
    @Option(help: "The address to listen on. Anything but a loopback address exposes the file to the network.") var host: String = "127.0.0.1"

    func run() throws {
        try reporting {
            if access(file, F_OK) != 0, errno == ENOENT { throw StoreDumpError("no such file: \(file)") }
            guard (0...65535).contains(port) else { throw StoreDumpError("--port must be from 0 to 65535") }
            let studio = Studio(path: file)
            let (file, host, port) = (file, host, port)
            let outcome = ServeOutcome()
            let done = DispatchSemaphore(value: 0)
            Task {
                do {
                    try await StudioServer.run(studio, host: host, port: port) { url in
                        // Flushed at once: scripts and tests read the URL from a pipe.
                        FileHandle.standardOutput.write(Data("Strata Studio for \(file) at \(url) (read-only; Ctrl-C stops)\n".utf8))
                    }
                } catch {
                    outcome.failure.withLock { $0 = "cannot serve on \(host):\(port): \(error)" }
                }
                done.signal()
            }
            done.wait()
            if let failure = outcome.failure.withLock({ $0 }) { throw StoreDumpError(failure) }
        }
    }
}

/// How the server task ended, read by the thread that waited for it.
final class ServeOutcome: Sendable {
    let failure = Mutex<String?>(nil)
}
