import Foundation
import Strata
import StrataRecord
import StrataTestBackends
import Testing

@Suite("ActiveRecord: joins")
struct JoinTests {
    func seeded(_ backend: RecordBackend, _ body: (RecordDatabase) throws -> Void) throws {
        try withDatabase(backend) { db, _ in
            var engines = Group(title: "Engines"), empty = Group(title: "Empty")
            try engines.save(on: db)
            try empty.save(on: db)
            var ada = User(name: "Ada", email: "ada@example.com", groupId: engines.id)
            var alan = User(name: "Alan", email: "alan@example.com", groupId: engines.id)
            var loner = User(name: "Loner", email: "loner@example.com")
            var stale = User(name: "Stale", email: "stale@example.com", groupId: 99)
            for i in [0, 1, 2, 3] {
                switch i {
                case 0: try ada.save(on: db)
                case 1: try alan.save(on: db)
                case 2: try loner.save(on: db)
                default: try stale.save(on: db)
                }
            }
            try body(db)
        }
    }

    @Test("inner, left, right and full outer joins on a foreign key", arguments: RecordBackend.available)
    func joins(_ backend: RecordBackend) throws {
        try seeded(backend) { (db: RecordDatabase) throws in
            let users = User.query(on: db).order(by: \.name)
            #expect(try users.join(Group.self, on: \.groupId).map { "\($0.0.name)-\($0.1.title)" } == ["Ada-Engines", "Alan-Engines"])
            #expect(try users.leftJoin(Group.self, on: \.groupId).map { "\($0.0.name)-\($0.1?.title ?? "nil")" }
                == ["Ada-Engines", "Alan-Engines", "Loner-nil", "Stale-nil"])
            #expect(try users.rightJoin(Group.self, on: \.groupId).map { "\($0.0?.name ?? "nil")-\($0.1.title)" }
                == ["Ada-Engines", "Alan-Engines", "nil-Empty"])
            #expect(try users.fullJoin(Group.self, on: \.groupId).map { "\($0.0?.name ?? "nil")-\($0.1?.title ?? "nil")" }
                == ["Ada-Engines", "Alan-Engines", "nil-Empty", "Loner-nil", "Stale-nil"])
        }
    }
}
