import Strata

/// Why a repository or data source operation failed. Every case names the item (and the
/// transformer or source involved), so an app can report or recover precisely.
public enum RepositoryError: Error, Sendable, DescribedError {
    /// No item is stored under `id` (read, update, delete).
    case recordNotFound(id: String)
    /// `create` found an item already stored under `id`; use `update` to replace it.
    case alreadyExists(id: String)
    /// The item could not be encoded by the named transformer.
    case encodingFailed(id: String, transformer: String, underlying: any Error)
    /// The stored bytes could not be decoded by the named transformer.
    case decodingFailed(id: String, transformer: String, underlying: any Error)
    /// The stored bytes were written by another transformer than the one reading them.
    case transformerMismatch(id: String, stored: String, reading: String)
    /// The stored bytes are not a repository record at all (damaged or foreign).
    case corruptRecord(id: String, reason: String)
    /// The backend failed (I/O, the database, the network); `underlying` says how.
    case storage(operation: String, id: String?, underlying: any Error)
    /// A server answered with a status the operation does not expect.
    case httpStatus(url: String, method: String, status: Int, body: String)
    /// A server did not answer in time.
    case timeout(url: String, seconds: Double)
    /// A write-through write failed on one source; the sources written before it were
    /// restored (`compensated`) or could not be (`compensationFailures` says which and why).
    case writeFailed(source: String, underlying: any Error, compensated: [String], compensationFailures: [String])

    public var description: String {
        switch self {
        case .recordNotFound(let id): "no item with id \(quoted(id))"
        case .alreadyExists(let id): "an item with id \(quoted(id)) already exists; use update to replace it"
        case .encodingFailed(let id, let t, let e): "item \(quoted(id)) could not be encoded with the \(t) transformer: \(e)"
        case .decodingFailed(let id, let t, let e): "item \(quoted(id)) could not be decoded with the \(t) transformer: \(e)"
        case .transformerMismatch(let id, let stored, let reading):
            "item \(quoted(id)) was written by the \(stored) transformer and cannot be read with \(reading); open the repository with the \(stored) transformer"
        case .corruptRecord(let id, let reason): "item \(quoted(id)) is damaged: \(reason)"
        case .storage(let operation, let id, let e): "\(operation)\(id.map { " of item \(quoted($0))" } ?? "") failed: \(e)"
        case .httpStatus(let url, let method, let status, let body): "\(method) \(url) answered \(status): \(body)"
        case .timeout(let url, let seconds): "\(url) did not answer within \(seconds) s"
        case .writeFailed(let source, let e, let compensated, let failures):
            "the write failed on source \(source): \(e); undone on \(compensated.isEmpty ? "no source" : compensated.joined(separator: ", "))"
                + (failures.isEmpty ? "" : "; could not undo on \(failures.joined(separator: "; ")) — those sources now differ")
        }
    }
}

/// Ids can be anything, including empty or 10,000 characters long: show a bounded form.
func quoted(_ id: String) -> String {
    let shown = id.count > 80 ? String(id.prefix(77)) + "…" : id
    return "'" + shown.debugDescription.dropFirst().dropLast() + "'"
}
