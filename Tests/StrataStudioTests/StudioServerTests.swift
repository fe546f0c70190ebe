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
    final class Connection {
        private let socket: Int32
        private var received = ""

        init(port: Int) throws {
            socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            // Reads give up after 60 s rather than hang the test (CI runs every suite at once on 2 cores).
            var timeout = timeval(tv_sec: 60, tv_usec: 0)
            setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard connected == 0 else { throw TestFileError("cannot connect to port \(port)") }
        }

        func send(_ text: String) {
            _ = text.withCString { Glibc.send(socket, $0, strlen($0), 0) }
        }

        /// Reads until `text` has arrived. - Returns: everything received so far.
        @discardableResult
        func read(until text: String) throws -> String {
            var buffer = [UInt8](repeating: 0, count: 4096)
            while !received.contains(text) {
                let count = recv(socket, &buffer, buffer.count, 0)
                guard count > 0 else { throw TestFileError("connection ended before \(text.debugDescription); got \(received.debugDescription)") }
                received += String(decoding: buffer[0..<count], as: UTF8.self)
            }
            return received
        }

        deinit { close(socket) }
    }

    @Test("the server refuses a foreign Host, and streams another process's commit to an open page")
    func guardsAndStreamsCommits() async throws {
        let directory = try TestFiles.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/w1.strata"
        try TestFiles.w1(path, count: 50)
        let studio = Studio(path: path)
        let (urls, announce) = AsyncStream<String>.makeStream()
        let server = Task { try await StudioServer.run(studio, port: 0) { announce.yield($0) } }
        var announcements = urls.makeAsyncIterator()
        let url = try #require(await announcements.next())
        let port = try #require(URL(string: url)?.port)

        let rebinding = try Connection(port: port)
        rebinding.send("GET /api/info HTTP/1.1\r\nHost: attacker.example:\(port)\r\nConnection: close\r\n\r\n")
        #expect(try rebinding.read(until: "\r\n\r\n").hasPrefix("HTTP/1.1 403"))

        let page = try Connection(port: port)
        page.send("GET /api/events HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nAccept: text/event-stream\r\n\r\n")
        let opening = try page.read(until: "event: hello")
        #expect(opening.hasPrefix("HTTP/1.1 200") && opening.contains("text/event-stream"))
        try TestFiles.run(TestFiles.binary("StrataStudioFixture"), ["commit", path, "51"])
        #expect(try page.read(until: "event: commit").contains("\"changedTrees\":[\"c:users\""))

        // Stopping the server ends the open event stream too.
        server.cancel()
        _ = await server.result
    }
}
