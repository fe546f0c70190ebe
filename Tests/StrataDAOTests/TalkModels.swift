import Foundation
import Strata
import StrataDAO

// The DAO talk's example model set: plain objects, database models and translators.

enum Gender: String, Codable, Sendable { case female, male }

struct UserPlainObject: Plain {
    let id: Int
    let name: String
    let bio: String?
    let username: String
    let email: String?
    let phone: String
    let birthDate: Date?
    let gender: Gender?
    var uniqueId: UniqueID { UniqueID(id) }
}

struct UserModel: Model {
    var id: Int64
    var name: String
    var bio: String?
    var username: String
    var email: String?
    var phone: String
    var birthDate: Date?
    var gender: Gender?
    static let schema = Schema<UserModel>(primaryKey: \.id, indexes: [.unique(\.username)])
}

struct UserTranslator: Translator {
    func translate(model m: UserModel, context: any StorageReader) throws -> UserPlainObject {
        UserPlainObject(id: Int(m.id), name: m.name, bio: m.bio, username: m.username, email: m.email, phone: m.phone, birthDate: m.birthDate, gender: m.gender)
    }

    func translate(plain p: UserPlainObject, context: any StorageWriter) throws -> UserModel {
        UserModel(id: Int64(p.id), name: p.name, bio: p.bio, username: p.username, email: p.email, phone: p.phone, birthDate: p.birthDate, gender: p.gender)
    }
}

struct ProjectWorkerPlainObject: Codable, Hashable, Sendable {
    let userId: Int
    let roleId: Int
    let hourlyRate: Double
}

struct RolePlainObject: Codable, Hashable, Sendable {
    let id: Int
    let title: String
}

struct ProjectPlainObject: Plain {
    let id: Int
    let name: String
    let workers: [ProjectWorkerPlainObject]
    let roles: [RolePlainObject]
    let budget: Int
    let isArchived: Bool
    let workTime: Double
    let averageRate: Double
    let currency: String
    var uniqueId: UniqueID { UniqueID(id) }
}

/// Workers and roles are values of the project, stored inside its record.
struct ProjectModel: Model {
    var id: Int64
    var name: String
    var workers: [ProjectWorkerPlainObject]
    var roles: [RolePlainObject]
    var budget: Int
    var isArchived: Bool
    var workTime: Double
    var averageRate: Double
    var currency: String
    static let schema = Schema<ProjectModel>(primaryKey: \.id, indexes: [.index(\.isArchived)])
}

struct ProjectTranslator: Translator {
    func translate(model m: ProjectModel, context: any StorageReader) throws -> ProjectPlainObject {
        ProjectPlainObject(id: Int(m.id), name: m.name, workers: m.workers, roles: m.roles, budget: m.budget, isArchived: m.isArchived,
                           workTime: m.workTime, averageRate: m.averageRate, currency: m.currency)
    }

    func translate(plain p: ProjectPlainObject, context: any StorageWriter) throws -> ProjectModel {
        ProjectModel(id: Int64(p.id), name: p.name, workers: p.workers, roles: p.roles, budget: p.budget, isArchived: p.isArchived,
                     workTime: p.workTime, averageRate: p.averageRate, currency: p.currency)
    }
}

struct CommentPlainObject: Plain {
    let id: Int
    let imageURL: URL?
    let username: String
    let content: String
    let likesCount: Int
    let isLiked: Bool
    let publicationDate: Date
    var uniqueId: UniqueID { UniqueID(id) }
}

struct CommentModel: Model {
    var id: Int64
    var imageURL: URL?
    var username: String
    var content: String
    var likesCount: Int
    var isLiked: Bool
    var publicationDate: Date
    static let schema = Schema<CommentModel>(primaryKey: \.id, indexes: [.index(\.publicationDate)])
}

struct CommentTranslator: Translator {
    func translate(model m: CommentModel, context: any StorageReader) throws -> CommentPlainObject {
        CommentPlainObject(id: Int(m.id), imageURL: m.imageURL, username: m.username, content: m.content, likesCount: m.likesCount,
                           isLiked: m.isLiked, publicationDate: m.publicationDate)
    }

    func translate(plain p: CommentPlainObject, context: any StorageWriter) throws -> CommentModel {
        CommentModel(id: Int64(p.id), imageURL: p.imageURL, username: p.username, content: p.content, likesCount: p.likesCount,
                     isLiked: p.isLiked, publicationDate: p.publicationDate)
    }
}

struct MessagePlainObject: Plain {
    let id: Int
    let date: Date
    let text: String
    let senderId: Int
    let receiverId: Int
    let type: Int
    let isIncoming: Bool
    let isRead: Bool
    var uniqueId: UniqueID { UniqueID(id) }
}

struct DialogPlainObject: Plain {
    let id: Int
    let isPinned: Bool
    let messages: [MessagePlainObject]
    var uniqueId: UniqueID { UniqueID(id) }
}

/// Messages are stored objects of their own (the talk's `MessageModelObject`), with an
/// index for queries across dialogs; a dialog holds their ids, in order.
struct MessageModel: Model {
    var id: Int64
    var dialogId: Int64
    var date: Date
    var text: String
    var senderId: Int64
    var receiverId: Int64
    var type: Int
    var isIncoming: Bool
    var isRead: Bool
    static let schema = Schema<MessageModel>(primaryKey: \.id, indexes: [.index(\.isRead, \.isIncoming), .index(\.dialogId)])
}

struct DialogModel: Model {
    var id: Int64
    var isPinned: Bool
    var messageIds: [Int64]
    static let schema = Schema<DialogModel>(primaryKey: \.id, indexes: [.index(\.isPinned)])
}

struct MessagesTranslator: Translator {
    /// The dialog the messages being written belong to.
    var dialogId: Int64 = 0

    func translate(model m: MessageModel, context: any StorageReader) throws -> MessagePlainObject {
        MessagePlainObject(id: Int(m.id), date: m.date, text: m.text, senderId: Int(m.senderId), receiverId: Int(m.receiverId), type: m.type,
                           isIncoming: m.isIncoming, isRead: m.isRead)
    }

    func translate(plain p: MessagePlainObject, context: any StorageWriter) throws -> MessageModel {
        MessageModel(id: Int64(p.id), dialogId: dialogId, date: p.date, text: p.text, senderId: Int64(p.senderId), receiverId: Int64(p.receiverId),
                     type: p.type, isIncoming: p.isIncoming, isRead: p.isRead)
    }
}

/// The talk's nested translation: a dialog's messages go through `MessagesTranslator`, in
/// their own collection, in the same transaction. `cascade` decides what erasing a dialog
/// does to its messages.
struct DialogTranslator: Translator {
    var cascade = true

    func translate(model m: DialogModel, context: any StorageReader) throws -> DialogPlainObject {
        let stored = try context.read(MessageModel.self, primaryKeys: m.messageIds)
        guard stored.count == m.messageIds.count else {
            let missing = Set(m.messageIds).subtracting(stored.map(\.id)).sorted()[0]
            throw DAOError.relatedRecordMissing(id: UniqueID(missing), collection: MessageModel.collectionName)
        }
        let messages = try MessagesTranslator().translate(models: stored, context: context)
        return DialogPlainObject(id: Int(m.id), isPinned: m.isPinned, messages: messages)
    }

    func translate(plain p: DialogPlainObject, context: any StorageWriter) throws -> DialogModel {
        let models = try MessagesTranslator(dialogId: Int64(p.id)).translate(plains: p.messages, context: context)
        try context.persist(models)
        return DialogModel(id: Int64(p.id), isPinned: p.isPinned, messageIds: models.map(\.id))
    }

    func translate(from p: DialogPlainObject, to model: inout DialogModel, context: any StorageWriter) throws {
        // Messages the dialog no longer has are erased with it when cascading.
        let kept = Set(p.messages.map { Int64($0.id) })
        if cascade {
            for id in model.messageIds where !kept.contains(id) { try context.erase(MessageModel.self, primaryKey: id) }
        }
        model = try translate(plain: p, context: context)
    }

    func eraseRelated(of model: DialogModel, context: any StorageWriter) throws {
        guard cascade else { return }
        _ = try context.erase(MessageModel.self, primaryKeys: model.messageIds)
    }
}

enum Sample {
    static let date = Date(timeIntervalSince1970: 1_700_000_000)

    static func dialog(_ id: Int, pinned: Bool, messages: Int = 3) -> DialogPlainObject {
        DialogPlainObject(id: id, isPinned: pinned, messages: (0 ..< messages).map { n in
            MessagePlainObject(id: id * 100 + n, date: date.addingTimeInterval(Double(n)), text: "message \(n) of \(id)", senderId: n % 2, receiverId: 1 - n % 2,
                               type: 0, isIncoming: n % 2 == 0, isRead: n < 1)
        })
    }
}
