import Foundation
import Strata
import StrataDAO

// The DAO talk's dialogs and messages (../shared/seeds/000_…): plain objects for the app,
// database models behind translators. Shared by strata-demo, the DAO tests and the W3
// benchmark, so the example is written once.

/// A message as the app sees it (the DAO talk's `MessagePlainObject`).
public struct MessagePlainObject: Plain {
    /// Its identifier.
    public let id: Int
    /// When it was sent.
    public let date: Date
    /// Its text.
    public let text: String
    /// Who sent it.
    public let senderId: Int
    /// Who received it.
    public let receiverId: Int
    /// The app's message kind.
    public let type: Int
    /// Whether it was received rather than sent.
    public let isIncoming: Bool
    /// Whether it was read.
    public let isRead: Bool
    /// The identifier as the DAO uses it.
    public var uniqueId: UniqueID { UniqueID(id) }

    /// A message.
    ///
    /// - Parameters:
    ///   - id: The message's id.
    ///   - date: When it was sent.
    ///   - text: Its text.
    ///   - senderId: Who sent it.
    ///   - receiverId: Who it was sent to.
    ///   - type: Its kind (text, picture, …), as the app numbers them.
    ///   - isIncoming: Whether this user received it.
    ///   - isRead: Whether it has been read.
    public init(id: Int, date: Date, text: String, senderId: Int, receiverId: Int, type: Int, isIncoming: Bool, isRead: Bool) {
        (self.id, self.date, self.text, self.senderId, self.receiverId, self.type, self.isIncoming, self.isRead) =
            (id, date, text, senderId, receiverId, type, isIncoming, isRead)
    }
}

/// A dialog as the app sees it: its messages inside it.
public struct DialogPlainObject: Plain {
    /// Its identifier.
    public let id: Int
    /// Whether it is pinned.
    public let isPinned: Bool
    /// Its messages.
    public let messages: [MessagePlainObject]
    /// The identifier as the DAO uses it.
    public var uniqueId: UniqueID { UniqueID(id) }

    /// A dialog.
    ///
    /// - Parameters:
    ///   - id: The dialog's id.
    ///   - isPinned: Whether it is pinned to the top of the list.
    ///   - messages: Its messages.
    public init(id: Int, isPinned: Bool, messages: [MessagePlainObject]) {
        (self.id, self.isPinned, self.messages) = (id, isPinned, messages)
    }
}

/// Messages are stored objects of their own (the talk's `MessageModelObject`), indexed for
/// queries across dialogs; a dialog holds their ids, in order.
public struct MessageModel: Model {
    /// The message's id.
    public var id: Int64
    /// The dialog it belongs to.
    public var dialogId: Int64
    /// When it was sent.
    public var date: Date
    /// Its text.
    public var text: String
    /// Who sent it.
    public var senderId: Int64
    /// Who received it.
    public var receiverId: Int64
    /// The app's message kind.
    public var type: Int
    /// Whether it was received.
    public var isIncoming: Bool
    /// Whether it was read.
    public var isRead: Bool
    /// Keyed by id; indexed by read state and direction (unread incoming counts), and by dialog.
    public static let schema = Schema<MessageModel>(primaryKey: \.id, indexes: [.index(\.isRead, \.isIncoming), .index(\.dialogId)])
}

/// A dialog as stored: its messages are records of their own, referenced by id.
public struct DialogModel: Model {
    /// The dialog's id.
    public var id: Int64
    /// Whether it is pinned.
    public var isPinned: Bool
    /// Its messages' ids, in order.
    public var messageIds: [Int64]
    /// Keyed by id; indexed by `isPinned`.
    public static let schema = Schema<DialogModel>(primaryKey: \.id, indexes: [.index(\.isPinned)])
}

/// Messages between plain objects and database models.
public struct MessagesTranslator: Translator {
    /// The dialog the messages being written belong to.
    public var dialogId: Int64

    /// A translator writing messages of `dialogId`.
    ///
    /// - Parameter dialogId: The dialog the messages belong to.
    public init(dialogId: Int64 = 0) { self.dialogId = dialogId }

    /// The plain message of a stored one.
    ///
    /// - Parameters:
    ///   - m: The stored message.
    ///   - context: The read transaction.
    /// - Returns: The plain message.
    /// - Throws: Nothing; declared by `Translator`.
    public func translate(model m: MessageModel, context: any StorageReader) throws -> MessagePlainObject {
        MessagePlainObject(id: Int(m.id), date: m.date, text: m.text, senderId: Int(m.senderId), receiverId: Int(m.receiverId), type: m.type,
                           isIncoming: m.isIncoming, isRead: m.isRead)
    }

    /// The stored message of a plain one, in this translator's dialog.
    ///
    /// - Parameters:
    ///   - p: The plain message.
    ///   - context: The write transaction.
    /// - Returns: The model to store.
    /// - Throws: Nothing; declared by `Translator`.
    public func translate(plain p: MessagePlainObject, context: any StorageWriter) throws -> MessageModel {
        MessageModel(id: Int64(p.id), dialogId: dialogId, date: p.date, text: p.text, senderId: Int64(p.senderId), receiverId: Int64(p.receiverId),
                     type: p.type, isIncoming: p.isIncoming, isRead: p.isRead)
    }
}

/// The talk's nested translation: a dialog's messages go through `MessagesTranslator`, in
/// their own collection, in the same transaction. `cascade` decides what erasing a dialog
/// (or dropping messages from it) does to them.
public struct DialogTranslator: Translator {
    /// Whether erasing a dialog erases its messages.
    public var cascade: Bool

    /// A translator that cascades erases unless told not to.
    ///
    /// - Parameter cascade: Whether erasing a dialog erases its messages.
    public init(cascade: Bool = true) { self.cascade = cascade }

    /// A dialog's plain object holds its messages: a live query re-runs when they change.
    public var relatedCollections: Set<String>? { [MessageModel.collectionName] }

    /// The plain dialog, with its messages read in the same transaction.
    ///
    /// - Parameters:
    ///   - m: The stored dialog.
    ///   - context: The read transaction, in which its messages are read.
    /// - Returns: The plain dialog.
    /// - Throws: The storage's errors.
    public func translate(model m: DialogModel, context: any StorageReader) throws -> DialogPlainObject {
        let stored = try context.read(MessageModel.self, primaryKeys: m.messageIds)
        guard stored.count == m.messageIds.count else {
            let missing = Set(m.messageIds).subtracting(stored.map(\.id)).sorted()[0]
            throw DAOError.relatedRecordMissing(id: UniqueID(missing), collection: MessageModel.collectionName)
        }
        let messages = try MessagesTranslator().translate(models: stored, context: context)
        return DialogPlainObject(id: Int(m.id), isPinned: m.isPinned, messages: messages)
    }

    /// The stored dialog; its messages are persisted in the same transaction.
    ///
    /// - Parameters:
    ///   - p: The plain dialog.
    ///   - context: The write transaction, in which its messages are persisted.
    /// - Returns: The model to store.
    /// - Throws: The storage's errors.
    public func translate(plain p: DialogPlainObject, context: any StorageWriter) throws -> DialogModel {
        let models = try MessagesTranslator(dialogId: Int64(p.id)).translate(plains: p.messages, context: context)
        try context.persist(models)
        return DialogModel(id: Int64(p.id), isPinned: p.isPinned, messageIds: models.map(\.id))
    }

    /// Updates a stored dialog, replacing its messages.
    ///
    /// - Parameters:
    ///   - p: The plain dialog.
    ///   - model: The stored dialog, updated.
    ///   - context: The write transaction.
    /// - Throws: The storage's errors.
    public func translate(from p: DialogPlainObject, to model: inout DialogModel, context: any StorageWriter) throws {
        let kept = Set(p.messages.map { Int64($0.id) })
        if cascade {
            for id in model.messageIds where !kept.contains(id) { try context.erase(MessageModel.self, primaryKey: id) }
        }
        model = try translate(plain: p, context: context)
    }

    /// Erases the dialog's messages when `cascade` is set.
    ///
    /// - Parameters:
    ///   - model: The dialog being erased.
    ///   - context: The write transaction.
    /// - Throws: The storage's errors.
    public func eraseRelated(of model: DialogModel, context: any StorageWriter) throws {
        guard cascade else { return }
        _ = try context.erase(MessageModel.self, primaryKeys: model.messageIds)
    }
}

extension DialogPlainObject {
    /// A sample dialog: messages alternate incoming and outgoing; the first is read.
    ///
    /// - Parameters:
    ///   - id: The dialog's id; its messages' ids are derived from it.
    ///   - pinned: Whether it is pinned.
    ///   - messages: How many messages it holds.
    /// - Returns: The dialog.
    public static func sample(_ id: Int, pinned: Bool, messages: Int = 3) -> DialogPlainObject {
        DialogPlainObject(id: id, isPinned: pinned, messages: (0 ..< messages).map { n in
            MessagePlainObject(id: id * 100 + n, date: Date(timeIntervalSince1970: 1_700_000_000 + Double(n)), text: "message \(n) of \(id)",
                               senderId: n % 2, receiverId: 1 - n % 2, type: 0, isIncoming: n % 2 == 0, isRead: n < 1)
        })
    }
}
