import Dispatch
import Foundation
import Synchronization
import Testing
@testable import StrataEngine

/// Group commit: durable commits from threads committing at once share fdatasyncs, and
/// still none is visible, or acknowledged, before it is durable.
@Suite("Group commit")
struct GroupCommitTests {
    /// One key per commit, so which commits survived is a set of keys.
    static let tree = "commits"

    static func commit(_ n: Int, to db: Database) throws {
        try db.write { tx in
            try tx.createTree(tree, ifNotExists: true)
            try tx.put(Array("commit \(n)".utf8), forKey: Key(n).bytes, in: tree)
        }
    }

    static func committed(in db: Database) throws -> Set<Int> {
        let snapshot = try db.snapshot()
        guard snapshot.hasTree(tree) else { return [] }
        var numbers: Set<Int> = []
        try snapshot.scan(tree) { key, _ in
            if case .int(let n)? = try? Key(bytes: Array(key)).elements().first { numbers.insert(Int(n)) }
            return true
        }
        return numbers
    }

    /// A database on `fs` whose first sync after `arm()` stays in flight until `release()`,
    /// and which tells when committers are waiting for it.
    final class HeldSync: @unchecked Sendable {
        let fs = SimulatedFileSystem()
        let db: Database
        private let syncStarted = DispatchSemaphore(value: 0)
        private let released = DispatchSemaphore(value: 0)
        private let waiting = DispatchSemaphore(value: 0)
        private let threads = DispatchGroup()
        private let errors = Mutex<[Int: any Error]>([:])

        init() throws {
            db = try Database(path: "/g.strata", options: smallOptions(), fileSystem: fs)
            let waiting = waiting
            db.group.onWait = { waiting.signal() }
        }

        /// How long a step may take before the test reports it (a broken group commit that
        /// never syncs, or never waits, must fail the test, not hang it).
        static let limit = DispatchTimeInterval.seconds(120)

        func arm() {
            let (started, released) = (syncStarted, released)
            fs.beforeNextSync = {
                started.signal()
                _ = released.wait(timeout: .now() + HeldSync.limit)
            }
        }

        private func wait(_ semaphore: DispatchSemaphore, for what: String) {
            if semaphore.wait(timeout: .now() + Self.limit) == .timedOut { Issue.record("timed out waiting until \(what)") }
        }

        /// Commits `n` on a thread of its own.
        func commitInBackground(_ n: Int) {
            threads.enter()
            Thread { [self] in
                do { try GroupCommitTests.commit(n, to: db) } catch { errors.withLock { $0[n] = error } }
                threads.leave()
            }.start()
        }

        /// Commits `first` on a thread, and returns once its sync is in flight.
        func startHeldCommit(_ first: Int) {
            arm()
            commitInBackground(first)
            wait(syncStarted, for: "the first commit's sync started")
        }

        /// Returns once `count` committers wait for the sync in flight.
        func awaitWaiters(_ count: Int) {
            for _ in 0 ..< count { wait(waiting, for: "\(count) committers wait for the sync in flight") }
        }

        /// The file as a power loss now would leave it, with the unsynced writes numbered
        /// `dropped` (0 is the first since the last sync) lost and the others kept. The
        /// committers are then let go; the image is what a reopen must make sense of.
        func imageAfterPowerLoss(dropping dropped: Set<Int>) -> [UInt8] {
            var index = 0
            return imageAfterPowerLoss { _ in
                defer { index += 1 }
                return dropped.contains(index) ? .dropped : .kept
            }
        }

        /// The file as a power loss now would leave it, `fate` deciding each unsynced
        /// change; then the committers are let go.
        func imageAfterPowerLoss(_ fate: (SimulatedFileSystem.Pending) -> SimulatedFileSystem.Fate) -> [UInt8] {
            fs.powerLoss(fate)
            let image = fs.contents(of: "/g.strata")
            _ = releaseAndJoin()
            return image
        }

        /// Lets the held sync finish and waits for every committer.
        func releaseAndJoin() -> [Int: any Error] {
            released.signal()
            if threads.wait(timeout: .now() + Self.limit) == .timedOut { Issue.record("timed out waiting for the committers") }
            return errors.withLock { $0 }
        }
    }

    @Test("commits written while a sync is in flight share the next sync")
    func commitsShareSyncs() throws {
        let held = try HeldSync()
        held.startHeldCommit(1)
        // The gate is open while commit 1 syncs: two more commits are written and wait.
        held.commitInBackground(2)
        held.commitInBackground(3)
        held.awaitWaiters(2)
        #expect(held.releaseAndJoin().isEmpty)
        let statistics = try held.db.statistics()
        #expect(statistics.durableCommits == 3)
        #expect(statistics.commitSyncs == 2)
        #expect(try Self.committed(in: held.db) == [1, 2, 3])
    }

    @Test("a commit is visible to readers only once its sync is done")
    func invisibleUntilDurable() throws {
        let held = try HeldSync()
        try Self.commit(0, to: held.db)
        held.startHeldCommit(1)
        held.commitInBackground(2)
        held.awaitWaiters(1)
        // Written, not durable: a power loss now could take them back, so no reader sees them.
        #expect(try Self.committed(in: held.db) == [0])
        #expect(try held.db.snapshot().sequence == 1)
        #expect(held.releaseAndJoin().isEmpty)
        #expect(try Self.committed(in: held.db) == [0, 1, 2])
    }

    @Test("a failed group sync fails every commit it covered, poisons the handle, and the file reopens at the last durable commit")
    func failedGroupSync() throws {
        let held = try HeldSync()
        for n in 1 ... 3 { try Self.commit(n, to: held.db) }
        held.startHeldCommit(4)
        held.commitInBackground(5)
        held.commitInBackground(6)
        held.awaitWaiters(2)
        held.fs.nextFault = .init(operation: .sync, errno: EIO)
        let errors = held.releaseAndJoin()
        #expect(Set(errors.keys) == [4, 5, 6])
        for error in errors.values {
            guard case StrataError.io(_, _, EIO)? = error as? StrataError else {
                Issue.record("expected an I/O error, got \(error)")
                continue
            }
        }
        #expect(try Self.committed(in: held.db) == [1, 2, 3])
        #expect { try Self.commit(7, to: held.db) } throws: { error in
            guard case StrataError.poisoned(let cause) = error else { return false }
            return cause.contains("errno \(EIO)")
        }
        #expect(try held.db.statistics().isPoisoned)
        try held.db.close()
        let reopened = try Database(path: "/g.strata", options: smallOptions(), fileSystem: held.fs)
        #expect(try Self.committed(in: reopened) == [1, 2, 3])
        try Self.commit(7, to: reopened)
        #expect(try Self.committed(in: reopened) == [1, 2, 3, 7])
    }

    @Test("after a power loss during concurrent durable commits, every acknowledged commit is there")
    func powerLossDuringConcurrentCommits() throws {
        let threads = 4, perThread = 30
        for seed in UInt64(1) ... 12 {
            var rng = SeededGenerator(seed: seed)
            let fs = SimulatedFileSystem()
            let db = try Database(path: "/p.strata", options: smallOptions(checkpointLogBytes: 4 << 10), fileSystem: fs)
            // Crash somewhere within the run's writes and syncs (each commit is one of each,
            // and the checkpoints every 4 KiB of log add some).
            fs.crashAtOperation = fs.operationCount + Int.random(in: 1 ... threads * perThread * 2, using: &rng)
            let acknowledged = Mutex<Set<Int>>([])
            DispatchQueue.concurrentPerform(iterations: threads) { thread in
                for i in 0 ..< perThread {
                    let n = thread * perThread + i
                    do { try Self.commit(n, to: db) } catch { return }
                    acknowledged.withLock { _ = $0.insert(n) }
                }
            }
            try? db.close()
            fs.powerLoss(using: &rng)
            let reopened = try Database(path: "/p.strata", options: smallOptions(), fileSystem: fs)
            let survived = try Self.committed(in: reopened)
            let lost = acknowledged.withLock { $0 }.subtracting(survived)
            #expect(lost.isEmpty, "seed \(seed): acknowledged commits lost: \(lost.sorted())")
            try reopened.close()
        }
    }

    /// Opens `image` strictly (no salvage), on a file system of its own.
    static func reopen(_ image: [UInt8]) throws -> Database {
        let fs = SimulatedFileSystem()
        fs.setContents(image, of: "/g.strata")
        return try Database(path: "/g.strata", options: smallOptions(), fileSystem: fs)
    }

    @Test("a power loss that keeps a later commit of a group and drops an earlier one opens as an interrupted write")
    func powerLossKeepsALaterCommitOfAGroup() throws {
        let held = try HeldSync()
        try Self.commit(0, to: held.db)
        held.startHeldCommit(1)
        held.commitInBackground(2)
        held.commitInBackground(3)
        held.awaitWaiters(2)
        // Commits 1, 2 and 3 are written and none is synced: the disk may write commit 3's
        // blocks back and lose commit 2's. Commit 3 says it was written before the sync
        // that would have made commit 2 durable, so this is no damage: none of them was
        // acknowledged, and the strict open drops commit 2 and everything after it.
        let reopened = try Self.reopen(held.imageAfterPowerLoss(dropping: [1]))
        #expect(try Self.committed(in: reopened) == [0, 1])
        #expect(reopened.openReport.tornBytes > 0)
    }

    /// Commit 0 alone, then commit 2 written while commit 1's sync runs: commit 2 proves
    /// nothing about commit 1's bytes. All three are acknowledged.
    static func commitWrittenDuringAnothersSync() throws -> HeldSync {
        let held = try HeldSync()
        try commit(0, to: held.db)
        held.startHeldCommit(1)
        held.commitInBackground(2)
        held.awaitWaiters(1)
        #expect(held.releaseAndJoin().isEmpty)
        return held
    }

    /// The file with a byte of commit 1's log frame flipped, and that frame's offset.
    static func imageWithCommitOneDamaged(_ held: HeldSync) throws -> (image: [UInt8], offset: UInt64) {
        var image = held.fs.contents(of: "/g.strata")
        var logFrames: [UInt64] = []
        var position = Int(FileHeader.dataStart)
        let context = CorruptionContext(path: "/g.strata", offset: 0, structure: "frame")
        while position + FrameHeader.size <= image.count, image[position + 8] == FrameHeader.magic.0 {
            let header = try image[position...].withUnsafeBytes { try FrameHeader.parse($0, context: context) }
            if header.type == .log { logFrames.append(UInt64(position)) }
            position += header.frameLength
        }
        image[Int(logFrames[1]) + FrameHeader.size] ^= 0xFF
        return (image, logFrames[1])
    }

    @Test("a power loss during a group, whatever it keeps, drops or tears, opens strictly with every acknowledged commit")
    func randomPowerLossDuringAGroup() throws {
        var groups = 0
        for seed in UInt64(1) ... 60 {
            var rng = SeededGenerator(seed: seed)
            let held = try HeldSync()
            let alone = Int.random(in: 0 ... 3, using: &rng)
            for n in 0 ..< alone { try Self.commit(n, to: held.db) }
            let waiting = Int.random(in: 1 ... 4, using: &rng)
            held.startHeldCommit(100)
            for n in 101 ... 100 + waiting { held.commitInBackground(n) }
            held.awaitWaiters(waiting)
            groups += 1
            // Commit 100 and the ones written during its sync are all unsynced: any of their
            // writes may be kept, lost, torn or garbled (SimulatedFileSystem.powerLoss).
            let image = held.imageAfterPowerLoss { change in
                switch change {
                case .truncate: return Bool.random(using: &rng) ? .kept : .dropped
                case .write(_, let bytes):
                    switch Int.random(in: 0 ..< 4, using: &rng) {
                    case 0: return .kept
                    case 1: return .dropped
                    case 2: return .torn(keeping: Int.random(in: 0 ... bytes.count, using: &rng))
                    default: return .garbled((0 ..< bytes.count).map { _ in UInt8.random(in: 0 ... 255, using: &rng) })
                    }
                }
            }
            let survived = try Self.committed(in: Self.reopen(image))
            #expect(survived.isSuperset(of: 0 ..< alone), "seed \(seed): acknowledged commits lost: \(Set(0 ..< alone).subtracting(survived).sorted())")
            #expect(survived.isSubset(of: Set(0 ..< alone).union(100 ... 100 + waiting)), "seed \(seed): \(survived.sorted())")
        }
        reportFigure("group power loss: \(groups) groups of 2 to 5 unsynced commits, each write kept, dropped, torn or garbled at random; every file opened strictly with its acknowledged commits")
    }

    @Test("damage before a commit written after it was durable is still refused, past the frames of a group")
    func damageBeforeALaterDurableCommitIsRefused() throws {
        let held = try Self.commitWrittenDuringAnothersSync()
        // Commit 3 is written once commits 1 and 2 are durable, so it proves commit 1 was.
        try Self.commit(3, to: held.db)
        let damaged = try Self.imageWithCommitOneDamaged(held)
        #expect {
            _ = try Self.reopen(damaged.image)
        } throws: { error in
            guard case StrataError.corruption(_, let offset, let reason) = error else { return false }
            return offset == damaged.offset && reason.contains("valid commits follow")
        }
    }

    @Test("damage to the last group's earlier commit reads as an interrupted write, as damage to the last commit reads as a torn tail")
    func damageInTheLastGroupIsNotDetectable() throws {
        let held = try Self.commitWrittenDuringAnothersSync()
        // No later frame was written knowing commit 1 durable: recovery cannot tell this
        // from a power loss during the group (FORMAT.md §7), and keeps what comes before.
        #expect(try Self.committed(in: Self.reopen(Self.imageWithCommitOneDamaged(held).image)) == [0])
    }

    @Test("a format 2 file keeps one sync per commit, and frames that claim nothing unsynced before them")
    func olderFormatsSyncEachCommit() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file()
        try Database(path: path).close()
        try setFormatVersions(ofFileAt: path, read: 2, write: 2)
        let db = try Database(path: path)
        DispatchQueue.concurrentPerform(iterations: 4) { thread in
            for i in 0 ..< 25 { try! Self.commit(thread * 25 + i, to: db) }
        }
        let statistics = try db.statistics()
        #expect(statistics.durableCommits == 100)
        #expect(statistics.commitSyncs == 100)
        try db.close()
        let frames = try allFrames(ofFileAt: path)
        #expect(!frames.isEmpty)
        #expect(frames.allSatisfy { $0.pendingBefore == 0 })
        let info = try Inspector(path: path).info()
        #expect((info.readVersion, info.writeVersion) == (2, 2))
        #expect(try Self.committed(in: Database(path: path)) == Set(0 ..< 100))
    }

    @Test("threads committing durably to a file lose nothing, and the file reopens with every commit")
    func concurrentCommitsOnDisk() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let threads = 4, perThread = 50
        let db = try Database(path: directory.file())
        DispatchQueue.concurrentPerform(iterations: threads) { thread in
            for i in 0 ..< perThread { try! Self.commit(thread * perThread + i, to: db) }
        }
        let statistics = try db.statistics()
        #expect(statistics.durableCommits == UInt64(threads * perThread))
        #expect(statistics.commitSyncs <= statistics.durableCommits)
        try db.close()
        let reopened = try Database(path: directory.file())
        #expect(try Self.committed(in: reopened) == Set(0 ..< threads * perThread))
        try reopened.close()
    }
}
