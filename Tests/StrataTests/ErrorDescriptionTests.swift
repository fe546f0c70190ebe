import Foundation
import Strata
import StrataEngine
import Testing

@Suite("Errors read the same through Foundation")
struct ErrorDescriptionTests {
    /// One error of each public type of Strata and its engine.
    static let errors: [any DescribedError] = [
        StrataError.notAStrataFile(path: "/tmp/x.strata"),
        StorageError.duplicateKey(collection: "users", key: "(42)"),
        RecordError.corruptRecord(collection: "users", reason: "varint runs past the end"),
        StorageError.uniqueViolation(collection: "users", index: "email", value: "a@b"),
    ]

    @Test("localizedDescription is the error's description, not 'The operation couldn't be completed'")
    func localizedDescriptionIsTheDescription() {
        for error in Self.errors {
            #expect(error.localizedDescription == error.description)
            #expect(!error.localizedDescription.contains("error 0"))
        }
    }
}
