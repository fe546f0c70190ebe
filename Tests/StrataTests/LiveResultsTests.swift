import Foundation
import Observation
import Strata
import Testing

@Suite("LiveResults: an @Observable holder for UI code")
@MainActor
struct LiveResultsTests {
    struct Chore: Model, Equatable {
        var id: Int64
        var title: String
        static let schema = Schema<Chore>(primaryKey: \.id)
    }

    /// Waits, through Observation itself, until `live.value` satisfies `condition`.
    func waitUntil<V>(_ live: LiveResults<V>, _ condition: (V?) -> Bool) async {
        while !condition(live.value) {
            await withCheckedContinuation { continuation in
                withObservationTracking { _ = live.value } onChange: { continuation.resume() }
            }
        }
    }

    @Test("value follows the query, and observers of the holder are told of each change")
    func followsTheQuery() async throws {
        let storage = try MemoryStorage()
        let live = LiveResults(storage.observe(Chore.query()))
        #expect(live.value == nil)
        await waitUntil(live) { $0 == [] }
        try storage.persist(Chore(id: 1, title: "dishes"))
        await waitUntil(live) { $0?.map(\.title) == ["dishes"] }
        try storage.persist(Chore(id: 2, title: "laundry"))
        await waitUntil(live) { $0?.count == 2 }
        #expect(live.error == nil)
        live.cancel()
    }
}
