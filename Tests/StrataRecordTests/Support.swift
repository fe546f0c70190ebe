import Foundation
import Strata
import StrataRecord

/// The article's example: users in groups working on projects.
struct User: ActiveRecord, Equatable {
    var id: Int64 = 0
    var createdAt = Date()
    var updatedAt = Date()
    var recordState = RecordState()
    var name = ""
    var email = ""
    var age = 0
    @Ignored var sessionToken: String = ""

    static let schema = Schema<User>.autoIncrementing(\.id, indexes: [.unique(\.email), .index(\.age)])
    static let validations: [Validation<User>] = [
        .presence(\.name), .length(\.name, 2 ... 40), .format(\.email, #/[^@\s]+@[^@\s]+/#),
        .uniqueness(\.email), .range(\.age, 0 ... 150), .custom(\.name, NotReserved()),
    ]

    static func == (a: User, b: User) -> Bool {
        (a.id, a.name, a.email, a.age) == (b.id, b.name, b.email, b.age)
    }
}

/// A custom validator (the article's ARValidatorProtocol).
struct NotReserved: RecordValidator {
    func validate(_ value: String) -> [ValidationError.Key] { ["admin", "root"].contains(value) ? ["reserved"] : [] }
}

func withDatabase(_ body: (RecordDatabase, String) throws -> Void) throws {
    let path = NSTemporaryDirectory() + "strata-record-" + UUID().uuidString + ".strata"
    defer { try? FileManager.default.removeItem(atPath: path) }
    let db = try RecordDatabase(path: path)
    try body(db, path)
    try? db.close()
}
