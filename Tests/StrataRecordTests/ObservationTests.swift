import Foundation
import Strata
import StrataRecord
import StrataTestBackends
import Testing

@Suite("ActiveRecord: live fetchers")
struct RecordObservationTests {
    @Test("a fetcher's observe yields the records now and after each commit", arguments: RecordBackend.available)
    func fetcherObserves(_ backend: RecordBackend) async throws {
        try await withDatabaseAsync(backend) { db in
            var ada = User(name: "Ada", email: "ada@example.com", age: 36)
            try await ada.save(on: db)
            var adults = try User.query(on: db).where(\.age >= 18).order(by: \.name).observe().makeAsyncIterator()
            #expect(try await adults.next()?.map(\.name) == ["Ada"])
            var alan = User(name: "Alan", email: "alan@example.com", age: 41)
            try await alan.save(on: db)
            #expect(try await adults.next()?.map(\.name) == ["Ada", "Alan"])
        }
    }

    @Test("observing inside a transaction is refused: a transaction has no later commits")
    func observeInATransactionIsRefused() throws {
        try withDatabase { db, _ in
            let refused = try db.transaction { tx -> Bool in
                do {
                    _ = try User.query(on: tx).observe()
                    return false
                } catch RecordDatabaseError.observationNeedsDatabase {
                    return true
                }
            }
            #expect(refused)
        }
    }
}

/// `withDatabase` for async bodies.
func withDatabaseAsync(_ backend: RecordBackend, _ body: (RecordDatabase) async throws -> Void) async throws {
    let db = RecordDatabase(storage: try backend.make())
    try await body(db)
    try? db.close()
}
