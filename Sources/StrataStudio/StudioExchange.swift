import Foundation
import Strata

/// A request as Studio sees it: what the HTTP server parsed, with nothing of the server's
/// own types, so Studio's answers can be tested without a socket.
public struct StudioRequest: Sendable {
    /// `GET`, `HEAD`, …
    public var method: String
    /// The path without the query, still percent-encoded (`/api/collections/my%20notes`).
    public var path: String
    /// Query parameters, percent-decoded.
    public var query: [String: String]
    /// The `Host` header; nil when the request had none.
    public var host: String?
    /// The `Origin` header; browsers send it on cross-origin requests.
    public var origin: String?

    /// A request for `path`.
    ///
    /// - Parameters:
    ///   - method: The HTTP method.
    ///   - path: The path, without the query.
    ///   - query: The query's parameters.
    ///   - host: The `Host` header.
    ///   - origin: The `Origin` header, when the browser sent one.
    public init(method: String = "GET", path: String, query: [String: String] = [:], host: String?, origin: String? = nil) {
        (self.method, self.path, self.query, self.host, self.origin) = (method, path, query, host, origin)
    }

    /// Parses a query string as browsers write it (`application/x-www-form-urlencoded`: `+`
    /// is a space, `%XX` a byte); the first of repeated names wins.
    ///
    /// - Parameter query: The text after `?`, or nil.
    /// - Returns: The parameters by name.
    public static func parameters(_ query: String?) -> [String: String] {
        var parameters: [String: String] = [:]
        for pair in (query ?? "").split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            func decoded(_ text: Substring) -> String {
                let spaced = text.replacingOccurrences(of: "+", with: " ")
                return spaced.removingPercentEncoding ?? spaced
            }
            let name = decoded(parts[0])
            if parameters[name] == nil { parameters[name] = parts.count > 1 ? decoded(parts[1]) : "" }
        }
        return parameters
    }

    /// The path's segments, each percent-decoded (`/api/tree/c%3Ausers` → api, tree, c:users).
    var segments: [String] {
        path.split(separator: "/").map { String($0).removingPercentEncoding ?? String($0) }
    }
}

/// Studio's answer: a status, a content type and the body, plus the headers every answer
/// carries (no caching, no sniffing, scripts and styles only from Studio itself).
public struct StudioResponse: Sendable {
    /// The HTTP status.
    public var status: Int
    /// The body's media type.
    public var contentType: String
    /// The body.
    public var body: [UInt8]
    /// Headers this answer adds (`Retry-After`, `Allow`).
    public var extraHeaders: [(name: String, value: String)] = []

    /// Headers on every answer: the page may load only Studio's own script and style, may
    /// not be framed, and is never cached (it shows a file that changes).
    public static let securityHeaders: [(name: String, value: String)] = [
        ("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"),
        ("X-Content-Type-Options", "nosniff"),
        ("Referrer-Policy", "no-referrer"),
        ("Cache-Control", "no-store"),
    ]

    /// Every header to send: the content type, the security headers, the extras.
    public var headers: [(name: String, value: String)] {
        [("Content-Type", contentType)] + Self.securityHeaders + extraHeaders
    }

    /// The body as text (for tests and logs).
    public var text: String { String(decoding: body, as: UTF8.self) }

    static func json(_ text: String, status: Int = 200) -> StudioResponse {
        StudioResponse(status: status, contentType: "application/json; charset=utf-8", body: Array(text.utf8))
    }

    static func json<T: Encodable>(encoding value: T) throws -> StudioResponse {
        .json(try InspectionJSON.encode(value))
    }

    static func asset(_ text: String, type: String) -> StudioResponse {
        StudioResponse(status: 200, contentType: type + "; charset=utf-8", body: Array(text.utf8))
    }
}
