import NIOCore
import NIOPosix

/// Runs Studio's tasks on its own event loop instead of Swift's shared cooperative threads.
///
/// The shared pool has one thread per core. An app that keeps those threads busy with
/// synchronous work (a long import, a test run's synchronous tests) would otherwise leave
/// Studio unable to answer a page until that work ends. Blocking file reads go to Studio's
/// reader threads, so the loop itself never waits on the disk.
final class EventLoopExecutor: TaskExecutor {
    /// Studio's loop: one thread for the process, created on first use and never shut down.
    /// A task may still prefer it after its server stopped (an event stream finishing its
    /// cancellation); it must always have a live loop to run on, so neither the loop nor
    /// this executor ever goes away.
    static let studio = EventLoopExecutor(MultiThreadedEventLoopGroup(numberOfThreads: 1))

    /// The group the server's channels run on: the same single loop.
    let group: MultiThreadedEventLoopGroup
    private let loop: any EventLoop

    private init(_ group: MultiThreadedEventLoopGroup) {
        self.group = group
        loop = group.next()
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        loop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
