import Foundation
import Strata
import StrataEngine
import Synchronization

/// The commits Studio's open pages hear of: the file's commit watch publishes each refresh
/// here, and every `/api/events` stream (Server-Sent Events) receives it. A page that falls
/// behind keeps only the newest few events: each names the latest commit, so the page
/// loses nothing by skipping older ones.
final class CommitEvents: Sendable {
    /// Open event streams at most; a page beyond it is told to retry later.
    static let maxSubscribers = 32

    private let subscribers = Mutex<[UInt64: AsyncStream<Database.Refresh>.Continuation]>([:])
    private let nextID = Atomic<UInt64>(0)

    /// A stream of refreshes, or nil when `maxSubscribers` streams are open.
    func subscribe() -> AsyncStream<Database.Refresh>? {
        let id = nextID.add(1, ordering: .relaxed).newValue
        let (stream, continuation) = AsyncStream<Database.Refresh>.makeStream(bufferingPolicy: .bufferingNewest(4))
        let added = subscribers.withLock { subscribers in
            guard subscribers.count < Self.maxSubscribers else { return false }
            subscribers[id] = continuation
            return true
        }
        guard added else { return nil }
        continuation.onTermination = { [weak self] _ in
            _ = self?.subscribers.withLock { $0.removeValue(forKey: id) }
        }
        return stream
    }

    var count: Int { subscribers.withLock { $0.count } }

    func publish(_ refresh: Database.Refresh) {
        for continuation in subscribers.withLock({ Array($0.values) }) { continuation.yield(refresh) }
    }

    /// Ends every stream (the server is stopping).
    func finish() {
        for continuation in subscribers.withLock({ Array($0.values) }) { continuation.finish() }
    }

    /// One event as Server-Sent Events text: `event: commit` with the sequences and the
    /// trees changed (null when the file was replaced by a compaction).
    static func message(_ refresh: Database.Refresh) -> String {
        let trees = refresh.changedTrees.map { names in
            var out = "["
            for (i, name) in names.sorted().enumerated() {
                if i > 0 { out += "," }
                RecordValue.string(name).writeJSON(to: &out)
            }
            return out + "]"
        } ?? "null"
        return "event: commit\ndata: {\"sequence\":\(refresh.sequence),\"previousSequence\":\(refresh.previousSequence),\"changedTrees\":\(trees)}\n\n"
    }

    /// The first event of every stream: the commit the page's data is as of.
    static func hello(sequence: UInt64) -> String {
        "event: hello\ndata: {\"sequence\":\(sequence)}\n\n"
    }
}
