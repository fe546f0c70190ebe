import Strata
import StrataEngine

/// Why Studio could not answer, as the JSON every failed `/api/…` request returns:
/// `{"error": "…", "kind": "…"}` (plus `offset` for damage), with a matching status.
enum StudioError: Error {
    case badRequest(String)
    case notFound(String)
    case forbidden(String)
    case methodNotAllowed
    /// Another long job (space analysis, tree walk, verify) is running; retry shortly.
    case busy(String)
    case timeLimit(String)
    /// Damaged bytes: the file, or the part asked for, cannot be read.
    case corruption(offset: UInt64, message: String)
    case failure(String)

    /// The error a failed read reports, sorted by what the user can do about it.
    init(_ error: any Error) {
        switch error {
        case let studio as StudioError: self = studio
        case let StrataError.corruption(_, offset, reason): self = .corruption(offset: offset, message: reason)
        case StorageError.collectionNotFound: self = .notFound("\(error)")
        case let limit as QueryTimeLimitExceeded: self = .timeLimit(limit.description)
        case is TextQueryError, is KeyParseError: self = .badRequest("\(error)")
        default: self = .failure("\(error)")
        }
    }

    var response: StudioResponse {
        let (status, kind, message): (Int, String, String) = switch self {
        case .badRequest(let m): (400, "badRequest", m)
        case .notFound(let m): (404, "notFound", m)
        case .forbidden(let m): (403, "forbidden", m)
        case .methodNotAllowed: (405, "methodNotAllowed", "Studio only reads: use GET")
        case .busy(let m): (503, "busy", m)
        case .timeLimit(let m): (422, "timeLimit", m)
        case .corruption(_, let m): (500, "corruption", m)
        case .failure(let m): (500, "failure", m)
        }
        var out = "{\"error\":"
        RecordValue.string(message).writeJSON(to: &out)
        out += ",\"kind\":\"\(kind)\""
        if case .corruption(let offset, _) = self { out += ",\"offset\":\(offset)" }
        out += "}"
        var response = StudioResponse.json(out, status: status)
        if case .busy = self { response.extraHeaders = [("Retry-After", "1")] }
        return response
    }
}
