import Foundation
import Strata
import StrataDAO
import StrataExamples
import StrataTestBackends
import Testing

@Suite("DAO live queries, on every storage")
struct DAOObservationTests {
    @Test("observe yields plain objects now and after a commit to the dialogs or to their messages", arguments: Backend.available)
    func observesDialogsAndTheirMessages(_ backend: Backend) async throws {
        let dao = dialogs(try backend.make())
        try await dao.persist([DialogPlainObject.sample(1, pinned: true), DialogPlainObject.sample(2, pinned: false)])
        var pinned = dao.observe(predicatedBy: #Predicate { $0.isPinned }, orderedBy: \.id).makeAsyncIterator()
        #expect(try await pinned.next()?.map(\.id) == [1])

        try await dao.persist(DialogPlainObject.sample(3, pinned: true))
        #expect(try await pinned.next()?.map(\.id) == [1, 3])

        // A change to a message alone (its own collection) reaches the plain dialog.
        let storage = dao.storage
        try await storage.write { tx in
            guard var message = try tx.read(MessageModel.self, primaryKey: Int64(100)) else { return }
            message.text = "edited"
            try tx.persist(message)
        }
        #expect(try await pinned.next()?.first?.messages.first?.text == "edited")
    }
}
