import Synchronization
import StrataEngine

/// The collections one read transaction has opened, by model type. A snapshot never
/// changes, so a model's access (its catalog state, field table and codec) is resolved on
/// its first use in a transaction and reused by every later read: a loop of `read(_:primaryKey:)`
/// costs a tree lookup and a decode, not a catalog lookup each time.
final class AccessCache: Sendable {
    /// One model's access, boxed so the table holds one type and readers borrow it in place.
    final class Entry<M: Model>: @unchecked Sendable {
        let access: CollectionAccess<M>
        private let engine: any TreeReading
        private let recordsTree: String
        private let decode: (UnsafeRawBufferPointer) throws -> M

        init(_ access: CollectionAccess<M>) {
            self.access = access
            (engine, recordsTree, decode) = (access.engine, access.recordsTree, access.decoding.reusingDecoder())
        }

        /// The record under `key`. Read through this object's own fields: a generic class's
        /// method finds `M` in the instance, where calling `CollectionAccess<M>.get` from this
        /// unspecialized code had the runtime look up the struct's metadata on every call
        /// (and copying the access cost more than the tree lookup).
        func get(_ key: [UInt8]) throws -> M? { try engine.withValue(key, in: recordsTree, decode) }
    }

    /// Marks a model whose collection this snapshot does not have.
    private final class Absent: Sendable {}
    private static let absent = Absent()

    private let entries = Mutex<[ObjectIdentifier: AnyObject]>([:])

    /// `M`'s entry, made from `make` on first use; nil when the collection does not exist.
    func entry<M: Model>(_ type: M.Type, make: () throws -> CollectionAccess<M>?) rethrows -> Entry<M>? {
        let id = ObjectIdentifier(type)
        if let known = entries.withLock({ $0[id] }) {
            // Keyed by M's identity, so a present entry is an Entry<M>: no dynamic cast needed.
            return known === Self.absent ? nil : unsafeDowncast(known, to: Entry<M>.self)
        }
        let entry = try make().map(Entry.init)
        entries.withLock { $0[id] = entry ?? Self.absent }
        return entry
    }
}
