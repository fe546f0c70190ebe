import SwiftSyntaxMacroExpansion
import SwiftSyntaxMacrosGenericTestSupport
import StrataMacrosPlugin
import Testing

/// What `@StoredModel` writes, and what it refuses, as source text.
@Suite("@StoredModel expansion")
struct StoredModelExpansionTests {
    let macros: [String: MacroSpec] = [
        "StoredModel": MacroSpec(type: StoredModelMacro.self, conformances: ["Model", "RecordCodable", "DescribedModel"]),
        "Field": MacroSpec(type: FieldMacro.self),
    ]

    func expect(_ source: String, expands expanded: String, diagnostics: [DiagnosticSpec] = [], sourceLocation: SourceLocation = #_sourceLocation) {
        assertMacroExpansion(source, expandedSource: expanded, diagnostics: diagnostics, macroSpecs: macros) { failure in
            Issue.record(Comment(rawValue: failure.message), sourceLocation: sourceLocation)
        }
    }

    @Test("stored properties become fields, with optional, renamed and write-only ones coded as Codable codes them; the record codec stores number-like fields first")
    func expandsEveryStoredProperty() {
        expect("""
            @StoredModel
            public struct Note {
                var id: Int64
                @Field(originalName: "text") var body: String
                var due: Date?
                @Field(name: "kind_id") var kind: Int
                let version: Int = 2
                var title: String { body }
                static let schema = Schema<Note>(primaryKey: \\.id)
            }
            """, expands: """
            public struct Note {
                var id: Int64
                var body: String
                var due: Date?
                var kind: Int
                let version: Int = 2
                var title: String { body }
                static let schema = Schema<Note>(primaryKey: \\.id)
            }

            extension Note: Model, RecordCodable, DescribedModel {
                public static var storedFields: [Strata.StoredField<Self>] {
                    [
                        .field(\\Self.id, name: "id"),
                        .field(\\Self.body, name: "body", originalName: "text"),
                        .field(\\Self.due, name: "due"),
                        .field(\\Self.kind, name: "kind_id"),
                        .field(\\Self.version, name: "version"),
                    ]
                }

                public func encode(to record: inout Strata.RecordWriter) throws {
                    try record.encode(self.id, forKey: "id")
                    try record.encodeIfPresent(self.due, forKey: "due")
                    try record.encode(self.kind, forKey: "kind_id")
                    try record.encode(self.version, forKey: "version")
                    try record.encode(self.body, forKey: "body")
                }

                public init(from record: inout Strata.RecordReader) throws {
                    self.id = try record.decode(Int64.self, forKey: "id")
                    self.due = try record.decodeIfPresent(Date.self, forKey: "due")
                    self.kind = try record.decode(Int.self, forKey: "kind_id")
                    self.body = try record.decode(String.self, forKey: record.storedKey("body", originalNames: ["text"]))
                }

                public func encode(to encoder: any Swift.Encoder) throws {
                    var container = encoder.container(keyedBy: Strata.StoredFieldKey.self)
                    try container.encode(self.id, forKey: "id")
                    try container.encode(self.body, forKey: "body")
                    try container.encodeIfPresent(self.due, forKey: "due")
                    try container.encode(self.kind, forKey: "kind_id")
                    try container.encode(self.version, forKey: "version")
                }

                public init(from decoder: any Swift.Decoder) throws {
                    let container = try decoder.container(keyedBy: Strata.StoredFieldKey.self)
                    self.id = try container.decode(Int64.self, forKey: "id")
                    self.body = try container.decode(String.self, forKey: container.storedKey("body", originalNames: ["text"]))
                    self.due = try container.decodeIfPresent(Date.self, forKey: "due")
                    self.kind = try container.decode(Int.self, forKey: "kind_id")
                }
            }
            """)
    }

    @Test("a property without a written type is refused with the fix")
    func refusesInferredTypes() {
        expect("""
            @StoredModel
            struct Counter {
                var id: Int64
                var count = 0
            }
            """, expands: """
            struct Counter {
                var id: Int64
                var count = 0
            }
            """, diagnostics: [DiagnosticSpec(message: "@StoredModel needs the type of 'count' written out: var count: Type", line: 4, column: 9)])
    }

    @Test("CodingKeys are refused: stored names are declared with @Field(name:)")
    func refusesCodingKeys() {
        expect("""
            @StoredModel
            struct Tag {
                var id: Int64
                enum CodingKeys: String, CodingKey {
                    case id = "tag_id"
                }
            }
            """, expands: """
            struct Tag {
                var id: Int64
                enum CodingKeys: String, CodingKey {
                    case id = "tag_id"
                }
            }
            """, diagnostics: [DiagnosticSpec(message: "@StoredModel names stored fields itself: replace CodingKeys with @Field(name:) on the properties", line: 4, column: 5)])
    }

    @Test("a class is refused: a stored model is a value")
    func refusesClasses() {
        expect("""
            @StoredModel
            final class Session {
                var id: Int64 = 0
            }
            """, expands: """
            final class Session {
                var id: Int64 = 0
            }
            """, diagnostics: [DiagnosticSpec(message: "@StoredModel applies to a struct: a stored model is a value", line: 1, column: 1)])
    }
}
