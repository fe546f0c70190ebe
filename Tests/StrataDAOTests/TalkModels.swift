import Foundation
import Strata
import StrataDAO
import StrataExamples

// The rest of the DAO talk's example model set (dialogs and messages are in StrataExamples).

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
