import Foundation
import Strata
import Synchronization

/// The live-query behaviour every `Storage` must have (`Storage.observe`), as async checks.
///
/// ```swift
/// @Test(arguments: StorageConformance.observationChecks)
/// func observes(_ check: StorageConformance.AsyncCheck) async throws {
///     try await check.run(on: MyStorage())
/// }
/// ```
extension StorageConformance {
    /// One live-query behaviour, checked on a fresh storage.
    public struct AsyncCheck: Sendable, CustomStringConvertible {
        /// What it checks.
        public let name: String
        let body: @Sendable (any Storage) async throws -> Void

        /// Runs the check.
        /// - Throws: `ConformanceFailure` naming what differed.
        /// - Parameter storage: A new, empty storage of the backend under test.
        public func run(on storage: any Storage) async throws {
            do {
                try await body(storage)
            } catch let failure as ConformanceFailure {
                throw failure
            } catch {
                throw ConformanceFailure(check: name, message: "unexpected error: \(error)")
            }
        }

        public var description: String { name }
    }

    /// Live queries: the current result then one per relevant commit, none for unrelated
    /// commits or equal results, one committed state per result, the latest for a slow
    /// consumer, and the sequence ending when the storage closes.
    public static let observationChecks: [AsyncCheck] = [
        AsyncCheck(name: "observe yields the current result, then a fresh one after a commit that changes it") { storage in
            try storage.persist(Array(Fixtures.users.prefix(3)))
            var results = storage.observe(ConformanceUser.filter(\.age >= 0)).makeAsyncIterator()
            try expect(try await results.next()?.map(\.id) == [1, 2, 3], "the current result first")
            try storage.persist(Fixtures.users[3])
            try expect(try await results.next()?.map(\.id) == [1, 2, 3, 4], "the result after the commit")
        },
        AsyncCheck(name: "commits that change none of the query's collections do not re-run it") { storage in
            try storage.persist(Array(Fixtures.users.prefix(2)))
            let reads = Atomic<Int>(0)
            var counts = storage.observe(collections: [ConformanceUser.collectionName], isDuplicate: nil) { reader -> Int in
                reads.add(1, ordering: .relaxed)
                return try reader.count(Query<ConformanceUser>())
            }.makeAsyncIterator()
            try expect(try await counts.next() == 2, "the current count")
            for n in 1 ... 5 { try storage.create(ConformanceNote(text: "note \(n)")) }
            try storage.persist(Fixtures.users[2])
            try expect(try await counts.next() == 3, "the count after the relevant commit")
            try expect(reads.load(ordering: .relaxed) == 2, "read \(reads.load(ordering: .relaxed)) times, not 2")
        },
        AsyncCheck(name: "a result equal to the previous one is not sent again") { storage in
            var counts = storage.observeCount(ConformanceUser.filter(\.age > 1000)).makeAsyncIterator()
            try expect(try await counts.next() == 0, "none yet")
            try storage.persist(Fixtures.users[0])       // does not change the count
            var old = Fixtures.users[1]
            old.age = 1001
            try storage.persist(old)
            try expect(try await counts.next() == 1, "the next result sent is the changed count")
        },
        AsyncCheck(name: "a primary-key observation follows the record through create, update and erase") { storage in
            var user = storage.observe(ConformanceUser.self, primaryKey: Int64(7)).makeAsyncIterator()
            try expect(try await user.next() == .some(nil), "absent at first")
            try storage.create(Fixtures.user(7))
            try expect(try await user.next() == .some(Fixtures.user(7)), "created")
            try storage.erase(ConformanceUser.self, primaryKey: Int64(7))
            try expect(try await user.next() == .some(nil), "erased")
        },
        AsyncCheck(name: "every result is one committed state, never a mix of two commits") { storage in
            var a = Fixtures.user(1), b = Fixtures.user(2)
            (a.age, b.age) = (500, 500)
            try storage.persist([a, b])
            let results = storage.observe(ConformanceUser.query())
            let writer = Task.detached {
                for _ in 0 ..< 200 {
                    try storage.write { tx in
                        guard var x = try tx.read(ConformanceUser.self, primaryKey: Int64(1)),
                              var y = try tx.read(ConformanceUser.self, primaryKey: Int64(2)) else { return }
                        (x.age, y.age) = (x.age + 1, y.age - 1)
                        try tx.persist(x)
                        try tx.persist(y)
                    }
                }
            }
            var seen = 0
            for try await users in results {
                try expect(users.map(\.age).reduce(0, +) == 1000, "a result mixes two commits: \(users.map(\.age))")
                seen += 1
                if users.first?.age == 700 { break }
            }
            try await writer.value
            try expect(seen >= 2, "saw \(seen) results")
        },
        AsyncCheck(name: "a slow consumer gets the latest result, not a backlog") { storage in
            var counts = storage.observeCount(Query<ConformanceNote>()).makeAsyncIterator()
            try expect(try await counts.next() == 0, "none yet")
            for n in 1 ... 300 { try storage.create(ConformanceNote(text: "note \(n)")) }
            var received = 0
            while let count = try await counts.next() {
                received += 1
                if count == 300 { break }
            }
            try expect(received <= 3, "\(received) results waited for a consumer that read none during 300 commits")
        },
        AsyncCheck(name: "closing the storage ends the sequence") { storage in
            let results = storage.observeCount(Query<ConformanceNote>())
            var iterator = results.makeAsyncIterator()
            try expect(try await iterator.next() == 0, "the current count")
            try storage.close()
            do {
                let next = try await iterator.next()
                try expect(next == nil, "ended, not \(String(describing: next))")
            } catch {
                // Ending with the storage's "closed" error is also an end.
            }
        },
    ]
}
