import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle

/// Serves a `Studio` over HTTP/1.1 with Hummingbird: every request goes to
/// `Studio.respond(to:)` on NIO's thread pool (it reads the file), except the event stream
/// `/api/events`, which stays open and sends a Server-Sent Event per commit.
public enum StudioServer {
    /// Connections idle this long are closed.
    static let idleTimeout: TimeAmount = .seconds(60)
    /// Event streams send a comment this often, so a closed page is noticed and dropped.
    static let heartbeat: Duration = .seconds(15)

    /// Runs until the task is cancelled or the process receives SIGINT or SIGTERM.
    ///
    /// - Parameters:
    ///   - studio: what to serve.
    ///   - host: the address to listen on. The default, 127.0.0.1, is reachable from this
    ///     machine only; requests must name this address (`RequestGuard`).
    ///   - port: 0 picks a free port; `onListening` receives the URL either way.
    ///   - onListening: called once the server accepts connections, with its URL.
    /// - Throws: when the address cannot be bound (the port is in use, or not permitted).
    public static func run(_ studio: Studio, host: String = "127.0.0.1", port: Int = 8080,
                           onListening: @escaping @Sendable (String) -> Void) async throws {
        // Studio's own threads: its blocking reads never wait behind (or hold up) other
        // NIO users in the process, such as an app's database driver on the shared pools.
        let readers = NIOThreadPool(numberOfThreads: readerThreads)
        readers.start()
        let executor = EventLoopExecutor.studio
        let responder = CallbackResponder<BasicRequestContext> { request, _ in
            let exchange = StudioRequest(
                method: request.method.rawValue, path: request.uri.path,
                query: StudioRequest.parameters(request.uri.query),
                host: request.head.authority, origin: request.headers[.origin])
            if exchange.path == "/api/events" { return eventStream(studio, exchange, executor: executor) }
            let answer = try await readers.runIfActive { studio.respond(to: exchange) }
            return response(answer, body: .init(byteBuffer: ByteBuffer(bytes: answer.body)))
        }
        var logger = Logger(label: "strata.studio")
        logger.logLevel = .warning
        let app = Application(
            responder: responder,
            server: .http1(configuration: .init(idleTimeout: idleTimeout)),
            configuration: .init(address: .hostname(host, port: port), serverName: "Strata Studio"),
            onServerRunning: { channel in
                let bound = channel.localAddress?.port ?? port
                studio.listening(host: host, port: bound)
                onListening("http://\(host.contains(":") ? "[\(host)]" : host):\(bound)/")
            },
            eventLoopGroupProvider: .shared(executor.group),
            logger: logger)
        var failure: (any Error)?
        do {
            // Connections are child tasks of this one, so they run on Studio's loop too.
            try await withTaskExecutorPreference(executor) { try await app.runService() }
        } catch {
            failure = error
        }
        studio.close()
        try? await readers.shutdownGracefully()
        if let failure { throw failure }
    }

    /// Threads answering requests (each blocks on the file while it reads).
    static let readerThreads = 2

    /// `/api/events`: `hello` with the current commit, then `commit` per new commit.
    private static func eventStream(_ studio: Studio, _ request: StudioRequest, executor: EventLoopExecutor) -> Response {
        if let refusal = studio.refusal(for: request) { return response(refusal, body: .init(byteBuffer: ByteBuffer(bytes: refusal.body))) }
        let sequence: UInt64
        do {
            sequence = try studio.sequence()
        } catch {
            let failure = StudioError(error).response
            return response(failure, body: .init(byteBuffer: ByteBuffer(bytes: failure.body)))
        }
        guard let commits = studio.events.subscribe() else {
            let busy = StudioError.busy("too many pages are following this file; close some").response
            return response(busy, body: .init(byteBuffer: ByteBuffer(bytes: busy.body)))
        }
        let head = StudioResponse(status: 200, contentType: "text/event-stream", body: [])
        return response(head, body: ResponseBody { writer in
            // One queue of messages: commits as they come, and a heartbeat comment.
            let (messages, queue) = AsyncStream<String>.makeStream(bufferingPolicy: .bufferingNewest(8))
            queue.yield(CommitEvents.hello(sequence: sequence))
            let forwarding = Task(executorPreference: executor) {
                for await refresh in commits { queue.yield(CommitEvents.message(refresh)) }
                queue.finish()
            }
            let beating = Task(executorPreference: executor) {
                while (try? await Task.sleep(for: heartbeat)) != nil { queue.yield(": still here\n\n") }
            }
            defer {
                forwarding.cancel()
                beating.cancel()
            }
            // Ends when the page goes away (a write fails), or the server stops: the server
            // waits for open responses, so this one must end on the shutdown signal.
            try await withGracefulShutdownHandler {
                for await message in messages { try await writer.write(ByteBuffer(string: message)) }
            } onGracefulShutdown: {
                queue.finish()
            }
            try await writer.finish(nil)
        })
    }

    private static func response(_ answer: StudioResponse, body: ResponseBody) -> Response {
        var fields = HTTPFields()
        for header in answer.headers {
            if let name = HTTPField.Name(header.name) { fields[name] = header.value }
        }
        return Response(status: .init(code: answer.status), headers: fields, body: body)
    }
}
