import Dispatch
import Foundation
import Synchronization
import Testing
@testable import StrataEngine

/// `Options.lockTimeout`: a writable open waits while another handle holds the write lock,
/// instead of failing at once, and still fails with `.locked` once the timeout passes.
@Suite("Waiting for the write lock")
struct LockTimeoutTests {
    static func options(timeout: Duration) -> Database.Options {
        var options = smallOptions()
        options.lockTimeout = timeout
        return options
    }

    @Test("an open with a lock timeout waits while another handle writes, and opens once it closes")
    func waitsForTheHolder() throws {
        let fs = SimulatedFileSystem()
        let holder = try Database(path: "/l.strata", options: smallOptions(), fileSystem: fs)
        try holder.write { tx in
            try tx.createTree("t")
            try tx.put([1], forKey: Key(1).bytes, in: "t")
        }
        let refused = DispatchSemaphore(value: 0)
        fs.onLockRefused = { refused.signal() }
        let opened = Mutex<Result<Database, any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        Thread {
            opened.withLock { $0 = Result { try Database(path: "/l.strata", options: Self.options(timeout: .seconds(120)), fileSystem: fs) } }
            done.signal()
        }.start()
        // The waiting open was refused the lock at least once: it is waiting, not failed.
        #expect(refused.wait(timeout: .now() + 120) == .success)
        try holder.close()
        #expect(done.wait(timeout: .now() + 120) == .success)
        let waiter = try #require(try opened.withLock { $0 }?.get())
        #expect(try waiter.snapshot().get(Key(1).bytes, in: "t") == [1])
        try waiter.write { tx in try tx.put([2], forKey: Key(2).bytes, in: "t") }
        try waiter.close()
    }

    @Test("an open whose lock timeout passes throws locked, after trying again")
    func timesOut() throws {
        let fs = SimulatedFileSystem()
        let holder = try Database(path: "/l.strata", options: smallOptions(), fileSystem: fs)
        #expect(throws: StrataError.locked(path: "/l.strata")) {
            try Database(path: "/l.strata", options: Self.options(timeout: .milliseconds(30)), fileSystem: fs)
        }
        #expect(fs.refusedLocks > 1, "it should have asked for the lock more than once")
        try holder.close()
    }

    @Test("without a lock timeout an open fails at once, asking once")
    func failsAtOnceByDefault() throws {
        let fs = SimulatedFileSystem()
        let holder = try Database(path: "/l.strata", options: smallOptions(), fileSystem: fs)
        #expect(throws: StrataError.locked(path: "/l.strata")) {
            try Database(path: "/l.strata", options: smallOptions(), fileSystem: fs)
        }
        #expect(fs.refusedLocks == 1)
        try holder.close()
    }
}
