import Synchronization

/// One decoding context lent to one decode at a time, so that decoding record after record
/// allocates no context: a decode that finds it lent (another thread reading through the
/// same transaction, say) makes its own. Allocating and releasing a context per record was
/// about a sixth of decoding a W1 user (callgrind).
final class ReusableDecodingContext: Sendable {
    // A context is a class whose buffer each decode repoints; only the holder of `lent`
    // touches it.
    nonisolated(unsafe) private let context: DecodingContext
    private let lent = Atomic<Bool>(false)

    init(fields: FieldTable, collection: String) {
        context = DecodingContext(buffer: UnsafeRawBufferPointer(start: nil, count: 0), fields: fields, collection: collection, keepsRecentText: true)
    }

    /// Runs `body` with the shared context when it is free, else with a new one.
    @inline(__always)
    func withContext<R>(_ body: (DecodingContext) throws -> R) rethrows -> R {
        guard !lent.exchange(true, ordering: .acquiring) else {
            return try body(DecodingContext(buffer: UnsafeRawBufferPointer(start: nil, count: 0), fields: context.fields, collection: context.collection))
        }
        defer { lent.store(false, ordering: .releasing) }
        return try body(context)
    }
}
