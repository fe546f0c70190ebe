/// A query stopped because it ran longer than the time it was given
/// (`CollectionInspector.find(…, timeLimit:)`): Studio and other tools that run queries
/// typed by people bound each one this way.
public struct QueryTimeLimitExceeded: Error, DescribedError, Equatable {
    /// The time the query was given.
    public var limit: Duration
    /// Records examined before it stopped.
    public var examined: Int

    public var description: String {
        "the query ran longer than \(limit) (\(examined) records examined) and was stopped; "
            + "narrow it with a condition on an indexed field or the primary key, or add a limit without a sort"
    }
}

/// The clock a query checks as it examines records: reading the clock costs about as much
/// as checking a record, so it is read once every `stride` records.
struct QueryDeadline {
    private let limit: Duration
    private let end: ContinuousClock.Instant
    private let examined = Counter()
    private static let stride = 256

    /// A reference, so the closures the execution holds can count without `inout`.
    private final class Counter { var value = 0 }

    init(limit: Duration) {
        self.limit = limit
        end = .now + limit
    }

    /// - Throws: `QueryTimeLimitExceeded` once the time is up.
    func check() throws {
        examined.value += 1
        guard examined.value % Self.stride == 0, ContinuousClock.now >= end else { return }
        throw QueryTimeLimitExceeded(limit: limit, examined: examined.value)
    }
}
