/// Who may talk to Studio: only pages Studio served itself, through the address it listens
/// on. A web page elsewhere cannot read the file through it: a request whose `Host` is not
/// Studio's own address is refused (against DNS rebinding, where an attacker's name is made
/// to resolve to 127.0.0.1), as is one whose `Origin` is another site (against cross-site
/// requests). Studio only reads, so only GET and HEAD are answered.
struct RequestGuard: Sendable {
    /// `host:port` spellings that name Studio: the bound address, and for a loopback
    /// address also `localhost` and the other loopback spelling.
    let hosts: Set<String>

    init(host: String, port: Int) {
        var names: Set<String> = [host]
        if ["127.0.0.1", "localhost", "::1", "[::1]"].contains(host) { names.formUnion(["127.0.0.1", "localhost", "[::1]"]) }
        hosts = Set(names.map { ($0.contains(":") && !$0.hasPrefix("[") ? "[\($0)]" : $0) + ":\(port)" })
    }

    /// Nil when the request may proceed; otherwise the refusal to send.
    func refusal(for request: StudioRequest) -> StudioResponse? {
        guard request.method == "GET" || request.method == "HEAD" else {
            var response = StudioError.methodNotAllowed.response
            response.extraHeaders = [("Allow", "GET, HEAD")]
            return response
        }
        guard let host = request.host?.lowercased(), hosts.contains(host) else {
            return StudioError.forbidden("the Host header '\(request.host ?? "")' is not Studio's address; open Studio through the URL it printed").response
        }
        if let origin = request.origin?.lowercased(), !hosts.contains(where: { origin == "http://" + $0 }) {
            return StudioError.forbidden("requests from other origins (\(origin)) are refused").response
        }
        return nil
    }
}
