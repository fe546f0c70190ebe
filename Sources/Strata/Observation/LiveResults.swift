import Observation

/// The latest value of a live query, for UI code: an `@Observable` object on the main actor
/// that SwiftUI views (or `withObservationTracking`) read like SwiftData's `@Query` results.
///
/// ```swift
/// @State var chores = LiveResults(storage.observe(Chore.query().sorted(by: \.due)))
/// // in body: ForEach(chores.value ?? []) { … }
/// ```
///
/// `value` is nil until the first result arrives; an error ends the updates and is kept in
/// `error`. Updates stop when `cancel()` is called or the object is released.
@MainActor @Observable
public final class LiveResults<Value: Sendable> {
    /// The latest result; nil before the first.
    public private(set) var value: Value?
    /// Why the updates ended, if a read failed.
    public private(set) var error: (any Error)?
    @ObservationIgnored private let consumer = Consumer()

    /// Starts consuming `results` (an `observe` sequence); `value` follows it.
    ///
    /// - Parameter results: The sequence to follow; it is consumed until it ends or this object
    ///   is released.
    public init(_ results: AsyncThrowingStream<Value, Error>) {
        consumer.task = Task { [weak self] in
            do {
                for try await value in results {
                    guard let self else { return }
                    self.value = value
                }
            } catch {
                self?.error = error
            }
        }
    }

    /// Stops the updates (the observation is released).
    public func cancel() { consumer.task?.cancel() }

    /// Holds the consuming task so it can be cancelled when the holder is released.
    private final class Consumer: @unchecked Sendable {  // set once, in init, on the main actor
        var task: Task<Void, Never>?
        deinit { task?.cancel() }
    }
}
