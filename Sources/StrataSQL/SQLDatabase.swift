import Foundation
import Strata

/// A value bound to a SQL statement or read from a row: what `SQLStorage` stores in its
/// key, record and readable columns. Each driver converts it to its database's type.
public enum SQLValue: Sendable, Equatable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob([UInt8])
    case bool(Bool)
    case date(Date)
    case uuid(UUID)
}

/// One row of a result, read by column position.
public protocol SQLRow {
    /// The column's bytes (a BLOB or bytea), or nil for NULL.
    /// - Throws: when the column holds another type.
    func blob(at column: Int) throws -> [UInt8]?
    /// The column's integer, or nil for NULL.
    func integer(at column: Int) throws -> Int64?
}

/// A database connection inside a transaction that `SQLDatabase` opened.
public protocol SQLConnection {
    /// Runs a statement that returns no rows.
    func execute(_ sql: String, _ arguments: [SQLValue]) throws
    /// Runs a query, calling `row` for each result row until it returns false.
    func query(_ sql: String, _ arguments: [SQLValue], _ row: (any SQLRow) throws -> Bool) throws
}

/// What differs between SQL databases in the statements `SQLStorage` writes.
public struct SQLDialect: Sendable {
    /// The database's name, as `explain` shows it.
    public var name: String
    /// The column type of byte strings compared byte by byte (`BLOB`, `bytea`).
    public var bytesType: String
    /// The longest table, column or index name, in UTF-8 bytes (PostgreSQL: 63); nil for none.
    public var maxIdentifierBytes: Int?
    /// The placeholder of the n-th argument (1-based): `?` or `$n`.
    public var placeholder: @Sendable (Int) -> String
    /// The column type of a readable column holding a top-level field of this stored type.
    public var columnType: @Sendable (StoredType) -> String

    /// A dialect of these properties.
    public init(name: String, bytesType: String, maxIdentifierBytes: Int?, placeholder: @escaping @Sendable (Int) -> String,
                columnType: @escaping @Sendable (StoredType) -> String) {
        (self.name, self.bytesType, self.maxIdentifierBytes, self.placeholder, self.columnType) = (name, bytesType, maxIdentifierBytes, placeholder, columnType)
    }
}

/// A SQL database as `SQLStorage` uses it: snapshot reads and serialized write transactions.
/// `StrataSQLite` implements it with GRDB, `StrataPostgres` with postgres-nio.
public protocol SQLDatabase: Sendable {
    var dialect: SQLDialect { get }
    /// Runs `body` in a read-only transaction that sees one committed state.
    func read<R>(_ body: (any SQLConnection) throws -> R) throws -> R
    /// Runs `body` in a write transaction, one at a time per database: committed when it
    /// returns, rolled back when it throws.
    @discardableResult
    func write<R>(_ body: (any SQLConnection) throws -> R) throws -> R
    /// Closes the database's connections.
    func close() throws
    /// Tells other processes, inside the committing transaction, which collections it
    /// changed (PostgreSQL: `NOTIFY`, delivered on commit). Default: nothing.
    func announce(_ collections: Set<String>, from storage: String, in connection: any SQLConnection) throws
    /// Starts calling `handler` with the collections other storages' commits changed, and
    /// the announcing storage's id (PostgreSQL: `LISTEN`). Default: nothing.
    func listen(_ handler: @escaping @Sendable (_ storage: String, _ collections: Set<String>) -> Void) throws
}

extension SQLDatabase {
    /// Announces nothing: other processes learn of commits by polling.
    public func announce(_ collections: Set<String>, from storage: String, in connection: any SQLConnection) throws {}
    /// Listens to nothing.
    public func listen(_ handler: @escaping @Sendable (_ storage: String, _ collections: Set<String>) -> Void) throws {}
}
