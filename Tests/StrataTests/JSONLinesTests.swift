import Foundation
import Strata
import Testing

/// Export to JSON lines and import back: every stored value kind survives, and a bad line
/// stops the import with its number and nothing written.
@Suite("JSON lines export and import")
struct JSONLinesTests {
    typealias Customer = FormatFixtureTests.Customer

    func withFile(_ body: (String) throws -> Void) throws {
        let path = NSTemporaryDirectory() + "strata-jsonl-" + UUID().uuidString + ".strata"
        defer { try? FileManager.default.removeItem(atPath: path) }
        try body(path)
    }

    func exported(_ storage: StrataStorage) throws -> [String] {
        var lines: [String] = []
        try storage.exportJSONLines { lines.append($0) }
        return lines
    }

    @Test("typed JSON reads back every value kind exactly")
    func typedJSONRoundTrips() throws {
        let value = RecordValue.object([
            .init(name: "int", value: .int(-9_223_372_036_854_775_808)), .init(name: "uint", value: .uint(.max)),
            .init(name: "whole", value: .double(5)), .init(name: "tiny", value: .double(1e-300)), .init(name: "nan", value: .double(.nan)),
            .init(name: "inf", value: .double(-.infinity)), .init(name: "text", value: .string("a\"b\\c\n\u{1F600}\u{0}")),
            .init(name: "bytes", value: .bytes(Data([0, 255, 7]))), .init(name: "date", value: .date(Date(timeIntervalSinceReferenceDate: 721_865_600.123456789))),
            .init(name: "uuid", value: .uuid(UUID(uuidString: "00000000-0000-4000-8000-000000000001")!)), .init(name: "url", value: .url("https://example.com/a?b")),
            .init(name: "decimal", value: .decimal("3.14159265358979323846")), .init(name: "none", value: .null),
            .init(name: "list", value: .array([.bool(true), .array([]), .object([])])), .init(name: "map", value: .map([.init(name: "k", value: .int(1))])),
        ])
        let back = try RecordValue(typedJSON: value.typedJSON)
        // NaN is not equal to itself: compare the text, which spells every value.
        #expect(back.typedJSON == value.typedJSON)
        guard case .object(let fields) = back, case .double(let nan) = fields[4].value else { Issue.record("not an object"); return }
        #expect(nan.isNaN)
        #expect(fields[8].value == .date(Date(timeIntervalSinceReferenceDate: 721_865_600.123456789)))
    }

    @Test("malformed typed JSON is an error naming the byte")
    func malformedTypedJSON() {
        #expect(throws: TypedJSONError.self) { try RecordValue(typedJSON: "{\"a\":1,}") }
        #expect(throws: TypedJSONError.self) { try RecordValue(typedJSON: "{\"$uuid\":\"nope\"}") }
        #expect(throws: TypedJSONError.self) { try RecordValue(typedJSON: String(repeating: "[", count: 10_000)) }
    }

    @Test("a file exported and imported into a new file reads the same through its models")
    func roundTripThroughANewFile() throws {
        try withFile { sourcePath in
            try withFile { targetPath in
                let source = try StrataStorage(path: sourcePath)
                try source.persist(FormatFixtureTests.customers())
                let lines = try exported(source)
                let target = try StrataStorage(path: targetPath)
                let report = try target.importJSONLines(lines)
                #expect(report.records == ["customers": 60])
                #expect(report.indexesLeftToTheModel == ["customers": ["initials"]])
                #expect(try target.readAll(Customer.self) == source.readAll(Customer.self))
                #expect(try target.read(Customer.filter(\.email == "c7@example.com")).map(\.id) == [7])
                // The model builds the computed index it declares on its first write.
                var next = FormatFixtureTests.customers()[0]
                next.id = 0
                next.email = "next@example.com"
                #expect(try target.create(next).id == 61)
                #expect(try target.explain(Customer.filter(\.initials == "A")).access == .indexPoints(index: "initials", count: 1))
                #expect(try exported(target).dropFirst().prefix(60) == exported(source).dropFirst())
                try source.close()
                try target.close()
            }
        }
    }

    @Test("a bad line stops the import with its number, and nothing is imported")
    func badLineRollsBack() throws {
        try withFile { sourcePath in
            try withFile { targetPath in
                let source = try StrataStorage(path: sourcePath)
                try source.persist(FormatFixtureTests.customers())
                var lines = try exported(source)
                lines[10] = String(lines[10].dropLast(2))
                let target = try StrataStorage(path: targetPath)
                #expect(throws: ImportError.self) { try target.importJSONLines(lines) }
                do { _ = try target.importJSONLines(lines) } catch let error as ImportError { #expect(error.line == 11) }
                #expect(try CollectionInspector(snapshot: target.database.snapshot()).names() == [])
                try source.close()
                try target.close()
            }
        }
    }

    @Test("a record that conflicts with the file's catalog stops the import, naming the line and the field")
    func conflictingTypeRollsBack() throws {
        try withFile { path in
            let storage = try StrataStorage(path: path)
            try storage.persist(StorageTransferTests.authors[0])
            var lines = try exported(storage)
            lines = [lines[0], lines[1].replacingOccurrences(of: "\"name\":\"Author 1\"", with: "\"name\":7").replacingOccurrences(of: "\"id\":1,", with: "\"id\":2,")]
            do {
                _ = try storage.importJSONLines(lines)
                Issue.record("imported a String into a floating field")
            } catch let error as ImportError {
                #expect(error.line == 2)
                #expect(error.reason.contains("field 'name' is stored as string"))
            }
            #expect(try storage.count(StorageTransferTests.Author.self) == 1)
            try storage.close()
        }
    }

    @Test("plain JSON (storedump dump, CollectionInspector) writes dates in UTC with Z, distantPast in the Gregorian calendar")
    func plainJSONDatesAreUTCAndGregorian() {
        #expect(RecordValue.date(Date(timeIntervalSince1970: 0)).json == "\"1970-01-01T00:00:00.000Z\"")
        #expect(RecordValue.date(.distantPast).json == "\"0000-12-30T00:00:00.000Z\"")
    }
}
