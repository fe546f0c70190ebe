import Foundation
import Strata
import StrataDAO
import StrataExamples
import StrataTestBackends
import Testing

/// The backends the same DAO suite runs on, unchanged: the talk's "easy to swap the database"
/// (the Strata file, memory, SQLite, PostgreSQL).
typealias Backend = StorageBackend

func dialogs(_ storage: any Storage, cascade: Bool = true) -> DAO<AnyStorage, DialogTranslator> {
    DAO(storage: AnyStorage(storage), translator: DialogTranslator(cascade: cascade))
}

@Suite("DAO, on every storage")
struct DAOTests {
    @Test("dialogs persist with their messages and read back whole", arguments: Backend.available)
    func roundTrip(_ backend: Backend) throws {
        let storage = try backend.make()
        let dao = dialogs(storage)
        let plains = [DialogPlainObject.sample(1, pinned: true), DialogPlainObject.sample(2, pinned: false, messages: 5)]
        try dao.persist(plains)
        let read = try dao.read()
        #expect(read == plains)
        #expect(read.map(\.messages.count) == [3, 5])
        #expect(read[1].messages.map(\.text) == plains[1].messages.map(\.text))
        #expect(try storage.count(MessageModel.self) == 8, "messages are stored in their own collection")
        #expect(try dao.read(byPrimaryKey: 2)?.messages.count == 5)
        #expect(try dao.read(byPrimaryKey: 99) == nil)
    }

    @Test("read with a predicate and an order, limit and offset, and count", arguments: Backend.available)
    func predicatesAndOrder(_ backend: Backend) throws {
        let dao = dialogs(try backend.make())
        try dao.persist((1 ... 10).map { DialogPlainObject.sample($0, pinned: $0 % 3 == 0, messages: 1) })
        #expect(try dao.read(predicatedBy: #Predicate { $0.isPinned == true }, orderedBy: \.id).map(\.id) == [3, 6, 9])
        #expect(try dao.read(predicatedBy: #Predicate { $0.isPinned == false }, orderedBy: \.id, ascending: false, limit: 2, offset: 1).map(\.id) == [8, 7])
        #expect(try dao.read(orderedBy: \.id, ascending: false).first?.id == 10)
        #expect(try dao.count(predicatedBy: #Predicate { $0.isPinned }) == 3)
        #expect(try dao.count() == 10)
        #expect(try dao.read(byPrimaryKeys: [9, 99, 2]).map(\.id) == [9, 2])
    }

    @Test("messages can be queried on their own, across dialogs, through an index", arguments: Backend.available)
    func messagesOnTheirOwn(_ backend: Backend) throws {
        let storage = try backend.make()
        try dialogs(storage).persist((1 ... 4).map { DialogPlainObject.sample($0, pinned: false) })
        let unreadIncoming = MessageModel.filter(\.isRead == false && \.isIncoming == true)
        let messages = DAO(storage: AnyStorage(storage), translator: MessagesTranslator())
        #expect(try messages.read(unreadIncoming).map(\.id) == [102, 202, 302, 402])
        if backend == .strata {
            #expect(try storage.explain(unreadIncoming).access == .indexPoints(index: "isRead+isIncoming", count: 1))
        }
    }

    @Test("erasing a dialog cascades to its messages, or keeps them", arguments: Backend.available)
    func cascadeOrKeep(_ backend: Backend) throws {
        let storage = try backend.make()
        try dialogs(storage).persist([DialogPlainObject.sample(1, pinned: false), DialogPlainObject.sample(2, pinned: false)])
        #expect(try dialogs(storage, cascade: true).erase(byPrimaryKey: 1))
        #expect(try storage.count(MessageModel.self) == 3, "dialog 1's messages went with it")
        #expect(try dialogs(storage, cascade: false).erase(byPrimaryKey: 2))
        #expect(try storage.count(MessageModel.self) == 3, "dialog 2's messages were kept")
        #expect(try dialogs(storage).count() == 0)
    }

    @Test("persist replacing the stored set, erase by predicate and erase all", arguments: Backend.available)
    func eraseVariants(_ backend: Backend) throws {
        let storage = try backend.make()
        let dao = dialogs(storage)
        try dao.persist((1 ... 5).map { DialogPlainObject.sample($0, pinned: $0 == 1) })
        try dao.persist([DialogPlainObject.sample(2, pinned: true), DialogPlainObject.sample(6, pinned: false)], erasingOthers: true)
        #expect(try dao.read().map(\.id) == [2, 6])
        #expect(try storage.count(MessageModel.self) == 6)
        #expect(try dao.erase(predicatedBy: #Predicate { $0.isPinned }) == 1)
        #expect(try dao.erase(byPrimaryKeys: [6, 7]) == 1)
        try dao.persist([DialogPlainObject.sample(8, pinned: false)])
        try dao.erase()
        #expect(try dao.count() == 0)
        #expect(try storage.count(MessageModel.self) == 0)
    }

    @Test("updating a dialog replaces its messages; dropped ones are erased", arguments: Backend.available)
    func update(_ backend: Backend) throws {
        let storage = try backend.make()
        let dao = dialogs(storage)
        try dao.persist(DialogPlainObject.sample(1, pinned: false, messages: 4))
        let original = DialogPlainObject.sample(1, pinned: true, messages: 4)
        let shorter = DialogPlainObject(id: 1, isPinned: true, messages: Array(original.messages.prefix(2)))
        try dao.persist(shorter)
        let read = try #require(try dao.read(byPrimaryKey: 1))
        #expect(read.isPinned && read.messages.map(\.id) == [100, 101])
        #expect(try storage.count(MessageModel.self) == 2)
    }

    struct Refuse: Error {}

    struct RefusingTranslator: Translator {
        func translate(model: UserModel, context: any StorageReader) throws -> UserPlainObject { try UserTranslator().translate(model: model, context: context) }
        func translate(plain: UserPlainObject, context: any StorageWriter) throws -> UserModel {
            if plain.name.isEmpty { throw Refuse() }
            return try UserTranslator().translate(plain: plain, context: context)
        }
    }

    @Test("a failed persist of many leaves nothing written, and names the object", arguments: Backend.available)
    func atomicPersist(_ backend: Backend) throws {
        let storage = try backend.make()
        let dao = DAO(storage: AnyStorage(storage), translator: RefusingTranslator())
        let good = UserPlainObject(id: 1, name: "Ada", bio: nil, username: "ada", email: nil, phone: "1", birthDate: nil, gender: .female)
        let bad = UserPlainObject(id: 2, name: "", bio: nil, username: "x", email: nil, phone: "2", birthDate: nil, gender: nil)
        #expect {
            try dao.persist([good, bad])
        } throws: { error in
            guard case DAOError.translationFailed(let id, _, let underlying) = error else { return false }
            return id == 2 && underlying is Refuse
        }
        #expect(try dao.count() == 0)
    }

    @Test("a dialog whose message is missing is a typed error naming it", arguments: Backend.available)
    func missingRelated(_ backend: Backend) throws {
        let storage = try backend.make()
        try dialogs(storage, cascade: false).persist(DialogPlainObject.sample(1, pinned: false))
        try storage.erase(MessageModel.self, primaryKey: Int64(101))
        #expect {
            _ = try dialogs(storage).read(byPrimaryKey: 1)
        } throws: { error in
            guard case DAOError.relatedRecordMissing(let id, let collection) = error else { return false }
            return id == 101 && collection == "MessageModel"
        }
    }

    @Test("the talk's users, projects and comments round-trip", arguments: Backend.available)
    func talkModels(_ backend: Backend) throws {
        let storage = AnyStorage(try backend.make())
        let users = DAO(storage: storage, translator: UserTranslator())
        let user = UserPlainObject(id: 7, name: "Dmitry", bio: "iOS developer", username: "dmitry", email: "d@example.com", phone: "+7", birthDate: Date(timeIntervalSince1970: 1_700_000_000), gender: .male)
        try users.persist(user)
        #expect(try users.read(byPrimaryKey: 7).map { ($0.bio, $0.birthDate, $0.gender) } ?? (nil, nil, nil) == ("iOS developer", Date(timeIntervalSince1970: 1_700_000_000), .male))

        let projects = DAO(storage: storage, translator: ProjectTranslator())
        let project = ProjectPlainObject(id: 1, name: "DAO", workers: [.init(userId: 7, roleId: 1, hourlyRate: 50)], roles: [.init(id: 1, title: "developer")],
                                         budget: 1000, isArchived: false, workTime: 12.5, averageRate: 50, currency: "EUR")
        try projects.persist(project)
        let read = try #require(try projects.read(byPrimaryKey: 1))
        #expect(read.workers == project.workers && read.roles == project.roles && read.currency == "EUR")

        let comments = DAO(storage: storage, translator: CommentTranslator())
        let comment = CommentPlainObject(id: 3, imageURL: URL(string: "https://example.com/a.png"), username: "dmitry", content: "Nice talk", likesCount: 2,
                                         isLiked: true, publicationDate: Date(timeIntervalSince1970: 1_700_000_000))
        try comments.persist(comment)
        #expect(try comments.read(predicatedBy: #Predicate { $0.likesCount > 1 }).first?.imageURL == comment.imageURL)
    }

    @Test("async variants", arguments: Backend.available)
    func asyncAPI(_ backend: Backend) async throws {
        let dao = dialogs(try backend.make())
        try await dao.persist([DialogPlainObject.sample(1, pinned: true)])
        try await dao.persist(DialogPlainObject.sample(2, pinned: false))
        #expect(try await dao.read().count == 2)
        #expect(try await dao.count(predicatedBy: #Predicate { $0.isPinned }) == 1)
        #expect(try await dao.read(predicatedBy: #Predicate { !$0.isPinned }, orderedBy: \.id).map(\.id) == [2])
        #expect(try await dao.erase(predicatedBy: #Predicate { $0.isPinned }) == 1)
        #expect(try await dao.erase(byPrimaryKeys: [2]) == 1)
        try await dao.erase()
    }
}

/// "Simple unit tests": app logic tested against the in-memory storage.
struct InboxService {
    let dialogs: DAO<AnyStorage, DialogTranslator>

    /// The number of unread incoming messages in pinned dialogs.
    func pinnedUnreadCount() throws -> Int {
        try dialogs.read(predicatedBy: #Predicate { $0.isPinned }).reduce(0) { $0 + $1.messages.filter { $0.isIncoming && !$0.isRead }.count }
    }
}

@Test("app logic runs on MemoryStorage in a unit test, no database file needed")
func appLogicWithMemoryStorage() throws {
    let service = InboxService(dialogs: dialogs(try MemoryStorage()))
    try service.dialogs.persist([DialogPlainObject.sample(1, pinned: true), DialogPlainObject.sample(2, pinned: false), DialogPlainObject.sample(3, pinned: true)])
    #expect(try service.pinnedUnreadCount() == 2)
}
