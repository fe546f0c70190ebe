import Foundation
import Strata
import StrataEngine
import Synchronization

/// Strata Studio: a Strata file seen in the browser. `Studio` answers the page's requests
/// (the page itself, and the JSON every view is drawn from); `StudioServer` serves it over
/// HTTP, and `storedump serve FILE` starts both.
///
/// The file is opened read-only: Studio never takes the writer's lock, so an app keeps
/// writing while it looks, and a commit watch follows the app's commits to every open page.
/// Each answer reads one snapshot, so it is consistent as of one commit.
///
/// ```swift
/// let studio = Studio(path: "app.strata")
/// try await StudioServer.run(studio, port: 8080) { url in print("Strata Studio at \(url)") }
/// ```
public final class Studio: Sendable {
    /// The file shown.
    public let path: String
    /// The decoded-page budget of Studio's read-only handle: enough for the views' working
    /// set, and a bound on what a walk of a large file (space analysis) leaves in memory.
    public static let cacheSize = 256 << 20
    let events = CommitEvents()
    private let file = Mutex(OpenFile())
    private let requestGuard = Mutex<RequestGuard?>(nil)
    let longJobs = LongJobs()

    /// The file as opened, and the watch that follows its commits. Both are nil until a
    /// request needs them, and again after the watch stops, so a file that could not be
    /// opened (damage, or not yet created) is tried again on the next request.
    private struct OpenFile {
        var inspector: Inspector?
        var watch: CommitWatch?
    }

    /// - Parameter path: the Strata file. It is opened on the first request, not here, so a
    ///   damaged file still gets a page that shows the damage.
    public init(path: String) {
        self.path = path
    }

    /// Tells Studio the address it is served on: requests naming another `Host`, or coming
    /// from another origin, are refused from then on. Until it is called, every request is.
    ///
    /// - Parameters:
    ///   - host: The host name or address the server is bound to.
    ///   - port: The port it listens on.
    public func listening(host: String, port: Int) {
        requestGuard.withLock { $0 = RequestGuard(host: host, port: port) }
    }

    /// Stops following the file and ends every event stream.
    public func close() {
        let watch = file.withLock { file in
            defer { file = OpenFile() }
            return file.watch
        }
        watch?.stop()
        events.finish()
    }

    /// The answer to one request: the page and its assets, or a view's JSON. Blocking (it
    /// reads the file): call it off the server's event loop.
    ///
    /// - Parameter request: The request.
    /// - Returns: The response: a status, headers and body.
    public func respond(to request: StudioRequest) -> StudioResponse {
        if let refusal = refusal(for: request) { return refusal }
        do {
            return try route(request)
        } catch {
            return StudioError(error).response
        }
    }

    /// Nil when the request may proceed (see `RequestGuard`).
    func refusal(for request: StudioRequest) -> StudioResponse? {
        guard let requestGuard = requestGuard.withLock({ $0 }) else {
            return StudioError.forbidden("Studio is not listening yet").response
        }
        return requestGuard.refusal(for: request)
    }

    private func route(_ request: StudioRequest) throws -> StudioResponse {
        let segments = request.segments
        switch segments.first {
        case nil, "index.html": return .asset(StudioAssets.page, type: "text/html")
        case "studio.js": return .asset(StudioAssets.script, type: "text/javascript")
        case "studio.css": return .asset(StudioAssets.style, type: "text/css")
        case "api": break
        default: throw StudioError.notFound("no page at \(request.path)")
        }
        let api = StudioAPI(studio: self, request: request)
        switch Array(segments.dropFirst()) {
        case ["studio"]: return try api.about()
        case ["info"]: return try api.info()
        case ["collections"]: return try api.collections()
        case let parts where parts.count == 3 && parts[0] == "collections" && parts[2] == "records": return try api.records(in: parts[1])
        case let parts where parts.count == 4 && parts[0] == "collections" && parts[2] == "records": return try api.record(in: parts[1], keyHex: parts[3])
        case ["query"]: return try api.query()
        case ["stats"]: return try api.space()
        case let parts where parts.count == 2 && parts[0] == "tree": return try api.tree(parts[1])
        case let parts where parts.count == 2 && parts[0] == "page": return try api.page(at: parts[1])
        case ["verify"]: return try api.verify()
        default: throw StudioError.notFound("no view at \(request.path); see the API list in docs/STUDIO.md")
        }
    }

    // MARK: The file

    /// The open file, opened (and its commits followed) on first use.
    /// - Throws: why the file cannot be opened; the next call tries again.
    func inspector() throws -> Inspector {
        try file.withLock { file in
            if let inspector = file.inspector { return inspector }
            let inspector = try Inspector(path: path, cacheSize: Self.cacheSize)
            file.inspector = inspector
            file.watch = inspector.database.watchCommits { [weak self] result in self?.followed(result) }
            return inspector
        }
    }

    /// The commit the open file is at, for event streams to start from.
    func sequence() throws -> UInt64 {
        try inspector().database.statistics().commitSequence
    }

    private func followed(_ result: Result<Database.Refresh, any Error>) {
        switch result {
        case .success(let refresh):
            if refresh.changedTrees == nil {
                // Another process compacted the file into a new one: read that one from now on.
                let old = file.withLock { file in
                    defer { file = OpenFile() }
                    return file.watch
                }
                old?.stop()
            }
            events.publish(refresh)
        case .failure:
            // The watch has stopped; the next request opens the file again.
            file.withLock { $0 = OpenFile() }
        }
    }
}

/// Space analysis, tree walks and verification read the whole file: on a large file they
/// take seconds. One runs at a time (another request meanwhile is told to retry, with
/// `Retry-After`), and their answers are kept for the commit they describe.
final class LongJobs: Sendable {
    private let running = Mutex<Void>(())
    private let answers = Mutex<[String: (sequence: UInt64, json: String)]>([:])
    private static let maxAnswers = 32

    /// The answer for `key` at `sequence`, computed by `body` unless already known; nil
    /// `sequence` computes it every time.
    /// - Throws: `StudioError.busy` while another long job runs; what `body` throws.
    func answer(_ key: String, at sequence: UInt64?, _ body: () throws -> String) throws -> String {
        if let sequence, let known = answers.withLock({ $0[key] }), known.sequence == sequence { return known.json }
        let computed = try running.withLockIfAvailable { _ in try body() }
        guard let json = computed else {
            throw StudioError.busy("another long job (space analysis, tree walk or verify) is running; retry in a moment")
        }
        if let sequence {
            answers.withLock { answers in
                if answers.count >= Self.maxAnswers { answers.removeAll() }
                answers[key] = (sequence, json)
            }
        }
        return json
    }
}
