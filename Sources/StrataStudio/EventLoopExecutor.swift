import NIOCore

/// Runs Studio's tasks on its own event loop instead of Swift's shared cooperative threads.
///
/// The shared pool has one thread per core. An app that keeps those threads busy with
/// synchronous work (a long import, a test run's synchronous tests) would otherwise leave
/// Studio unable to answer a page until that work ends. Blocking file reads go to Studio's
/// reader threads, so the loop itself never waits on the disk.
final class EventLoopExecutor: TaskExecutor {
    private let loop: any EventLoop

    init(_ loop: any EventLoop) { self.loop = loop }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        loop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
