import Foundation
import Testing
@testable import StrataEngine

/// Simulated power loss at thousands of seeded points: the machine dies at the Nth file
/// operation, unsynced writes are dropped, torn or garbled, and recovery must yield every
/// acknowledged commit and nothing partial.
@Suite("Simulated power loss")
struct PowerLossTests {
    static let maxCommits = 40

    /// Runs the workload on `fs` until the simulated crash; returns the last commit that
    /// returned (durable), and whether the crash hit.
    func runUntilCrash(_ fs: SimulatedFileSystem, rng: inout SeededGenerator, options: Database.Options) -> Int {
        var acknowledged = 0
        var handle: Database?
        // A background checkpoint's thread may still be writing when the crash stops this
        // one: the power goes only once it has stopped too.
        defer { handle?.waitForBackgroundCheckpoint() }
        do {
            let db = try Database(path: "/p.strata", options: options, fileSystem: fs)
            handle = db
            for n in 1 ... Self.maxCommits {
                try NumberedWorkload.commit(n, to: db)
                acknowledged = n
                switch Int.random(in: 0 ..< 20, using: &rng) {
                case 0: try db.checkpoint()
                case 1: try db.compact()
                default: break
                }
            }
            try db.close()
        } catch {}
        return acknowledged
    }

    /// Each checkpoint mode, and writes buffered with merges forced small (every few puts),
    /// so that crashes land with buffered writes pending, mid-merge and mid-checkpoint.
    @Test("after a power loss at any point, the database holds the acknowledged commits, whole",
          arguments: [(Database.BackgroundCheckpoints.never, nil), (.always, nil), (.always, 3)] as [(Database.BackgroundCheckpoints, Int?)])
    func powerLossAtEveryPoint(checkpoints: Database.BackgroundCheckpoints, writeBuffer: Int?) throws {
        let states = NumberedWorkload.states(through: Self.maxCommits)
        var outcomes = [0, 0]  // [exactly acknowledged, plus the in-flight commit]
        let points = TestScale.powerLossPoints
        for point in 0 ..< points {
            var rng = SeededGenerator(seed: UInt64(point))
            let fs = SimulatedFileSystem()
            fs.crashAtOperation = Int.random(in: 1 ... 260, using: &rng)
            var options = smallOptions(pageSize: 512, checkpointLogBytes: UInt64(Int.random(in: 1 ... 8, using: &rng) * 1024))
            options.backgroundCheckpoints = checkpoints
            options.writeBufferEntries = writeBuffer
            let acknowledged = runUntilCrash(fs, rng: &rng, options: options)
            fs.powerLoss(using: &rng)

            let db: Database
            do {
                db = try Database(path: "/p.strata", options: options, fileSystem: fs)
            } catch {
                Issue.record("point \(point): reopen failed: \(error)")
                continue
            }
            let content = try NumberedWorkload.content(of: db)
            if content == states[acknowledged] {
                outcomes[0] += 1
            } else if acknowledged < Self.maxCommits, content == states[acknowledged + 1] {
                // The commit in flight reached the disk before the power went: allowed.
                outcomes[1] += 1
            } else {
                Issue.record("point \(point): content matches no allowed state (acknowledged \(acknowledged))")
                continue
            }
            // The recovered file takes new commits and reopens cleanly.
            let next = content == states[acknowledged] ? acknowledged + 1 : acknowledged + 2
            if next <= Self.maxCommits {
                try NumberedWorkload.commit(next, to: db)
                try db.close()
                let again = try Database(path: "/p.strata", options: options, fileSystem: fs)
                #expect(try NumberedWorkload.content(of: again) == states[next], "point \(point)")
            }
        }
        reportFigure("power loss (background checkpoints: \(checkpoints)): \(points) crash points (unsynced writes dropped, torn or garbled); \(outcomes[0]) reopened to exactly the acknowledged commits, \(outcomes[1]) with the in-flight commit too; none lost one")
        #expect(outcomes[0] + outcomes[1] == points)
        #expect(outcomes[1] > 0, "some crashes should land after an unacknowledged write")
    }

    @Test("a power loss during recovery's own truncation is recovered on the next open")
    func crashDuringRecovery() throws {
        let states = NumberedWorkload.states(through: 10)
        for seed in 0 ..< 200 as Range<UInt64> {
            var rng = SeededGenerator(seed: seed)
            let fs = SimulatedFileSystem()
            let options = smallOptions()
            let db = try Database(path: "/r.strata", options: options, fileSystem: fs)
            for n in 1 ... 9 { try NumberedWorkload.commit(n, to: db) }
            // Leave a torn tail: half of commit 10's frame.
            fs.crashAtOperation = fs.operationCount + 2
            try? NumberedWorkload.commit(10, to: db)
            fs.powerLoss(using: &rng)
            // Crash again while recovery truncates and syncs.
            fs.crashAtOperation = fs.operationCount + Int.random(in: 1 ... 2, using: &rng)
            _ = try? Database(path: "/r.strata", options: options, fileSystem: fs)
            fs.powerLoss(using: &rng)
            let reopened = try Database(path: "/r.strata", options: options, fileSystem: fs)
            let content = try NumberedWorkload.content(of: reopened)
            #expect(content == states[9] || content == states[10], "seed \(seed)")
        }
    }
}
