import Foundation
import Strata
import Testing

/// What the shared observation checks cannot see from outside a storage: observers are
/// released when their sequence ends.
@Suite("Live queries: observers are released")
struct ObservationTests {
    struct Tick: Model {
        var id: Int64
        static let schema = Schema<Tick>(primaryKey: \.id)
    }

    @Test("10,000 observe-then-drop cycles leave no observer behind")
    func droppedSequencesReleaseTheirObservers() async throws {
        let storage = try MemoryStorage()
        for _ in 0 ..< 10_000 {
            var iterator = storage.observeCount(Tick.query()).makeAsyncIterator()
            _ = try await iterator.next()
        }
        #expect(storage.storage.activeObservers == 0)
    }

    @Test("cancelling the consuming task ends the sequence and releases the observer")
    func cancellationReleasesTheObserver() async throws {
        let storage = try MemoryStorage()
        let started = AsyncStream<Void>.makeStream()
        let consumer = Task {
            for try await _ in storage.observeCount(Tick.query()) { started.continuation.yield() }
        }
        var signals = started.stream.makeAsyncIterator()
        await signals.next()
        #expect(storage.storage.activeObservers == 1)
        consumer.cancel()
        try await consumer.value
        #expect(storage.storage.activeObservers == 0)
    }
}
