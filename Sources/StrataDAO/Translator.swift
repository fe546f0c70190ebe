import Foundation
import Strata

/// Turns database models into plain objects and back (the DAO talk's translator). A
/// translator of a model with related records (a dialog's messages) uses the transaction
/// it is handed to read and write them, usually through another translator:
///
/// ```swift
/// struct DialogTranslator: Translator {
///     let messages = MessageTranslator()
///     func translate(model: DialogModel, context: any StorageReader) throws -> DialogPlainObject {
///         let stored = try context.read(MessageModel.filter(\.dialogId == model.id).sorted(by: \.date))
///         return DialogPlainObject(id: model.id, messages: try messages.translate(models: stored, context: context))
///     }
///     func translate(plain: DialogPlainObject, context: any StorageWriter) throws -> DialogModel {
///         try context.persist(try messages.translate(plains: plain.messages, context: context))
///         return DialogModel(id: plain.id)
///     }
/// }
/// ```
public protocol Translator: Sendable {
    associatedtype PlainModel: Plain
    associatedtype DatabaseModel: Model

    /// The plain object of a stored model; related records are read through `context`.
    ///
    /// - Parameters:
    ///   - model: The stored model.
    ///   - context: The read transaction.
    /// - Returns: The plain object.
    /// - Throws: Whatever stops the translation; the DAO reports it as
    ///   `DAOError.translationFailed` naming the object.
    func translate(model: DatabaseModel, context: any StorageReader) throws -> PlainModel

    /// The model to store for a plain object; related records are written through `context`
    /// in the same transaction.
    ///
    /// - Parameters:
    ///   - plain: The plain object.
    ///   - context: The write transaction.
    /// - Returns: The model to store.
    /// - Throws: Whatever stops the translation; nothing is committed then.
    func translate(plain: PlainModel, context: any StorageWriter) throws -> DatabaseModel

    /// Fills an existing model from a plain object (the talk's `translate(from:to:)`).
    /// Defaults to replacing it with `translate(plain:context:)`.
    ///
    /// - Parameters:
    ///   - plain: The plain object.
    ///   - model: The stored model, updated in place.
    ///   - context: The write transaction.
    /// - Throws: Whatever stops the translation; nothing is committed then.
    func translate(from plain: PlainModel, to model: inout DatabaseModel, context: any StorageWriter) throws

    /// Called before a model is erased, in the same transaction: erase its related records
    /// (cascade) or leave them (keep). Defaults to keeping them.
    ///
    /// - Parameters:
    ///   - model: The model being erased.
    ///   - context: The write transaction.
    /// - Throws: The storage's errors; nothing is erased then.
    func eraseRelated(of model: DatabaseModel, context: any StorageWriter) throws

    /// The collections `translate(model:context:)` reads besides the database model's, so a
    /// live query (`DAO.observe`) re-runs when they change. Nil, the default, means "any":
    /// the observation re-runs after every commit — correct, if more often than needed.
    var relatedCollections: Set<String>? { get }
}

extension Translator {
    /// Nil: a live query re-runs after every commit.
    public var relatedCollections: Set<String>? { nil }

    /// Replaces the stored model with a fresh translation of `plain`; implement it to keep
    /// stored fields the plain object does not carry.
    ///
    /// - Parameters:
    ///   - plain: The plain object.
    ///   - model: The stored model, replaced.
    ///   - context: The write transaction, for related records.
    /// - Throws: What `translate(plain:context:)` throws.
    public func translate(from plain: PlainModel, to model: inout DatabaseModel, context: any StorageWriter) throws {
        model = try translate(plain: plain, context: context)
    }

    /// Keeps related records: implement it to cascade.
    ///
    /// - Parameters:
    ///   - model: The model being erased.
    ///   - context: The write transaction.
    /// - Throws: Nothing by default; an implementation's storage errors.
    public func eraseRelated(of model: DatabaseModel, context: any StorageWriter) throws {}

    /// Each model translated in order.
    ///
    /// - Parameters:
    ///   - models: The stored models.
    ///   - context: The transaction to read related records in.
    /// - Returns: The plain objects, in order.
    /// - Throws: What `translate(model:context:)` throws.
    public func translate(models: [DatabaseModel], context: any StorageReader) throws -> [PlainModel] {
        try models.map { try translate(model: $0, context: context) }
    }

    /// Each plain object translated in order.
    ///
    /// - Parameters:
    ///   - plains: The plain objects.
    ///   - context: The write transaction, for related records.
    /// - Returns: The models, in order.
    /// - Throws: What `translate(plain:context:)` throws.
    public func translate(plains: [PlainModel], context: any StorageWriter) throws -> [DatabaseModel] {
        try plains.map { try translate(plain: $0, context: context) }
    }
}
