// The demo's ActiveRecord part: the iActiveRecord article's users, groups and projects.
import Foundation
import Strata
import StrataRecord

struct User: ActiveRecord {
    var id: Int64 = 0
    var createdAt = Date()
    var updatedAt = Date()
    var recordState = RecordState()
    var name = ""
    var email = ""
    var groupId: Int64?

    static let schema = Schema<User>.autoIncrementing(\.id, indexes: [.unique(\.email), .index(\.groupId)])
    static let validations: [Validation<User>] = [.presence(\.name), .uniqueness(\.email)]
}

struct Group: ActiveRecord, HasDependents {
    var id: Int64 = 0
    var createdAt = Date()
    var updatedAt = Date()
    var recordState = RecordState()
    var title = ""

    static let schema = Schema<Group>.autoIncrementing(\.id)
    static let dependents: [Dependent<Group>] = [.nullify(User.self, \.groupId)]
}

struct Project: ActiveRecord {
    var id: Int64 = 0
    var createdAt = Date()
    var updatedAt = Date()
    var recordState = RecordState()
    var name = ""

    static let schema = Schema<Project>.autoIncrementing(\.id)
}

/// Users work on projects through memberships (hasManyThrough).
struct Membership: ActiveRecord {
    var id: Int64 = 0
    var createdAt = Date()
    var updatedAt = Date()
    var recordState = RecordState()
    var userId: Int64?
    var projectId: Int64?

    static let schema = Schema<Membership>.autoIncrementing(\.id)
}

func recordTour(storage: any Storage) throws {
    let db = RecordDatabase(storage: storage)
    // The demo file is reused across runs: start the article's example afresh.
    for deleteAll in [{ try Membership.deleteAll(on: db) }, { try User.deleteAll(on: db) }, { try Group.deleteAll(on: db) }, { try Project.deleteAll(on: db) }] {
        try deleteAll()
    }

    section("ActiveRecord: records that save themselves (the iActiveRecord article)")
    var engines = Group(title: "Engines")
    try engines.save(on: db)
    var ada = User(name: "Ada", email: "ada@example.com")
    try ada.save(on: db)
    print("saved user \(ada.id) '\(ada.name)', created \(ada.createdAt.formatted(.iso8601))")
    var invalid = User(name: " ", email: "ada@example.com")
    do { try invalid.save(on: db) } catch let error as RecordInvalid {
        print("validation refused a user: \(error.errors.map { "\($0.field): \($0.key.rawValue)" }.joined(separator: ", "))")
    }

    try ada.setParent(engines, \.groupId, on: db)
    var analytical = Project(name: "Analytical Engine")
    try analytical.save(on: db)
    try ada.link(analytical, through: Membership.self, \.userId, \.projectId, on: db) { Membership(userId: $0, projectId: $1) }
    print("Ada's group: \(try ada.parent(Group.self, \.groupId, on: db)?.title ?? "none"); projects: \(try ada.related(Project.self, through: Membership.self, \.userId, \.projectId, on: db).map(\.name))")

    ada.name = "Ada Lovelace"
    print("changed fields before saving: \(ada.changedFields)")
    try ada.save(on: db)

    try db.transaction { tx in
        for name in ["Alan", "Grace", "Edsger"] {
            var user = User(name: name, email: "\(name.lowercased())@example.com", groupId: engines.id)
            try user.save(on: tx)
        }
    }
    try db.transaction { tx in
        var ghost = User(name: "Ghost", email: "ghost@example.com")
        try ghost.save(on: tx)
        tx.rollback()
    }
    print("after a committed and a rolled-back transaction: \(try User.count(on: db)) users")
    let query = User.query(on: db).where(.like(\.name, "A%")).order(by: \.name)
    print("users named A%: \(try query.fetch().map(\.name)); with their groups: \(try query.join(Group.self, on: \.groupId).map { "\($0.0.name) in \($0.1.title)" })")
    try engines.delete(on: db)
    print("deleted the group; its users are detached (nullify): \(try User.query(on: db).where(\.groupId == nil).count()) users without a group")
}
