import Foundation
import Strata
import StrataRecord
import StrataTestBackends
import Testing

@Suite("ActiveRecord: relations and dependency rules")
struct RelationTests {
    @Test("belongsTo and hasMany: set the parent, list, add and remove children", arguments: RecordBackend.available)
    func belongsToAndHasMany(_ backend: RecordBackend) throws {
        try withDatabase(backend) { db, _ in
            var group = Group(title: "Engines")
            try group.save(on: db)
            var ada = User(name: "Ada", email: "ada@example.com")
            var alan = User(name: "Alan", email: "alan@example.com")
            try ada.save(on: db)
            try alan.save(on: db)
            try ada.setParent(group, \.groupId, on: db)
            try group.add(&alan, \.groupId, on: db)
            #expect(try ada.parent(Group.self, \.groupId, on: db)?.title == "Engines")
            #expect(try group.children(User.self, \.groupId, on: db).map(\.name) == ["Ada", "Alan"])
            try group.remove(&alan, \.groupId, on: db)
            #expect(alan.groupId == nil)
            #expect(try group.children(User.self, \.groupId, on: db).map(\.name) == ["Ada"])
        }
    }

    @Test("relations need saved records", arguments: RecordBackend.available)
    func unsavedRecords(_ backend: RecordBackend) throws {
        try withDatabase(backend) { db, _ in
            let group = Group(title: "Unsaved")
            var user = User(name: "Ada", email: "ada@example.com")
            #expect(throws: RecordDatabaseError.notSaved(model: "Group")) { try user.setParent(group, \.groupId, on: db) }
            #expect(throws: RecordDatabaseError.notSaved(model: "Group")) { try group.children(User.self, \.groupId, on: db) }
        }
    }

    @Test("hasManyThrough: link, list and unlink through a join record", arguments: RecordBackend.available)
    func hasManyThrough(_ backend: RecordBackend) throws {
        try withDatabase(backend) { db, _ in
            var ada = User(name: "Ada", email: "ada@example.com")
            try ada.save(on: db)
            var engine = Project(name: "Analytical Engine")
            var notes = Project(name: "Notes")
            try engine.save(on: db)
            try notes.save(on: db)
            for project in [engine, notes, engine] {
                try ada.link(project, through: Membership.self, \.userId, \.projectId, on: db) { Membership(userId: $0, projectId: $1) }
            }
            #expect(try Membership.count(on: db) == 2)  // linking twice is once
            #expect(try ada.related(Project.self, through: Membership.self, \.userId, \.projectId, on: db).map(\.name) == ["Analytical Engine", "Notes"])
            try ada.unlink(engine, through: Membership.self, \.userId, \.projectId, on: db)
            #expect(try ada.related(Project.self, through: Membership.self, \.userId, \.projectId, on: db).map(\.name) == ["Notes"])
        }
    }

    @Test("destroy cascades two levels deep; nullify detaches; all in one transaction", arguments: RecordBackend.available)
    func destroyAndNullify(_ backend: RecordBackend) throws {
        try withDatabase(backend) { db, _ in
            var group = Group(title: "Engines")
            try group.save(on: db)
            var ada = User(name: "Ada", email: "ada@example.com")
            try ada.save(on: db)
            try ada.setParent(group, \.groupId, on: db)
            var project = Project(name: "Engine", groupId: group.id)
            try project.save(on: db)
            for title in ["design", "build"] {
                var task = Task(title: title, projectId: project.id)
                try task.save(on: db)
            }
            var other = Task(title: "elsewhere")
            try other.save(on: db)
            #expect(try group.delete(on: db))
            #expect(try Project.count(on: db) == 0)
            #expect(try Task.all(on: db).map(\.title) == ["elsewhere"])
            #expect(try User.find(ada.id, on: db)?.groupId == nil)
        }
    }

    /// Deleting a user is refused while memberships refer to them.
    struct Member: ActiveRecord, HasDependents {
        var id: Int64 = 0
        var createdAt = Date()
        var updatedAt = Date()
        var recordState = RecordState()
        static let schema = Schema<Member>.autoIncrementing(\.id)
        static let dependents: [Dependent<Member>] = [.restrict(Membership.self, \.userId)]
    }

    @Test("restrict refuses the delete while children exist, and deletes nothing", arguments: RecordBackend.available)
    func restrict(_ backend: RecordBackend) throws {
        try withDatabase(backend) { db, _ in
            var member = Member()
            try member.save(on: db)
            var link = Membership(userId: member.id)
            try link.save(on: db)
            #expect(throws: RecordDeleteRestricted(model: "Member", id: member.id, dependent: "Membership", count: 1)) {
                try member.delete(on: db)
            }
            #expect(try Member.count(on: db) == 1)
            try link.delete(on: db)
            #expect(try member.delete(on: db))
        }
    }
}
