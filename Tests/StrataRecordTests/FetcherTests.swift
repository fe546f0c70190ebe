import Foundation
import Strata
import StrataRecord
import StrataTestBackends
import Testing

@Suite("ActiveRecord: the lazy fetcher")
struct FetcherTests {
    func seeded(_ backend: RecordBackend, _ body: (RecordDatabase) throws -> Void) throws {
        try withDatabase(backend) { db, _ in
            try db.transaction { tx in
                for (i, name) in ["Ada", "Alan", "Grace", "Edsger", "Barbara", "Ken", "Margaret"].enumerated() {
                    var user = User(name: name, email: "\(name.lowercased())@example.com", age: 30 + i * 7)
                    try user.save(on: tx)
                }
            }
            try body(db)
        }
    }

    @Test("=, !=, IN, NOT IN, BETWEEN, LIKE, NOT LIKE and #Predicate", arguments: RecordBackend.available)
    func operators(_ backend: RecordBackend) throws {
        try seeded(backend) { (db: RecordDatabase) throws in
            func names(_ fetcher: Fetcher<User>) throws -> [String] { try fetcher.order(by: \.name).fetch().map(\.name) }
            let all = User.query(on: db)
            #expect(try names(all.where(\.age == 37)) == ["Alan"])
            #expect(try names(all.where(\.name != "Ada")).count == 6)
            #expect(try names(all.where(.in(\.age, [30, 44]))) == ["Ada", "Grace"])
            #expect(try names(all.where(.notIn(\.age, [30, 44]))).count == 5)
            #expect(try names(all.where(.between(\.age, 40 ... 60))) == ["Barbara", "Edsger", "Grace"])
            #expect(try names(all.where(.like(\.name, "A%"))) == ["Ada", "Alan"])
            #expect(try names(all.where(.like(\.name, "%r_a%"))) == ["Barbara", "Margaret"])
            #expect(try names(all.where(.notLike(\.name, "%a%"))) == ["Edsger", "Ken"])
            #expect(try names(all.where(.like(\.name, "a%"))).isEmpty, "case-sensitive by default")
            #expect(try names(all.where(.like(\.name, "a%", caseSensitive: false))) == ["Ada", "Alan"])
            #expect(try names(all.where(#Predicate { $0.age > 60 && $0.name.starts(with: "M") })) == ["Margaret"])
        }
    }

    @Test("order, limit, offset, first, count, random order; indexed conditions use the index", arguments: RecordBackend.available)
    func windowAndPlan(_ backend: RecordBackend) throws {
        try seeded(backend) { (db: RecordDatabase) throws in
            let byAge = User.query(on: db).order(by: \.age, ascending: false)
            #expect(try byAge.limit(2).fetch().map(\.name) == ["Margaret", "Ken"])
            #expect(try byAge.offset(5).fetch().map(\.name) == ["Alan", "Ada"])
            #expect(try byAge.first()?.name == "Margaret")
            #expect(try User.query(on: db).where(\.age >= 44).count() == 5)
            #expect(Set(try User.query(on: db).randomOrder().fetch().map(\.name)).count == 7)
            #expect(try User.query(on: db).randomOrder().limit(3).fetch().count == 3)
            #expect(try User.query(on: db).where(\.age >= 44).explain().access == .indexRange(index: "age"))
        }
    }
}

@Suite("ActiveRecord: projections")
struct ProjectionFetchTests {
    @Test("only/except decode some fields; saving a projected record keeps the others", arguments: RecordBackend.available)
    func projections(_ backend: RecordBackend) throws {
        try withDatabase(backend) { db, _ in
            var ada = User(name: "Ada", email: "ada@example.com", age: 36)
            try ada.save(on: db)
            var slim = try #require(try User.query(on: db).only(\.name).first())
            #expect(slim.name == "Ada" && slim.email == "" && slim.age == 0)
            #expect(try User.query(on: db).except(\.email).first()?.age == 36)
            slim.name = "Ada Lovelace"
            try slim.save(on: db)
            let stored = try #require(try User.find(ada.id, on: db))
            #expect(stored.name == "Ada Lovelace" && stored.email == "ada@example.com" && stored.age == 36)
        }
    }
}
