import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A tiny HTTP/1.1 server on 127.0.0.1 for the HTTP data source's tests: one thread per
/// connection, one request per connection, answers from `handler`. No dependencies, so it
/// builds in seconds.
final class TestHTTPServer: Sendable {
    struct Request: Sendable {
        var method: String
        var path: String
        var body: Data
    }

    struct Response: Sendable {
        var status: Int
        var body: Data = Data()
        /// Seconds to wait before answering (for timeouts).
        var delay: Double = 0
    }

    let port: UInt16
    private let listener: Int32
    private let handler: @Sendable (Request) -> Response

    init(handler: @escaping @Sendable (Request) -> Response) throws {
        self.handler = handler
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.listener = listener
        var yes: Int32 = 1
        setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, length) } }
        guard bound == 0, listen(listener, 64) == 0 else { throw POSIXError(.EADDRINUSE) }
        withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { _ = getsockname(listener, $0, &length) } }
        port = UInt16(bigEndian: address.sin_port)
        Thread.detachNewThread { [handler] in
            while true {
                let connection = accept(listener, nil, nil)
                guard connection >= 0 else {
                    // stop() shut the socket down. Closing it here, not in stop(), means its
                    // descriptor cannot be reused by another server while this loop runs.
                    close(listener)
                    return
                }
                Thread.detachNewThread { Self.serve(connection, handler) }
            }
        }
    }

    var baseURL: URL { URL(string: "http://127.0.0.1:\(port)")! }

    func stop() {
        shutdown(listener, Int32(SHUT_RDWR))
    }

    private static func serve(_ connection: Int32, _ handler: @Sendable (Request) -> Response) {
        defer { close(connection) }
        var received = Data()
        var buffer = [UInt8](repeating: 0, count: 65_536)
        func readMore() -> Bool {
            let n = read(connection, &buffer, buffer.count)
            if n > 0 { received.append(contentsOf: buffer[0 ..< n]) }
            return n > 0
        }
        while received.range(of: Data("\r\n\r\n".utf8)) == nil { guard readMore() else { return } }
        let headerEnd = received.range(of: Data("\r\n\r\n".utf8))!.upperBound
        let head = String(decoding: received[..<headerEnd], as: UTF8.self).split(separator: "\r\n")
        let requestLine = head.first?.split(separator: " ") ?? []
        guard requestLine.count >= 2 else { return }
        let contentLength = head.dropFirst().compactMap { line -> Int? in
            let parts = line.split(separator: ":", maxSplits: 1)
            return parts.count == 2 && parts[0].lowercased() == "content-length" ? Int(parts[1].trimmingCharacters(in: .whitespaces)) : nil
        }.first ?? 0
        while received.count - headerEnd < contentLength { guard readMore() else { return } }
        let request = Request(method: String(requestLine[0]), path: String(requestLine[1]),
                              body: received[headerEnd ..< headerEnd + contentLength])
        let response = handler(request)
        if response.delay > 0 { Thread.sleep(forTimeInterval: response.delay) }
        let header = "HTTP/1.1 \(response.status) Status\r\nContent-Type: application/json\r\nContent-Length: \(response.body.count)\r\nConnection: close\r\n\r\n"
        let bytes = Data(header.utf8) + response.body
        _ = bytes.withUnsafeBytes { write(connection, $0.baseAddress, $0.count) }
    }
}

/// A JSON REST collection at `/items`, in memory: the server side of `HTTPDataSource`'s table.
final class ItemsEndpoint: Sendable {
    private let items = Mutex<[String: Data]>([:])
    /// When set, every request answers this status (for server-error tests).
    let failWith = Mutex<Int?>(nil)
    /// Seconds every answer waits.
    let delay = Mutex<Double>(0)

    func handle(_ request: TestHTTPServer.Request) -> TestHTTPServer.Response {
        let delay = self.delay.withLock { $0 }
        if let status = failWith.withLock({ $0 }) { return .init(status: status, body: Data("{\"error\":\"down\"}".utf8), delay: delay) }
        let parts = request.path.split(separator: "/", omittingEmptySubsequences: true).map { String($0).removingPercentEncoding ?? String($0) }
        guard parts.first == "items" else { return .init(status: 404, delay: delay) }
        let id = parts.count > 1 ? parts[1] : nil
        return items.withLock { items in
            var response: TestHTTPServer.Response
            switch (request.method, id) {
            case ("GET", nil):
                let all = items.keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }.map { items[$0]! }
                response = .init(status: 200, body: Data("[".utf8) + Data(all.joined(separator: Data(",".utf8))) + Data("]".utf8))
            case ("GET", let id?): response = items[id].map { .init(status: 200, body: $0) } ?? .init(status: 404)
            case ("POST", nil):
                let object = try? JSONSerialization.jsonObject(with: request.body) as? [String: Any]
                guard let id = object?["id"] as? String else { return .init(status: 400) }
                if items[id] != nil { response = .init(status: 409) } else {
                    items[id] = request.body
                    response = .init(status: 201)
                }
            case ("PUT", let id?):
                if items[id] == nil { response = .init(status: 404) } else {
                    items[id] = request.body
                    response = .init(status: 204)
                }
            case ("DELETE", nil):
                items.removeAll()
                response = .init(status: 204)
            case ("DELETE", let id?): response = items.removeValue(forKey: id) == nil ? .init(status: 404) : .init(status: 204)
            default: response = .init(status: 405)
            }
            response.delay = delay
            return response
        }
    }
}
