import Foundation
import Strata
import StrataEngine
@testable import StrataStudio
import Testing

/// Studio's answers, asked directly (no socket): the JSON views, their bounds, the request
/// guard, and a damaged file.
@Suite("Studio's answers")
struct StudioAPITests {
    static let users = 500

    /// A W1 file of `users` users and the hostile collection, and a Studio listening on
    /// 127.0.0.1:8080 for it.
    struct Fixture {
        let directory: String
        let path: String
        let studio: Studio

        init() throws {
            directory = try TestFiles.directory()
            path = directory + "/w1.strata"
            try TestFiles.w1(path, count: StudioAPITests.users)
            studio = Studio(path: path)
            studio.listening(host: "127.0.0.1", port: 8080)
        }

        func get(_ path: String, _ query: [String: String] = [:], host: String? = "127.0.0.1:8080", origin: String? = nil, method: String = "GET") -> StudioResponse {
            studio.respond(to: StudioRequest(method: method, path: path, query: query, host: host, origin: origin))
        }

        func json(_ path: String, _ query: [String: String] = [:]) throws -> [String: Any] {
            let response = get(path, query)
            #expect(response.status == 200, "\(path): \(response.text)")
            return try #require(try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any])
        }

        func close() {
            studio.close()
            try? FileManager.default.removeItem(atPath: directory)
        }
    }

    @Test("the page and its assets are served with a policy that runs only Studio's own script")
    func pageCarriesSecurityHeaders() throws {
        let fixture = try Fixture()
        defer { fixture.close() }
        let page = fixture.get("/")
        #expect(page.status == 200 && page.contentType.hasPrefix("text/html"))
        let policy = try #require(page.headers.first { $0.name == "Content-Security-Policy" }?.value)
        #expect(policy.contains("script-src 'self'") && policy.contains("default-src 'none'") && policy.contains("frame-ancestors 'none'"))
        #expect(page.headers.contains { $0.name == "X-Content-Type-Options" && $0.value == "nosniff" })
        #expect(fixture.get("/studio.js").status == 200 && fixture.get("/studio.css").status == 200)
        #expect(fixture.get("/nothing-here").status == 404)
    }

    @Test("keyset paging visits every record once, in primary-key order")
    func keysetPagingVisitsEveryRecord() throws {
        let fixture = try Fixture()
        defer { fixture.close() }
        var ids: [Int] = []
        var from: String?
        repeat {
            let page = try fixture.json("/api/collections/users/records", ["limit": "64"].merging(from.map { ["from": $0] } ?? [:]) { a, _ in a })
            let records = try #require(page["records"] as? [[String: Any]])
            #expect(records.count <= 64)
            ids += records.compactMap { ($0["value"] as? [String: Any])?["id"] as? Int }
            from = page["next"] as? String
        } while from != nil
        #expect(ids == Array(1...Self.users))
    }

    @Test("page sizes, offsets and keys outside their bounds are refused with 400")
    func boundsAreEnforced() throws {
        let fixture = try Fixture()
        defer { fixture.close() }
        #expect(fixture.get("/api/collections/users/records", ["limit": "201"]).status == 400)
        #expect(fixture.get("/api/collections/users/records", ["limit": "0"]).status == 400)
        #expect(fixture.get("/api/collections/users/records", ["from": "zz"]).status == 400)
        #expect(fixture.get("/api/collections/users/records/" + String(repeating: "ab", count: 20_000)).status == 400)
        #expect(fixture.get("/api/query", ["collection": "users", "offset": "100001"]).status == 400)
        #expect(fixture.get("/api/query", ["collection": "users", "where": String(repeating: "a", count: 5_000)]).status == 400)
    }

    @Test("a list cuts a 1 MB string; the record view sends it whole")
    func longValuesAreCutInListsOnly() throws {
        let fixture = try Fixture()
        defer { fixture.close() }
        let page = try fixture.json("/api/collections/hostile/records")
        let listed = try #require((page["records"] as? [[String: Any]])?.last?["value"] as? [String: Any])
        let cut = try #require(listed["note"] as? String)
        #expect(cut.count < 1_100 && cut.hasSuffix("characters)"))
        let record = try fixture.json("/api/collections/hostile/records/208000000000000005")
        let whole = try #require((record["value"] as? [String: Any])?["note"] as? String)
        #expect(whole.utf8.count > 1_000_000)
    }

    @Test("markup, quotes and control characters in records arrive as the exact strings stored")
    func hostileValuesRoundTrip() throws {
        let fixture = try Fixture()
        defer { fixture.close() }
        let stored = CollectionInspector(snapshot: try Inspector(path: fixture.path).database.snapshot())
        for id in 1...4 {
            let key = Key(Int64(id))
            let record = try fixture.json("/api/collections/hostile/records/" + KeyHex.encode(key.bytes))
            let note = try #require((record["value"] as? [String: Any])?["note"] as? String)
            guard case .object(let fields) = try #require(try stored.record(in: "hostile", key: key)).value else {
                Issue.record("record \(id) is not an object")
                continue
            }
            #expect(fields.first { $0.name == "note" }?.value == .string(note))
        }
    }

    @Test("a query answers its records, the count of every match and the plan")
    func queryCountsAndExplains() throws {
        let fixture = try Fixture()
        defer { fixture.close() }
        let answer = try fixture.json("/api/query", ["collection": "users", "where": "age >= 70", "sort": "-age", "limit": "10"])
        let expected = (1...Self.users).filter { 18 + $0 * 7 % 60 >= 70 }.count
        let count = try #require(answer["count"] as? [String: Any])
        #expect(count["value"] as? Int == expected && count["complete"] as? Bool == true)
        let ages = try #require(answer["records"] as? [[String: Any]]).compactMap { ($0["value"] as? [String: Any])?["age"] as? Int }
        #expect(ages.count == 10 && ages == ages.sorted(by: >))
        let plan = try #require(answer["plan"] as? [String: Any])
        #expect((plan["text"] as? String)?.contains("index") == true && plan["alternatives"] is [Any])
    }

    @Test("a page of a tree decodes to its entries or children, as storedump tree --page prints it")
    func pageView() throws {
        let fixture = try Fixture()
        defer { fixture.close() }
        let shape = try fixture.json("/api/tree/users")
        let pages = try #require(shape["pages"] as? [[String: Any]])
        let leaf = try #require(pages.first { $0["kind"] as? String == "leaf" })
        let offset = try #require(leaf["offset"] as? Int)
        let page = try fixture.json("/api/page/\(offset)")
        #expect(page["kind"] as? String == "leaf" && (page["entries"] as? [Any])?.count == leaf["entries"] as? Int)
        #expect(fixture.get("/api/page/not-a-number").status == 400)
    }

    @Test("a predicate that does not parse is a 400 naming the column")
    func badPredicateNamesTheColumn() throws {
        let fixture = try Fixture()
        defer { fixture.close() }
        let response = fixture.get("/api/query", ["collection": "users", "where": "age >="])
        #expect(response.status == 400 && response.text.contains("column") && response.text.contains("\"kind\":\"badRequest\""))
    }

    @Test("an unknown collection is a 404 naming the collections there are")
    func unknownCollectionIsNotFound() throws {
        let fixture = try Fixture()
        defer { fixture.close() }
        let response = fixture.get("/api/collections/nope/records")
        #expect(response.status == 404 && response.text.contains("users"))
    }

    @Test("only Studio's own address and origin are answered, only with GET, and only once it listens")
    func requestGuard() throws {
        let fixture = try Fixture()
        defer { fixture.close() }
        #expect(fixture.get("/api/info").status == 200)
        #expect(fixture.get("/api/info", host: "localhost:8080").status == 200)
        #expect(fixture.get("/api/info", host: "attacker.example:8080").status == 403, "DNS rebinding: a foreign Host")
        #expect(fixture.get("/api/info", host: "127.0.0.1:9999").status == 403)
        #expect(fixture.get("/api/info", host: nil).status == 403)
        #expect(fixture.get("/api/info", origin: "http://attacker.example").status == 403, "a cross-site request")
        #expect(fixture.get("/api/info", origin: "http://127.0.0.1:8080").status == 200)
        let post = fixture.get("/api/info", method: "POST")
        #expect(post.status == 405 && post.headers.contains { $0.name == "Allow" })
        let silent = Studio(path: fixture.path)
        #expect(silent.respond(to: StudioRequest(path: "/api/info", host: "127.0.0.1:8080")).status == 403)
    }

    @Test("a damaged file is answered with the damage, as JSON, and verify names it")
    func damagedFileIsReportedNotFatal() throws {
        let directory = try TestFiles.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try TestFiles.w1(directory + "/w1.strata", count: 50)
        try TestFiles.damagedCopy(of: directory + "/w1.strata", to: directory + "/damaged.strata")
        let studio = Studio(path: directory + "/damaged.strata")
        studio.listening(host: "127.0.0.1", port: 8080)
        defer { studio.close() }
        for path in ["/api/info", "/api/collections", "/api/collections/users/records", "/api/stats", "/api/tree/users"] {
            let response = studio.respond(to: StudioRequest(path: path, host: "127.0.0.1:8080"))
            #expect(response.status == 500 && response.text.contains("\"kind\":\"corruption\"") && response.text.contains("\"offset\":"), "\(path)")
        }
        let verify = studio.respond(to: StudioRequest(path: "/api/verify", host: "127.0.0.1:8080"))
        let report = try JSONDecoder().decode(VerificationReport.self, from: Data(verify.body))
        #expect(!report.clean && !report.opens && report.faults.count == 1)
        #expect(studio.respond(to: StudioRequest(path: "/api/studio", host: "127.0.0.1:8080")).status == 200)
    }

    @Test("one long job runs at a time; another is told to retry")
    func longJobsRunOneAtATime() throws {
        let jobs = LongJobs()
        var inner: (any Error)?
        _ = try jobs.answer("stats", at: 1) {
            do { _ = try jobs.answer("verify", at: nil) { "{}" } } catch { inner = error }
            return "{}"
        }
        guard case .busy = try #require(inner as? StudioError) else { Issue.record("expected busy, got \(String(describing: inner))"); return }
        #expect(StudioError.busy("x").response.status == 503)
        #expect(StudioError.busy("x").response.extraHeaders.contains { $0.name == "Retry-After" })
    }

    @Test("a long job's answer is kept for its commit and computed again for a newer one")
    func longJobAnswersAreKeptPerCommit() throws {
        let jobs = LongJobs()
        var runs = 0
        for sequence: UInt64 in [7, 7, 8] { _ = try jobs.answer("stats", at: sequence) { runs += 1; return "{}" } }
        #expect(runs == 2)
    }

    @Test("a query given no time stops with an error that says how to narrow it")
    func queryTimeLimit() throws {
        let fixture = try Fixture()
        defer { fixture.close() }
        let inspector = CollectionInspector(snapshot: try Inspector(path: fixture.path).database.snapshot())
        #expect {
            try inspector.find(in: "users", where: try TextPredicate.parse("name CONTAINS 'x'"), timeLimit: .zero) { _ in true }
        } throws: { error in
            (error as? QueryTimeLimitExceeded).map { $0.examined > 0 && $0.description.contains("indexed field") } ?? false
        }
    }

    @Test("query strings are read as browsers write them: + is a space")
    func queryParametersAreFormDecoded() {
        let parameters = StudioRequest.parameters("where=age+%3E%3D+30&sort=-age&where=ignored&flag")
        #expect(parameters == ["where": "age >= 30", "sort": "-age", "flag": ""])
    }

    @Test("a commit event is one Server-Sent Event of valid JSON, whatever the tree names hold")
    func commitEventIsValidJSON() throws {
        let message = CommitEvents.message(Database.Refresh(previousSequence: 4, sequence: 6, changedTrees: ["c:a\"b", "c:users"]))
        #expect(message.hasPrefix("event: commit\ndata: ") && message.hasSuffix("\n\n"))
        let data = message.dropFirst("event: commit\ndata: ".count).dropLast(2)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(data.utf8)) as? [String: Any])
        #expect(object["sequence"] as? Int == 6 && (object["changedTrees"] as? [String]) == ["c:a\"b", "c:users"])
    }
}
