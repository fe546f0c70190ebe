import Foundation
import Strata

/// The identifier of a plain object: a string or an integer, as in the DAO talk. Converts
/// to the database model's primary key.
///
/// ```swift
/// let id: UniqueID = 42          // or "c9f1…"
/// ```
public struct UniqueID: Hashable, Sendable, Codable, CustomStringConvertible, ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, KeyComponent {
    /// The identifier's kind and value.
    public enum Value: Hashable, Sendable, Codable {
        /// A string identifier (a UUID string, a server's id).
        case string(String)
        /// An integer identifier.
        case integer(Int64)
    }

    /// The identifier.
    public let value: Value

    /// A string identifier.
    ///
    /// - Parameter string: The identifier.
    public init(_ string: String) { value = .string(string) }
    /// An integer identifier.
    ///
    /// - Parameter integer: The identifier.
    public init(_ integer: Int64) { value = .integer(integer) }
    /// An integer identifier.
    ///
    /// - Parameter integer: The identifier.
    public init(_ integer: Int) { value = .integer(Int64(integer)) }
    /// A string identifier written as a literal.
    public init(stringLiteral value: String) { self.init(value) }
    /// An integer identifier written as a literal.
    public init(integerLiteral value: Int64) { self.init(value) }

    public var description: String {
        switch value {
        case .string(let s): s
        case .integer(let i): String(i)
        }
    }

    /// Encodes as the matching primary key: `Key(string)` or `Key(integer)`.
    ///
    /// - Parameter key: The key to append the encoding to.
    public func appendKey(to key: inout Key) {
        switch value {
        case .string(let s): key.append(s)
        case .integer(let i): key.append(i)
        }
    }
}

/// An immutable plain object the app works with; the database model behind it stays hidden
/// behind a `Translator`. Plain objects are equal when their identifiers are.
///
/// ```swift
/// struct UserPlainObject: Plain {
///     let id: Int64
///     let name: String
///     var uniqueId: UniqueID { UniqueID(id) }
/// }
/// ```
public protocol Plain: Hashable, Sendable {
    var uniqueId: UniqueID { get }
}

extension Plain {
    /// Plain objects are equal when their identifiers are (the DAO talk's rule).
    public static func == (a: Self, b: Self) -> Bool { a.uniqueId == b.uniqueId }
    /// Hashes the identifier.
    public func hash(into hasher: inout Hasher) { hasher.combine(uniqueId) }
}
