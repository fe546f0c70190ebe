import Foundation
import Testing
@testable import StrataEngine

/// EIO and ENOSPC injected on write and on fsync: the error surfaces, the handle is
/// poisoned (an fsync error is never retried), and the file reopens to the last good commit.
@Suite("Injected I/O errors")
struct IOErrorTests {
    struct Case: CustomTestStringConvertible {
        var operation: SimulatedFileSystem.Operation
        var errno: Int32
        var testDescription: String { "\(operation) fails with errno \(errno)" }
    }

    static let cases = [Case(operation: .write, errno: ENOSPC), Case(operation: .write, errno: EIO), Case(operation: .sync, errno: EIO), Case(operation: .sync, errno: ENOSPC)]

    @Test("a failed commit surfaces its error, poisons the handle and leaves the last good commit", arguments: cases)
    func failedCommit(_ fault: Case) throws {
        let fs = SimulatedFileSystem()
        let db = try Database(path: "/e.strata", options: smallOptions(), fileSystem: fs)
        for n in 1 ... 5 { try NumberedWorkload.commit(n, to: db) }
        fs.nextFault = .init(operation: fault.operation, errno: fault.errno)
        #expect {
            try NumberedWorkload.commit(6, to: db)
        } throws: { error in
            guard case StrataError.io(_, _, let code) = error else { return false }
            return code == fault.errno
        }
        // Reads go on from the last good state; writes report the poisoned handle.
        #expect(try NumberedWorkload.content(of: db) == NumberedWorkload.states(through: 5)[5])
        #expect { try NumberedWorkload.commit(6, to: db) } throws: { error in
            guard case StrataError.poisoned(let cause) = error else { return false }
            return cause.contains("errno \(fault.errno)")
        }
        #expect(try db.statistics().isPoisoned)
        try db.close()
        let reopened = try Database(path: "/e.strata", options: smallOptions(), fileSystem: fs)
        #expect(try NumberedWorkload.content(of: reopened) == NumberedWorkload.states(through: 5)[5])
        try NumberedWorkload.commit(6, to: reopened)
        #expect(try NumberedWorkload.content(of: reopened) == NumberedWorkload.states(through: 6)[6])
    }

    @Test("a failed checkpoint poisons the handle but loses no commit", arguments: cases)
    func failedCheckpoint(_ fault: Case) throws {
        let fs = SimulatedFileSystem()
        let db = try Database(path: "/e.strata", options: smallOptions(), fileSystem: fs)
        for n in 1 ... 20 { try NumberedWorkload.commit(n, to: db) }
        fs.nextFault = .init(operation: fault.operation, errno: fault.errno)
        #expect(throws: StrataError.self) { try db.checkpoint() }
        #expect(throws: StrataError.self) { try NumberedWorkload.commit(21, to: db) }
        try db.close()
        let reopened = try Database(path: "/e.strata", options: smallOptions(), fileSystem: fs)
        #expect(try NumberedWorkload.content(of: reopened) == NumberedWorkload.states(through: 20)[20])
    }

    @Test("a failed compaction leaves the original file and the handle usable")
    func failedCompaction() throws {
        let fs = SimulatedFileSystem()
        let db = try Database(path: "/e.strata", options: smallOptions(), fileSystem: fs)
        for n in 1 ... 20 { try NumberedWorkload.commit(n, to: db) }
        fs.nextFault = .init(operation: .write, errno: ENOSPC)
        #expect(throws: StrataError.self) { try db.compact() }
        #expect(!fs.exists("/e.strata.compact"))
        try NumberedWorkload.commit(21, to: db)
        try db.close()
        let reopened = try Database(path: "/e.strata", options: smallOptions(), fileSystem: fs)
        #expect(try NumberedWorkload.content(of: reopened) == NumberedWorkload.states(through: 21)[21])
    }
}
