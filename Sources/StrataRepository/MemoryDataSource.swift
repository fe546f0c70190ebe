import Foundation
import Synchronization

/// A bounded in-memory data source: the fast cache in front of disk and network. When full,
/// an insert evicts one item chosen by the eviction policy.
///
/// ```swift
/// let cache = MemoryDataSource<Book>(capacity: 500, eviction: .leastRecentlyUsed)
/// ```
public final class MemoryDataSource<Item: Identifiable & Codable & Sendable>: DataSource where Item.ID == String {
    /// Which item makes room when the source is full.
    public enum EvictionPolicy: Sendable {
        /// Evicts the item read or written longest ago.
        case leastRecentlyUsed
        /// Evicts the item inserted first, however often it is read.
        case firstInFirstOut
    }

    private struct State {
        var items: [String: (item: Item, inserted: UInt64, used: UInt64)] = [:]
        var clock: UInt64 = 0
        mutating func tick() -> UInt64 { clock += 1; return clock }
    }

    /// Items held at most.
    public let capacity: Int
    /// Which item goes when a new one needs room.
    public let eviction: EvictionPolicy
    /// The name errors use for this source.
    public let name: String
    private let state = Mutex(State())

    /// A cache of at most `capacity` items (at least 1).
    ///
    /// - Parameters:
    ///   - capacity: The most items held; adding one more evicts one.
    ///   - eviction: Which item goes when the cache is full.
    ///   - name: The source's name in errors.
    public init(capacity: Int = 1_000, eviction: EvictionPolicy = .leastRecentlyUsed, name: String = "memory") {
        precondition(capacity > 0, "a memory data source holds at least one item")
        (self.capacity, self.eviction, self.name) = (capacity, eviction, name)
    }

    /// The number of items held.
    public var count: Int { state.withLock { $0.items.count } }

    /// Every item this source holds.
    ///
    /// - Returns: The items, in id order.
    /// - Throws: The source's errors.
    public func getAll() async throws -> [Item] {
        state.withLock { $0.items.values.map(\.item).sorted { $0.id.utf8.lexicographicallyPrecedes($1.id.utf8) } }
    }

    /// The item with this id.
    /// - Throws: `RepositoryError.recordNotFound` when this source does not hold it.
    /// - Parameter id: The item's id.
    /// - Returns: The item.
    public func getById(_ id: String) async throws -> Item {
        try state.withLock { state in
            guard var entry = state.items[id] else { throw RepositoryError.recordNotFound(id: id) }
            entry.used = state.tick()
            state.items[id] = entry
            return entry.item
        }
    }

    /// Adds the item to this source.
    /// - Throws: `RepositoryError.alreadyExists` when it holds the id already.
    /// - Parameter item: The new item.
    public func insert(_ item: Item) async throws {
        try state.withLock { state in
            guard state.items[item.id] == nil else { throw RepositoryError.alreadyExists(id: item.id) }
            if state.items.count >= capacity { evictOne(&state) }
            let now = state.tick()
            state.items[item.id] = (item, now, now)
        }
    }

    /// Replaces the item in this source.
    /// - Throws: `RepositoryError.recordNotFound` when it does not hold the id.
    /// - Parameter item: The item, replacing the one with its id.
    public func update(_ item: Item) async throws {
        try state.withLock { state in
            guard let entry = state.items[item.id] else { throw RepositoryError.recordNotFound(id: item.id) }
            state.items[item.id] = (item, entry.inserted, state.tick())
        }
    }

    /// Removes every item from this source.
    ///
    /// - Throws: The source's errors.
    public func clean() async throws { state.withLock { $0.items.removeAll() } }

    /// Removes the item with this id.
    /// - Throws: `RepositoryError.recordNotFound` when this source does not hold it.
    /// - Parameter id: The id of the item to remove.
    public func deleteById(_ id: String) async throws {
        try state.withLock { state in
            guard state.items.removeValue(forKey: id) != nil else { throw RepositoryError.recordNotFound(id: id) }
        }
    }

    private func evictOne(_ state: inout State) {
        let victim = state.items.min { a, b in
            eviction == .leastRecentlyUsed ? a.value.used < b.value.used : a.value.inserted < b.value.inserted
        }
        if let victim { state.items[victim.key] = nil }
    }
}
