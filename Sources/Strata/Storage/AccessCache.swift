import Synchronization

/// The collections one read transaction has opened, by model type. A snapshot never
/// changes, so a model's access (its catalog state, field table and codec) is resolved on
/// its first use in a transaction and reused by every later read: a loop of `read(_:primaryKey:)`
/// costs a tree lookup and a decode, not a catalog lookup each time.
final class AccessCache: Sendable {
    /// One model's access (or its absence), boxed so the table holds one type.
    private final class Entry<M: Model>: @unchecked Sendable {
        let access: CollectionAccess<M>?
        init(_ access: CollectionAccess<M>?) { self.access = access }
    }

    private let entries = Mutex<[ObjectIdentifier: AnyObject]>([:])

    /// `M`'s access, made by `make` on first use.
    func access<M: Model>(_ type: M.Type, make: () throws -> CollectionAccess<M>?) rethrows -> CollectionAccess<M>? {
        let id = ObjectIdentifier(type)
        // Keyed by M's identity, so the entry is an Entry<M>: no dynamic cast needed.
        if let known = entries.withLock({ $0[id] }) { return unsafeDowncast(known, to: Entry<M>.self).access }
        let entry = Entry(try make())
        entries.withLock { $0[id] = entry }
        return entry.access
    }
}
