import Foundation
import Testing
@testable import StrataEngine

/// The log's preallocated space (FORMAT.md, "Preallocated space"): zeros written ahead of
/// the log so commits overwrite written blocks; trimmed on close; a crash that leaves them
/// is no torn write; and zeros that do not run to the end are still damage.
@Suite("Preallocated log space")
struct PreallocationTests {
    static func fileSize(_ path: String) throws -> UInt64 {
        (try FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.uint64Value ?? 0
    }

    /// Runs `body` with a new file's path and a handle on it (without a checkpoint on close,
    /// so the log stays as written), then removes the file.
    static func withDatabase(_ body: (_ path: String, _ db: Database) throws -> Void) throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        var options = Database.Options()
        options.checkpointOnClose = false
        let path = directory.file()
        try body(path, try Database(path: path, options: options))
    }

    @Test("a commit past the preallocated space writes zeros ahead; the commits after it do not grow the file")
    func commitsFillPreallocatedSpace() throws {
        try Self.withDatabase { path, db in
            try NumberedWorkload.commit(1, to: db)
            let preallocated = try Self.fileSize(path)
            #expect(preallocated >= db.writerCounters().end + Database.preallocation)
            for n in 2 ... 20 { try NumberedWorkload.commit(n, to: db) }
            #expect(try Self.fileSize(path) == preallocated)
            #expect(try db.preallocatedBytes() == preallocated - db.writerCounters().end)
            try db.close()
        }
    }

    @Test("a compacted file comes with zeros ahead of its log: the commits after the swap do not grow it")
    func compactionPreallocates() throws {
        try Self.withDatabase { path, db in
            for n in 1 ... 20 { try NumberedWorkload.commit(n, to: db) }
            try db.compact()
            let compacted = try Self.fileSize(path)
            #expect(compacted >= db.writerCounters().end + Database.preallocation - CarryOverRounds.sliceBytes)
            for n in 21 ... 40 { try NumberedWorkload.commit(n, to: db) }
            #expect(try Self.fileSize(path) == compacted)
            try db.close()
            let reopened = try Database(path: path)
            #expect(try NumberedWorkload.content(of: reopened) == NumberedWorkload.states(through: 40)[40])
            try reopened.close()
        }
    }

    @Test("closing trims the zeros: a closed file ends at its last frame")
    func closeTrims() throws {
        try Self.withDatabase { path, db in
            for n in 1 ... 5 { try NumberedWorkload.commit(n, to: db) }
            let end = db.writerCounters().end
            try db.close()
            #expect(try Self.fileSize(path) == end)
            #expect(try Inspector(path: path).info().preallocatedBytes == 0)
        }
    }

    @Test("a file a crash left with its zeros opens clean: every commit there, nothing torn, verify clean")
    func crashLeavesCleanZeros() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file()
        let db = try Database(path: path)
        for n in 1 ... 8 { try NumberedWorkload.commit(n, to: db) }
        // The file as a crash (kill -9) leaves it: the handle never closed.
        let crashed = directory.file("crashed.strata")
        try FileManager.default.copyItem(atPath: path, toPath: crashed)
        try db.close()
        let inspector = try Inspector(path: crashed)
        let info = try inspector.info()
        #expect(info.tornTailBytes == 0 && info.preallocatedBytes > 0)
        #expect(try inspector.verify().isEmpty)
        #expect(try inspector.database.analyzeSpace().preallocatedBytes == info.preallocatedBytes)
        let reopened = try Database(path: crashed)
        #expect(try reopened.statistics().tornBytesDroppedAtOpen == 0)
        #expect(try NumberedWorkload.content(of: reopened) == NumberedWorkload.states(through: 8)[8])
        try NumberedWorkload.commit(9, to: reopened)   // into the zeros it found
        try reopened.close()
        let again = try Database(path: crashed)
        #expect(try NumberedWorkload.content(of: again) == NumberedWorkload.states(through: 9)[9])
        try again.close()
    }

    @Test("zeros over a frame are damage when valid commits follow them")
    func zeroedFrameBeforeCommitsIsDamage() throws {
        try Self.withDatabase { path, db in
            try NumberedWorkload.commit(1, to: db)
            let second = db.writerCounters().end
            for n in 2 ... 4 { try NumberedWorkload.commit(n, to: db) }
            try db.close()
            let handle = try FileHandle(forUpdating: URL(fileURLWithPath: path))
            try handle.seek(toOffset: second)
            try handle.write(contentsOf: [UInt8](repeating: 0, count: 40))
            try handle.close()
            #expect {
                try Database(path: path)
            } throws: { error in
                guard case StrataError.corruption(_, let offset, _) = error else { return false }
                return offset == second
            }
        }
    }

    @Test("a reader follows commits written into the preallocated space")
    func readerFollowsCommitsInsideZeros() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file()
        let writer = try Database(path: path)
        try NumberedWorkload.commit(1, to: writer)
        let reader = try Database(path: path, options: Database.Options(readOnly: true))
        #expect(try reader.refresh().hasChanges == false)
        try NumberedWorkload.commit(2, to: writer)
        try NumberedWorkload.commit(3, to: writer)
        #expect(try reader.refresh().sequence == 3)
        #expect(try NumberedWorkload.content(of: reader) == NumberedWorkload.states(through: 3)[3])
        try writer.close()
        try reader.close()
    }
}
