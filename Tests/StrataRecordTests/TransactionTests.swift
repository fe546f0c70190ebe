import Foundation
import Strata
import StrataRecord
import StrataTestBackends
import Testing

@Suite("ActiveRecord: transactions")
struct TransactionTests {
    @Test("a transaction commits when its block returns", arguments: RecordBackend.available)
    func commits(_ backend: RecordBackend) throws {
        try withDatabase(backend) { db, _ in
            try db.transaction { tx in
                for i in 0 ..< 10 {
                    var user = User(name: "User \(i)", email: "u\(i)@example.com")
                    try user.save(on: tx)
                }
            }
            #expect(try User.count(on: db) == 10)
        }
    }

    @Test("a throw or an explicit rollback leaves the file unchanged, byte for byte")
    func rollbackLeavesFileUnchanged() throws {
        try withDatabase { db, path in
            var ada = User(name: "Ada", email: "ada@example.com")
            try ada.save(on: db)
            let before = try Data(contentsOf: URL(fileURLWithPath: path))
            struct Abort: Error {}
            #expect(throws: Abort.self) {
                try db.transaction { tx in
                    var user = User(name: "Grace", email: "grace@example.com")
                    try user.save(on: tx)
                    throw Abort()
                }
            }
            try db.transaction { tx in
                var user = User(name: "Edsger", email: "edsger@example.com")
                try user.save(on: tx)
                tx.rollback()
            }
            #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
            #expect(try User.all(on: db).map(\.name) == ["Ada"])
        }
    }

    @Test("transactions do not nest: a second one inside the first is a clear error", arguments: RecordBackend.available)
    func nestingIsAnError(_ backend: RecordBackend) throws {
        try withDatabase(backend) { db, _ in
            #expect(throws: RecordDatabaseError.nestedTransaction) {
                try db.transaction { _ in try db.transaction { _ in } }
            }
            #expect(throws: RecordDatabaseError.nestedTransaction) {
                try db.transaction { _ in
                    var user = User(name: "Ada", email: "ada@example.com")
                    try user.save(on: db)   // the database, not the transaction: would wait for itself
                }
            }
        }
    }
}
