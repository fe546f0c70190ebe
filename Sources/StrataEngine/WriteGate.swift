#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Dispatch
import Synchronization

/// Admits one write transaction at a time, in the order threads asked, and refuses, instead
/// of deadlocking, a thread that asks again while it holds the gate.
///
/// A write transaction belongs to the thread that began it (`WriteTransaction` is not
/// `Sendable`), so a second `enter()` from that thread can only be a nested write — which
/// would wait forever for itself. Other threads wait their turn: `leave()` hands the gate to
/// the thread that has waited longest, as GRDB's serial writer queue does. (A semaphore let
/// the leaving thread take it again at once: beside a load committing back to back, another
/// thread's `statistics()` waited 50 s, and a second writer could wait as long.)
///
/// ```swift
/// let gate = WriteGate()
/// guard gate.enter() else { throw MyError.nestedTransaction }
/// defer { gate.leave() }
/// ```
public final class WriteGate: Sendable {
    private struct State {
        var held = false
        /// The threads waiting, oldest first, each woken by its own semaphore.
        var waiting: [DispatchSemaphore] = []
    }

    private let state = Mutex(State())
    /// The thread holding the gate, as `pthread_self()` bits; 0 when free.
    private let holder = Atomic<UInt>(0)

    /// An open gate.
    public init() {}

    /// Waits for the gate, behind every thread already waiting, and takes it.
    /// - Returns: false, at once, when the calling thread already holds it.
    public func enter() -> Bool {
        if isHeldByCurrentThread { return false }
        let turn: DispatchSemaphore? = state.withLock { s in
            guard s.held else {
                s.held = true
                return nil
            }
            let turn = DispatchSemaphore(value: 0)
            s.waiting.append(turn)
            return turn
        }
        // `leave()` passes the gate on held: nothing can take it between its signal and here.
        turn?.wait()
        holder.store(Self.currentThread, ordering: .releasing)
        return true
    }

    /// Takes the gate if no thread holds it, without waiting: for background work that
    /// should give way to the writer rather than queue in front of it.
    /// - Returns: false when another thread, or the calling one, holds it.
    public func tryEnter() -> Bool {
        let me = Self.currentThread
        let taken = state.withLock { s in
            guard !s.held else { return false }
            s.held = true
            return true
        }
        if taken { holder.store(me, ordering: .releasing) }
        return taken
    }

    /// Releases the gate, to the thread that has waited longest if any. Called once per
    /// successful `enter()` or `tryEnter()`, from any thread.
    public func leave() {
        holder.store(0, ordering: .releasing)
        let next: DispatchSemaphore? = state.withLock { s in
            guard !s.waiting.isEmpty else {
                s.held = false
                return nil
            }
            return s.waiting.removeFirst()
        }
        next?.signal()
    }

    /// Whether the calling thread holds the gate.
    public var isHeldByCurrentThread: Bool { holder.load(ordering: .acquiring) == Self.currentThread }

    /// Threads waiting for the gate now (for tests of the order they are served in).
    var waitingCount: Int { state.withLock { $0.waiting.count } }

    private static var currentThread: UInt {
        #if canImport(Darwin)
        UInt(bitPattern: pthread_self())
        #else
        UInt(pthread_self())
        #endif
    }
}
