#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Synchronization

/// A read-only handle following the commits other handles append to its file: a thread
/// that refreshes the handle whenever the file may have changed and reports each refresh
/// that made new commits visible.
///
/// On Linux the thread sleeps on inotify (the file's directory: appends to the file and the
/// rename a compaction ends with), so another process's commit is seen within
/// milliseconds. Where inotify is missing or fails (other systems, some network file
/// systems, the watch limit reached) it polls. It also polls at `interval` on Linux, as a
/// safety net: a refresh that finds nothing new costs two `stat` calls.
///
/// ```swift
/// let reader = try Database(path: "app.strata", options: .init(readOnly: true))
/// let watch = reader.watchCommits { result in
///     if case .success(let refresh) = result { print("now at commit", refresh.sequence) }
/// }
/// // ... later
/// watch.stop()
/// ```
public final class CommitWatch: Sendable {
    private final class Flag: Sendable { let raised = Atomic<Bool>(false) }
    /// Shared with the thread, which must not keep the watch itself alive.
    private let stopped = Flag()
    /// The write end of the pipe that wakes the thread when stopping.
    private let wake: Int32

    init(database: Database, interval: Duration, onRefresh: @escaping @Sendable (Result<Database.Refresh, Error>) -> Void) {
        var pipeEnds: [Int32] = [-1, -1]
        let piped = pipe(&pipeEnds) == 0
        wake = piped ? pipeEnds[1] : -1
        let wakeRead = piped ? pipeEnds[0] : -1
        let stopped = self.stopped
        let directory = (database.path as NSString).deletingLastPathComponent
        // Watching starts before this returns, so no change after it goes unnoticed; the
        // thread refreshes once at once for the commits made before.
        let monitor = DirectoryMonitor(directory: directory.isEmpty ? "." : directory)
        let milliseconds = Int32(clamping: interval.components.seconds * 1000 + interval.components.attoseconds / 1_000_000_000_000_000)
        let thread = Thread {
            defer {
                monitor.close()
                if wakeRead >= 0 { _ = closeDescriptor(wakeRead) }
            }
            while !stopped.raised.load(ordering: .acquiring) {
                do {
                    let refresh = try database.refresh()
                    if refresh.hasChanges { onRefresh(.success(refresh)) }
                } catch StrataError.closed {
                    return
                } catch {
                    onRefresh(.failure(error))
                    return
                }
                monitor.wait(milliseconds: max(1, milliseconds), wake: wakeRead)
            }
        }
        thread.name = "strata.commit-watch"
        thread.start()
    }

    /// Stops watching; the thread ends at once. Later calls do nothing.
    public func stop() {
        guard !stopped.raised.exchange(true, ordering: .acquiringAndReleasing) else { return }
        if wake >= 0 {
            var byte: UInt8 = 1
            _ = write(wake, &byte, 1)
            _ = closeDescriptor(wake)
        }
    }

    deinit { stop() }
}

extension Database {
    /// Follows the commits other handles — in this process or others — append to this
    /// read-only handle's file: refreshes the handle (`refresh()`) whenever the file may
    /// have changed, and calls `onRefresh` on the watch's thread after each refresh that
    /// made new commits visible, or once with the error that stopped it.
    ///
    /// Latency: on Linux, inotify wakes the watch when the file changes (typically well
    /// under 10 ms from the other process's commit to `onRefresh`); elsewhere, or when
    /// inotify is unavailable, at most `interval`. A writable handle holds the file's lock,
    /// so no one else commits: its watch never reports.
    ///
    /// - Returns: the watch; stop it (or release it) to end the thread.
    /// - Parameters:
    ///   - interval: How often to look when inotify cannot tell.
    ///   - onRefresh: Called with each refresh that found commits, or once with the error
    ///     that stopped the watch.
    public func watchCommits(interval: Duration = .milliseconds(100),
                             _ onRefresh: @escaping @Sendable (Result<Refresh, Error>) -> Void) -> CommitWatch {
        CommitWatch(database: self, interval: interval, onRefresh: onRefresh)
    }
}

/// Sleeps until something in a directory changes, a wake descriptor is readable, or a
/// timeout passes: inotify on Linux, a plain timed wait elsewhere.
private struct DirectoryMonitor: Sendable {
    private var descriptor: Int32 = -1

    init(directory: String) {
        #if os(Linux)
        let fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard fd >= 0 else { return }
        let events = UInt32(IN_MODIFY | IN_MOVED_TO | IN_CREATE | IN_CLOSE_WRITE)
        guard inotify_add_watch(fd, directory, events) >= 0 else {
            _ = closeDescriptor(fd)
            return
        }
        descriptor = fd
        #endif
    }

    /// Waits for a change, the wake descriptor or the timeout, whichever comes first, and
    /// drains the pending change events (one refresh answers them all).
    func wait(milliseconds: Int32, wake: Int32) {
        var fds = [pollfd(fd: wake, events: Int16(POLLIN), revents: 0)]
        if descriptor >= 0 { fds.append(pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)) }
        _ = poll(&fds, nfds_t(fds.count), milliseconds)
        guard descriptor >= 0 else { return }
        var buffer = [UInt8](repeating: 0, count: 4096)
        while buffer.withUnsafeMutableBytes({ read(descriptor, $0.baseAddress, $0.count) }) > 0 {}
    }

    func close() {
        if descriptor >= 0 { _ = closeDescriptor(descriptor) }
    }
}

private func closeDescriptor(_ fd: Int32) -> Int32 {
    #if canImport(Glibc)
    Glibc.close(fd)
    #else
    Darwin.close(fd)
    #endif
}
