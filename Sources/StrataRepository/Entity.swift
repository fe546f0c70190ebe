import Foundation
import Strata

/// A stored record with an auto-assigned id and its creation and modification times (the
/// Realm tips article's `NBRealmEntity`). Entities are plain values; an `Accessor` creates,
/// saves and deletes them.
///
/// ```swift
/// struct UserEntity: Entity {
///     var id: Int64 = 0
///     var created = Date()
///     var modified = Date()
///     var name = ""
///     static let schema = Schema<UserEntity>.autoIncrementing(\.id)
/// }
/// ```
public protocol Entity: Model {
    var id: Int64 { get set }
    var created: Date { get set }
    var modified: Date { get set }
    /// A blank entity, for `Accessor.create` to fill in.
    init()
}
