import Synchronization

/// Objects kept per Swift type, found by the type's identity: a short list searched in order,
/// because a process or a transaction uses a handful of model types, and comparing a few
/// identities costs less than hashing one (a `Dictionary` in a typed read's path was 5% of it).
///
/// An entry may be nil: "looked at, nothing to keep". What a caller stores for a type `T` is
/// its own to downcast (`unsafeDowncast`: keyed by `T`'s identity, it is what was stored for `T`).
final class TypeKeyedTable: Sendable {
    private let entries = Mutex<[(type: ObjectIdentifier, object: (any AnyObject & Sendable)?)]>([])

    /// The object kept for `type`, made by `make` the first time `type` is asked for.
    func object(for type: Any.Type, make: () throws -> (any AnyObject & Sendable)?) rethrows -> (any AnyObject & Sendable)? {
        let id = ObjectIdentifier(type)
        // Unwrapped with `if let`, not through `Optional.map` or a chain that wraps the result
        // again: in the unspecialized callers each generic step looked up metadata per call.
        // (The search is linear: fine for the handful of types a transaction or a process
        // encodes; a table of hundreds would want a hash.)
        if let known = entries.withLock({ entries in entries.first { $0.type == id } }) { return known.object }
        let object = try make()
        entries.withLock { $0.append((id, object)) }
        return object
    }
}
