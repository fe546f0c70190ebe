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
    /// - Parameter column: The 0-based column position.
    /// - Returns: The bytes, or nil for NULL.
    func blob(at column: Int) throws -> [UInt8]?
    /// The column's integer, or nil for NULL.
    ///
    /// - Parameter column: The 0-based column position.
    /// - Returns: The integer, or nil for NULL.
    /// - Throws: When the column holds another type.
    func integer(at column: Int) throws -> Int64?
}

/// A database connection inside a transaction that `SQLDatabase` opened.
public protocol SQLConnection {
    /// Runs a statement that returns no rows.
    ///
    /// - Parameters:
    ///   - sql: The statement, with the dialect's placeholders.
    ///   - arguments: The values for the placeholders, in order.
    /// - Throws: The database's error.
    func execute(_ sql: String, _ arguments: [SQLValue]) throws
    /// Runs a query, calling `row` for each result row until it returns false.
    ///
    /// - Parameters:
    ///   - sql: The query, with the dialect's placeholders.
    ///   - arguments: The values for the placeholders, in order.
    ///   - row: Reads one row (valid only during the call); returns whether to go on.
    /// - Throws: The database's error; what `row` throws.
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
    ///
    /// - Parameters:
    ///   - name: The dialect's name.
    ///   - bytesType: The column type for bytes (`BLOB`, `BYTEA`).
    ///   - maxIdentifierBytes: The longest table or column name; nil when unlimited.
    ///   - placeholder: The parameter placeholder for a 1-based position (`?`, `$1`).
    ///   - columnType: The column type for a stored field's type.
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
    ///
    /// - Parameter body: Runs statements on the connection.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` or the database throws.
    func read<R>(_ body: (any SQLConnection) throws -> R) throws -> R
    /// Runs `body` in a write transaction, one at a time per database: committed when it
    /// returns, rolled back when it throws.
    ///
    /// - Parameter body: Runs statements on the connection.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` or the database throws; nothing is committed then.
    @discardableResult
    func write<R>(_ body: (any SQLConnection) throws -> R) throws -> R
    /// Closes the database's connections.
    ///
    /// - Throws: The database's error.
    func close() throws
    /// Tells other processes, inside the committing transaction, which collections it
    /// changed (PostgreSQL: `NOTIFY`, delivered on commit). Default: nothing.
    ///
    /// - Parameters:
    ///   - collections: The collections the commit changed.
    ///   - storage: The committing storage's identity.
    ///   - connection: The committing transaction's connection.
    /// - Throws: The database's error; the commit fails then.
    func announce(_ collections: Set<String>, from storage: String, in connection: any SQLConnection) throws
    /// Starts calling `handler` with the collections other storages' commits changed, and
    /// the announcing storage's id (PostgreSQL: `LISTEN`). Default: nothing.
    ///
    /// - Parameter handler: Called with each announcement, on a background thread.
    /// - Throws: The database's error.
    func listen(_ handler: @escaping @Sendable (_ storage: String, _ collections: Set<String>) -> Void) throws
}

extension SQLDatabase {
    /// Announces nothing: other processes learn of commits by polling.
    ///
    /// - Parameters:
    ///   - collections: The collections the commit changed.
    ///   - storage: The committing storage's identity.
    ///   - connection: The connection that committed.
    /// - Throws: Nothing.
    public func announce(_ collections: Set<String>, from storage: String, in connection: any SQLConnection) throws {}
    /// Listens to nothing.
    ///
    /// - Parameter handler: Never called.
    /// - Throws: Nothing.
    public func listen(_ handler: @escaping @Sendable (_ storage: String, _ collections: Set<String>) -> Void) throws {}
}
