import StrataEngine

/// The collections one read transaction has opened, by model type. A snapshot never
/// changes, so a model's access (its catalog state, field table and codec) is resolved on
/// its first use in a transaction and reused by every later read: a loop of `read(_:primaryKey:)`
/// costs a tree lookup and a decode, not a catalog lookup each time.
final class AccessCache: Sendable {
    /// One model's access, boxed so the table holds one type and readers borrow it in place.
    final class Entry<M: Model>: @unchecked Sendable {
        let access: CollectionAccess<M>
        /// The records tree as this snapshot has it, found by name once.
        private let records: TreeHandle
        private let decode: (UnsafeRawBufferPointer) throws -> M

        /// - Throws: `StrataError.treeNotFound` when the catalog names a records tree the
        ///   snapshot lacks.
        init(_ access: CollectionAccess<M>) throws {
            self.access = access
            records = try access.engine.treeHandle(access.recordsTree, forIteration: false)
            decode = access.decoding.reusingDecoder()
        }

        /// The record whose primary key is `primaryKey`. Read through this object's own
        /// fields: a generic class's method finds `M` in the instance, where calling
        /// `CollectionAccess<M>.get` from this unspecialized code had the runtime look up the
        /// struct's metadata on every call (and copying the access cost more than the tree
        /// lookup).
        func get(primaryKey: some KeyComponent) throws -> M? { try records.withValue(forKey: primaryKey, decode) }
    }

    /// The entries by model type (nil: the snapshot lacks the collection).
    private let entries = TypeKeyedTable()

    /// `M`'s entry, made from `make` on first use; nil when the collection does not exist.
    func entry<M: Model>(_ type: M.Type, make: () throws -> CollectionAccess<M>?) rethrows -> Entry<M>? {
        guard let entry = try entries.object(for: type, make: { try make().map { try Entry($0) } }) else { return nil }
        // Keyed by M's identity, so the object is an Entry<M>: no dynamic cast needed.
        return unsafeDowncast(entry, to: Entry<M>.self)
    }
}
