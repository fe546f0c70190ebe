import Dispatch
import Foundation
import Synchronization
import Testing
@testable import StrataEngine

/// `WriteGate`: one writer at a time, served in the order they asked, and a nested
/// transaction refused instead of deadlocked.
@Suite("The write gate")
struct WriteGateTests {
    @Test("a thread asking again while it holds the gate is refused at once")
    func nestedEnterIsRefused() {
        let gate = WriteGate()
        #expect(gate.enter())
        #expect(!gate.enter())
        #expect(!gate.tryEnter())
        gate.leave()
        #expect(gate.tryEnter())
        gate.leave()
    }

    @Test("leaving hands the gate to the thread waiting for it, ahead of the one that left", .timeLimit(.minutes(1)))
    func leavingHandsTheGateToTheWaiter() {
        let gate = WriteGate()
        #expect(gate.enter())
        let order = Mutex<[String]>([])
        let waiterDone = DispatchSemaphore(value: 0)
        Thread {
            _ = gate.enter()
            order.withLock { $0.append("waiter") }
            gate.leave()
            waiterDone.signal()
        }.start()
        while gate.waitingCount == 0 { sched_yield() }   // the waiter is queued
        gate.leave()
        // A semaphore let the leaving thread take the gate straight back.
        #expect(gate.enter())
        order.withLock { $0.append("leaver") }
        gate.leave()
        waiterDone.wait()
        #expect(order.withLock { $0 } == ["waiter", "leaver"])
    }

    @Test("statistics() returns while another thread commits back to back", .timeLimit(.minutes(1)))
    func statisticsAreServedBesideABusyWriter() throws {
        let database = try Database(path: "/g.strata", options: smallOptions(), fileSystem: SimulatedFileSystem())
        try database.write { try $0.createTree("t") }
        let stop = Atomic<Bool>(false)
        let writerDone = DispatchSemaphore(value: 0)
        Thread {
            var i: UInt64 = 0
            while !stop.load(ordering: .relaxed) {
                try? database.write { try $0.put([1], forKey: Key(i).bytes, in: "t") }
                i &+= 1
            }
            writerDone.signal()
        }.start()
        var sequences: [UInt64] = []
        for _ in 0 ..< 50 { sequences.append(try database.statistics().commitSequence) }
        stop.store(true, ordering: .relaxed)
        writerDone.wait()
        #expect(sequences == sequences.sorted())
    }

    @Test("statistics() does not wait for a write transaction under way, and reports the commits before it", .timeLimit(.minutes(1)))
    func statisticsDoNotWaitForTheWriter() throws {
        let database = try Database(path: "/g.strata", options: smallOptions(), fileSystem: SimulatedFileSystem())
        try database.write { try $0.createTree("t") }
        let before = try database.statistics().commitSequence
        let inTransaction = DispatchSemaphore(value: 0), finish = DispatchSemaphore(value: 0), done = DispatchSemaphore(value: 0)
        Thread {
            try? database.write { tx in
                try tx.put([1], forKey: Key(1).bytes, in: "t")
                #expect(try database.statistics().commitSequence == before)   // the writer's own view
                inTransaction.signal()
                finish.wait()
            }
            done.signal()
        }.start()
        inTransaction.wait()
        #expect(try database.statistics().commitSequence == before)
        finish.signal()
        done.wait()
        #expect(try database.statistics().commitSequence == before + 1)
    }
}
