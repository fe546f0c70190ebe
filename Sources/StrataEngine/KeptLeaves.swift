import Synchronization

/// The bytes of leaves the trees keep in memory as written (`LeafNode.kept(at:in:)`),
/// within a share of the page cache's budget: the cache evicts to make room for them, and
/// a checkpoint keeps no more leaves once the share is spent (those stay on disk, read
/// through the cache). A kept leaf counts until the last tree version holding it is gone.
final class KeptLeaves: Sendable {
    /// The most the kept leaves may take: three quarters of the page cache's budget, so
    /// that pages read back (after a reopen, or past the share) still have room.
    let limit: Int
    private let bytes = Atomic<Int>(0)

    init(cacheBudget: Int) { limit = cacheBudget / 4 * 3 }

    /// Counts `cost` more bytes, unless that would pass the limit. Called by the writers
    /// of trees (checkpoints, compactions); releases come from any thread.
    func reserve(_ cost: Int) -> Bool {
        var current = bytes.load(ordering: .relaxed)
        while current + cost <= limit {
            let (exchanged, original) = bytes.compareExchange(expected: current, desired: current + cost, ordering: .relaxed)
            if exchanged { return true }
            current = original
        }
        return false
    }

    /// Counts `cost` bytes less: a kept leaf was released.
    func release(_ cost: Int) { bytes.subtract(cost, ordering: .relaxed) }

    /// The bytes counted now.
    var current: Int { bytes.load(ordering: .relaxed) }
}
