#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Dispatch
import Synchronization

/// Admits one write transaction at a time and refuses, instead of deadlocking, a thread
/// that asks again while it holds the gate.
///
/// A write transaction belongs to the thread that began it (`WriteTransaction` is not
/// `Sendable`), so a second `enter()` from that thread can only be a nested write — which
/// would wait forever for itself. Other threads wait their turn.
///
/// ```swift
/// let gate = WriteGate()
/// guard try gate.enter() else { throw MyError.nestedTransaction }
/// defer { gate.leave() }
/// ```
public final class WriteGate: Sendable {
    private let semaphore = DispatchSemaphore(value: 1)
    /// The thread holding the gate, as `pthread_self()` bits; 0 when free.
    private let holder = Atomic<UInt>(0)

    /// An open gate.
    public init() {}

    /// Waits for the gate and takes it.
    /// - Returns: false, at once, when the calling thread already holds it.
    public func enter() -> Bool { take(waitingUntil: .distantFuture) }

    /// Takes the gate if no thread holds it, without waiting: for background work that
    /// should give way to the writer rather than queue in front of it.
    /// - Returns: false when another thread, or the calling one, holds it.
    public func tryEnter() -> Bool { take(waitingUntil: .now()) }

    private func take(waitingUntil deadline: DispatchTime) -> Bool {
        let me = Self.currentThread
        if holder.load(ordering: .acquiring) == me { return false }
        guard semaphore.wait(timeout: deadline) == .success else { return false }
        holder.store(me, ordering: .releasing)
        return true
    }

    /// Releases the gate. Called once per successful `enter()`, from any thread.
    public func leave() {
        holder.store(0, ordering: .releasing)
        semaphore.signal()
    }

    private static var currentThread: UInt {
        #if canImport(Darwin)
        UInt(bitPattern: pthread_self())
        #else
        UInt(pthread_self())
        #endif
    }
}
