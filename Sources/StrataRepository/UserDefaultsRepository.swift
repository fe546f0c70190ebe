import Foundation
import Synchronization

/// Items in Foundation's `UserDefaults`, as in the CRUD article: one key per item,
/// `strata.repository.TABLE.ID`, in the suite the app chooses.
///
/// On Linux, swift-corelibs-foundation keeps a suite as the property list
/// `$XDG_CONFIG_HOME/SUITE.plist` (`~/.config/SUITE.plist` when the variable is unset; the
/// standard suite is named after the executable); on Apple platforms, in the app's
/// Preferences. UserDefaults is meant for small settings, not data sets: every
/// change rewrites the whole suite.
public final class UserDefaultsBackend: RepositoryBackend, @unchecked Sendable {
    // UserDefaults is thread-safe; the lock makes check-then-write sequences atomic.
    private let defaults: UserDefaults
    private let keyPrefix: String
    private let lock = Mutex(())

    /// Items of `table` in `defaults`, under keys `strata.repository.TABLE.ID`.
    ///
    /// - Parameters:
    ///   - defaults: The defaults database.
    ///   - table: The table's name.
    public init(defaults: UserDefaults = .standard, table: String) {
        self.defaults = defaults
        self.keyPrefix = "strata.repository.\(table)."
    }

    /// A suite of its own (`UserDefaults(suiteName:)`).
    ///
    /// - Parameters:
    ///   - suiteName: The suite's name.
    ///   - table: The table's name.
    /// - Throws: `RepositoryError.storage` when the suite cannot be opened.
    public convenience init(suiteName: String, table: String) throws {
        guard let defaults = UserDefaults(suiteName: suiteName) else {
            throw RepositoryError.storage(operation: "open UserDefaults suite \(suiteName)", id: nil, underlying: POSIXError(EINVAL))
        }
        self.init(defaults: defaults, table: table)
    }

    private func key(_ id: String) -> String { keyPrefix + id }

    /// The stored bytes of `id`, or nil.
    ///
    /// - Parameter id: The item's id.
    /// - Returns: The item's encoded bytes, or nil when none is stored under `id`.
    /// - Throws: The store's read errors.
    public func load(_ id: String) throws -> Data? { defaults.data(forKey: key(id)) }

    /// Stores new items, all or none.
    /// - Throws: `RepositoryError.alreadyExists` when an id is taken (nothing is stored).
    /// - Parameter items: The ids and encoded bytes to store.
    public func insert(_ items: [(id: String, data: Data)]) throws {
        try lock.withLock { _ in
            try checkInsert(items.map(\.id)) { defaults.object(forKey: key($0)) != nil }
            for (id, data) in items { defaults.set(data, forKey: key(id)) }
            defaults.synchronize()
        }
    }

    /// Replaces a stored item.
    /// - Throws: `RepositoryError.recordNotFound`.
    /// - Parameters:
    ///   - id: The item's id.
    ///   - data: Its new encoded bytes.
    public func replace(_ id: String, with data: Data) throws {
        try lock.withLock { _ in
            guard defaults.object(forKey: key(id)) != nil else { throw RepositoryError.recordNotFound(id: id) }
            defaults.set(data, forKey: key(id))
            defaults.synchronize()
        }
    }

    /// Removes items.
    /// - Throws: `RepositoryError.recordNotFound` for one not stored (nothing is removed then).
    /// - Parameter ids: The ids of the items to remove.
    public func remove(_ ids: [String]) throws {
        try lock.withLock { _ in
            try checkRemove(ids) { defaults.object(forKey: key($0)) != nil }
            for id in ids { defaults.removeObject(forKey: key(id)) }
            defaults.synchronize()
        }
    }

    /// The ids starting with `prefix`, in byte order, at most `limit`.
    ///
    /// - Parameters:
    ///   - prefix: What the ids start with; "" for all.
    ///   - limit: The most ids to return; nil for all.
    /// - Returns: The ids, in byte order.
    /// - Throws: The store's read errors.
    public func ids(prefix: String, limit: Int?) throws -> [String] {
        let keys = defaults.dictionaryRepresentation().keys.filter { $0.hasPrefix(keyPrefix) }
        return orderedIDs(keys.map { String($0.dropFirst(keyPrefix.count)) }, prefix: prefix, limit: limit)
    }
}

/// A `CRUDRepository` in UserDefaults (the CRUD article's).
public typealias UserDefaultsRepository = BackendRepository<UserDefaultsBackend>

extension BackendRepository where Backend == UserDefaultsBackend {
    /// The article's `UserDefaultsRepository(tableName:dataTransformer:)`.
    ///
    /// - Parameters:
    ///   - tableName: The table's name.
    ///   - defaults: The defaults database.
    ///   - dataTransformer: How items become bytes (JSON by default).
    public init(tableName: String, defaults: UserDefaults = .standard, dataTransformer: any DataTransformer = JSONDataTransformer()) {
        self.init(backend: UserDefaultsBackend(defaults: defaults, table: tableName), transformer: dataTransformer)
    }
}
