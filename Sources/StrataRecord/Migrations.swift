import Foundation
import Strata

/// Explicit, ordered, named migrations for what schema evolution cannot do by itself —
/// renaming a field, transforming values, backfilling (GRDB's `DatabaseMigrator` is the model).
/// Each runs once per file: applied names are recorded in the file, in the migration's own
/// transaction, so a crash or a throwing migration leaves neither its changes nor its record.
///
/// Adding record types or fields needs no migration: collections are created on first use
/// and records written before a field existed read it as nil or zero.
///
/// ```swift
/// var migrator = RecordMigrator()
/// migrator.register("rename fullName to name") { writer in
///     for old in try writer.readAll(PersonV1.self) {      // the model as it was stored
///         try writer.erase(PersonV1.self, primaryKey: old.id)
///         try writer.create(Person(id: old.id, name: old.fullName))
///     }
/// }
/// try migrator.migrate(db)
/// ```
public struct RecordMigrator: Sendable {
    private var migrations: [(name: String, run: @Sendable (any StorageWriter) throws -> Void)] = []

    /// A migrator with no migrations yet.
    public init() {}

    /// Adds a migration after those registered before it. Names must be unique.
    ///
    /// - Parameters:
    ///   - name: The migration's name, recorded in the file once it has run.
    ///   - migration: The changes, made in the migration's own transaction.
    public mutating func register(_ name: String, _ migration: @escaping @Sendable (any StorageWriter) throws -> Void) {
        precondition(!migrations.contains { $0.name == name }, "migration '\(name)' is registered twice")
        migrations.append((name, migration))
    }

    /// Runs, in order, the migrations `database` has not applied yet; returns their names.
    ///
    /// - Parameter database: The database to bring up to date.
    /// - Returns: The names of the migrations run now, in order.
    /// - Throws: What a migration throws; it and those after it are not recorded (each runs in
    ///   its own transaction, so those before it stay applied).
    @discardableResult
    public func migrate(_ database: RecordDatabase) throws -> [String] {
        let applied = Set(try appliedMigrations(in: database))
        var ran: [String] = []
        for (index, migration) in migrations.enumerated() where !applied.contains(migration.name) {
            try database.write { writer in
                try migration.run(writer)
                try writer.create(AppliedMigration(name: migration.name, position: index, appliedAt: Date()))
            }
            ran.append(migration.name)
        }
        return ran
    }

    /// The names of the migrations `database` has applied, in the order they ran.
    ///
    /// - Parameter database: The database.
    /// - Returns: The names.
    /// - Throws: The storage's errors.
    public func appliedMigrations(in database: RecordDatabase) throws -> [String] {
        try database.read { try $0.readAll(AppliedMigration.self) }.sorted { $0.position < $1.position }.map(\.name)
    }
}

/// One applied migration, in the `strata.migrations` collection.
struct AppliedMigration: Model {
    var name: String
    var position: Int
    var appliedAt: Date

    static let collectionName = "strata.migrations"
    static let schema = Schema<AppliedMigration>(primaryKey: \.name)
}

extension RecordDatabase {
    /// Reads every record of each type, so a model that no longer matches what the file
    /// holds fails now, naming the collection and field, rather than at some later read. Run
    /// it after migrating; skip it (it reads the whole file) when startup time matters more.
    ///
    /// - Parameter types: The record types to check.
    /// - Throws: `RecordError` naming the collection and field of the first record that does not
    ///   decode.
    public func checkRecords(_ types: [any ActiveRecord.Type]) throws {
        for type in types { try check(type) }
    }

    private func check<M: ActiveRecord>(_ type: M.Type) throws {
        try read { reader in try reader.forEach(Query<M>()) { _ in true } }
    }
}
