import Foundation
import StrataTestBackends
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
    var groupId: Int64?
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

/// The storages the record layer's behaviour is checked on: the same tests, each backend.
typealias RecordBackend = StorageBackend

/// Runs `body` on a new, empty database of `backend`; the path is the file's (for `.strata`).
func withDatabase(_ backend: RecordBackend = .strata, _ body: (RecordDatabase, String) throws -> Void) throws {
    let place = UUID().uuidString
    let db = RecordDatabase(storage: try backend.make(place: place))
    try body(db, StorageBackend.directory + "/" + place + ".strata")
    try? db.close()
}

/// A group of users; deleting it detaches its users and destroys its projects.
struct Group: ActiveRecord, HasDependents {
    var id: Int64 = 0
    var createdAt = Date()
    var updatedAt = Date()
    var recordState = RecordState()
    var title = ""

    static let schema = Schema<Group>.autoIncrementing(\.id)
    static let dependents: [Dependent<Group>] = [.nullify(User.self, \.groupId), .destroy(Project.self, \.groupId)]
}

/// A group's project; deleting it destroys its tasks, and is refused while members are linked.
struct Project: ActiveRecord, HasDependents {
    var id: Int64 = 0
    var createdAt = Date()
    var updatedAt = Date()
    var recordState = RecordState()
    var name = ""
    var groupId: Int64?

    static let schema = Schema<Project>.autoIncrementing(\.id, indexes: [.index(\.groupId)])
    static let dependents: [Dependent<Project>] = [.destroy(Task.self, \.projectId), .destroy(Membership.self, \.projectId)]
}

struct Task: ActiveRecord {
    var id: Int64 = 0
    var createdAt = Date()
    var updatedAt = Date()
    var recordState = RecordState()
    var title = ""
    var projectId: Int64?

    static let schema = Schema<Task>.autoIncrementing(\.id)
}

/// The join record of users and projects (hasManyThrough).
struct Membership: ActiveRecord {
    var id: Int64 = 0
    var createdAt = Date()
    var updatedAt = Date()
    var recordState = RecordState()
    var userId: Int64?
    var projectId: Int64?

    static let schema = Schema<Membership>.autoIncrementing(\.id)
}
