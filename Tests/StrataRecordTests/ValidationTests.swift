import Foundation
import Strata
import StrataRecord
import StrataTestBackends
import Testing

@Suite("ActiveRecord: validations")
struct ValidationTests {
    @Test("each rule reports model, field and key; an invalid record stores nothing", arguments: RecordBackend.available)
    func rules(_ backend: RecordBackend) throws {
        try withDatabase(backend) { db, _ in
            var user = User(name: " ", email: "not-an-email", age: 200)
            let errors = try user.errors(on: db)
            #expect(Set(errors) == [
                ValidationError(model: "User", field: "name", key: .blank),
                ValidationError(model: "User", field: "name", key: .tooShort),
                ValidationError(model: "User", field: "email", key: .invalidFormat),
                ValidationError(model: "User", field: "age", key: .outOfRange),
            ])
            #expect(try !user.isValid(on: db))
            #expect(throws: RecordInvalid.self) { try user.save(on: db) }
            #expect(try User.count(on: db) == 0 && user.isNew)
        }
    }

    @Test("a custom validator's keys are reported like the built-in ones")
    func customValidator() throws {
        try withDatabase { (db: RecordDatabase, _: String) throws in
            let user = User(name: "admin", email: "a@example.com")
            #expect(try user.errors(on: db) == [ValidationError(model: "User", field: "name", key: "reserved")])
        }
    }

    @Test("uniqueness: a taken value is an error before writing", arguments: RecordBackend.available)
    func uniqueness(_ backend: RecordBackend) throws {
        try withDatabase(backend) { db, _ in
            var ada = User(name: "Ada", email: "ada@example.com")
            try ada.save(on: db)
            var copy = User(name: "Copy", email: "ada@example.com")
            #expect(try copy.errors(on: db) == [ValidationError(model: "User", field: "email", key: .taken)])
            #expect(throws: RecordInvalid.self) { try copy.save(on: db) }
            ada.age = 1
            try ada.save(on: db)  // its own value does not count as taken
        }
    }

    @Test("uniqueness holds for two savers racing: the unique index refuses the second")
    func uniquenessUnderConcurrency() throws {
        try withDatabase { (db: RecordDatabase, _: String) throws in
            let outcomes = Mutex<[Bool]>([])
            DispatchQueue.concurrentPerform(iterations: 8) { i in
                var user = User(name: "Racer \(i)", email: "same@example.com")
                let saved = (try? user.save(on: db)) != nil
                outcomes.withLock { $0.append(saved) }
            }
            #expect(outcomes.withLock { $0.filter { $0 }.count } == 1)
            #expect(try User.count(on: db) == 1)
        }
    }
}

import Synchronization
