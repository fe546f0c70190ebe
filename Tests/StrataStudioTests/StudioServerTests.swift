import Foundation
import StrataStudio
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Studio behind its real HTTP server, spoken to over a plain TCP socket so every header is
/// the test's choice.
@Suite("Studio over HTTP")
struct StudioServerTests {
    /// One HTTP/1.1 connection to 127.0.0.1.
    final class Connection: @unchecked Sendable {
        private let socket: Int32
        private var received = ""
        /// Reads give up after this many seconds rather than hang the test; generous, as CI
        /// runs every suite at once on 2 cores.
        static let readTimeout = 180
        private let timeout: Int

        init(port: Int, timeout: Int = Connection.readTimeout) throws {
            self.timeout = timeout
            socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            var limit = timeval(tv_sec: timeout, tv_usec: 0)
            setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard connected == 0 else { throw TestFileError("cannot connect to port \(port)") }
        }

        /// Sends all of `text`, resuming after a signal interrupts the call.
        func send(_ text: String) throws {
            var bytes = Array(text.utf8)[...]
            while !bytes.isEmpty {
                let count = bytes.withUnsafeBytes { Glibc.send(socket, $0.baseAddress, $0.count, 0) }
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { throw TestFileError("send failed: \(String(cString: strerror(errno)))") }
                bytes = bytes.dropFirst(count)
            }
        }

        /// Reads until `text` has arrived. - Returns: everything received so far.
        @discardableResult
        func read(until text: String) throws -> String {
            var buffer = [UInt8](repeating: 0, count: 4096)
            while !received.contains(text) {
                let count = recv(socket, &buffer, buffer.count, 0)
                // A signal (another test's child process exiting) interrupts the wait: wait on.
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else {
                    let why = count == 0 ? "the server closed the connection"
                        : errno == EAGAIN || errno == EWOULDBLOCK ? "nothing came for \(timeout) s"
                        : String(cString: strerror(errno))
                    throw TestFileError("\(why) before \(text.debugDescription) arrived; got \(received.debugDescription)")
                }
                received += String(decoding: buffer[0..<count], as: UTF8.self)
            }
            return received
        }

        deinit { close(socket) }
    }

    /// Studio serving a fresh 50-user W1 file on a free port.
    struct RunningServer {
        let directory: String
        let path: String
        let port: Int
        let task: Task<Void, any Error>

        static func start() async throws -> RunningServer {
            let directory = try TestFiles.directory()
            let path = directory + "/w1.strata"
            try TestFiles.w1(path, count: 50)
            let studio = Studio(path: path)
            let (urls, announce) = AsyncStream<String>.makeStream()
            let task = Task { try await StudioServer.run(studio, port: 0) { announce.yield($0) } }
            var announcements = urls.makeAsyncIterator()
            let url = try #require(await announcements.next())
            return RunningServer(directory: directory, path: path, port: try #require(URL(string: url)?.port), task: task)
        }

        /// Stops the server (which ends its open event streams too) and removes the file.
        func stop() async {
            task.cancel()
            _ = await task.result
            try? FileManager.default.removeItem(atPath: directory)
        }
    }

    @Test("the server refuses a foreign Host, and streams another process's commit to an open page")
    func guardsAndStreamsCommits() async throws {
        let server = try await RunningServer.start()
        let port = server.port

        let rebinding = try Connection(port: port)
        try rebinding.send("GET /api/info HTTP/1.1\r\nHost: attacker.example:\(port)\r\nConnection: close\r\n\r\n")
        #expect(try rebinding.read(until: "\r\n\r\n").hasPrefix("HTTP/1.1 403"))

        let page = try Connection(port: port)
        try page.send("GET /api/events HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nAccept: text/event-stream\r\n\r\n")
        let opening = try page.read(until: "event: hello")
        #expect(opening.hasPrefix("HTTP/1.1 200") && opening.contains("text/event-stream"))
        try TestFiles.run(TestFiles.binary("StrataStudioFixture"), ["commit", server.path, "51"])
        #expect(try page.read(until: "event: commit").contains("\"changedTrees\":[\"c:users\""))
        await server.stop()
    }

    /// An app's synchronous work can hold every one of Swift's shared cooperative threads (one
    /// per core); Studio runs on its own loop, so its pages are answered meanwhile. (CI's
    /// parallel run did exactly this: a long synchronous test on one thread, a socket read on
    /// the other, and the server had nowhere to run.) The server runs in a process of its
    /// own, which blocks its shared threads at once: in this process, other suites' long
    /// synchronous tests held them too, and a test that had to win all of them at once
    /// failed when the run was busy (600 tries in 1,453 s, with the machine's two cores
    /// loaded).
    @Test("pages are answered while every shared concurrency thread is blocked")
    func answersWhileSharedThreadsAreBlocked() throws {
        let directory = try TestFiles.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/w1.strata"
        try TestFiles.w1(path, count: 50)
        let server = try TestFiles.Running(TestFiles.binary("StrataStudioFixture"), ["serve-blocked", path])
        defer { server.stop() }
        let url = try #require(try server.lines(until: "blocked").last)
        let port = try #require(URL(string: url)?.port)
        let connection = try Connection(port: port, timeout: 60)
        try connection.send("GET /api/info HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n\r\n")
        #expect(try connection.read(until: "\r\n\r\n").hasPrefix("HTTP/1.1 200"))
    }
}
