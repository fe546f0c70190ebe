import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A data source on a JSON REST endpoint, through URLSession:
///
/// | operation | request | success | mapped errors |
/// | --- | --- | --- | --- |
/// | getAll | `GET base` | 200, a JSON array | |
/// | getById | `GET base/ID` | 200, a JSON object | 404 → `recordNotFound` |
/// | insert | `POST base`, JSON body | 200, 201, 204 | 409 → `alreadyExists` |
/// | update | `PUT base/ID`, JSON body | 200, 204 | 404 → `recordNotFound` |
/// | clean | `DELETE base` | 200, 204 | |
/// | deleteById | `DELETE base/ID` | 200, 204 | 404 → `recordNotFound` |
///
/// Other statuses are `RepositoryError.httpStatus`; no answer within `timeout` is
/// `RepositoryError.timeout`; transport failures are `RepositoryError.storage` with the cause.
public struct HTTPDataSource<Item: Identifiable & Codable & Sendable>: DataSource where Item.ID == String {
    /// The collection's URL; an item is at `baseURL/id`.
    public let baseURL: URL
    /// Seconds to wait for an answer.
    public let timeout: TimeInterval
    private let session: URLSession

    /// The URL, for errors.
    public var name: String { baseURL.absoluteString }

    /// - Parameters:
    ///   - baseURL: the collection's URL, e.g. `https://api.example.com/books`.
    ///   - timeout: seconds to wait for an answer before `RepositoryError.timeout`.
    ///   - session: the URLSession requests go through.
    public init(baseURL: URL, timeout: TimeInterval = 10, session: URLSession = .shared) {
        (self.baseURL, self.timeout, self.session) = (baseURL, timeout, session)
    }

    /// Every item this source holds.
    ///
    /// - Returns: The items, in id order.
    /// - Throws: The source's errors.
    public func getAll() async throws -> [Item] {
        try decode([Item].self, try await send("GET", baseURL, id: nil))
    }

    /// The item with this id.
    /// - Throws: `RepositoryError.recordNotFound` when this source does not hold it.
    /// - Parameter id: The item's id.
    /// - Returns: The item.
    public func getById(_ id: String) async throws -> Item {
        try decode(Item.self, try await send("GET", url(id), id: id))
    }

    /// Adds the item to this source.
    /// - Throws: `RepositoryError.alreadyExists` when it holds the id already.
    /// - Parameter item: The new item.
    public func insert(_ item: Item) async throws {
        _ = try await send("POST", baseURL, id: item.id, body: try JSONEncoder().encode(item))
    }

    /// Replaces the item in this source.
    /// - Throws: `RepositoryError.recordNotFound` when it does not hold the id.
    /// - Parameter item: The item, replacing the one with its id.
    public func update(_ item: Item) async throws {
        _ = try await send("PUT", url(item.id), id: item.id, body: try JSONEncoder().encode(item))
    }

    /// Removes every item from this source.
    ///
    /// - Throws: The source's errors.
    public func clean() async throws { _ = try await send("DELETE", baseURL, id: nil) }

    /// Removes the item with this id.
    /// - Throws: `RepositoryError.recordNotFound` when this source does not hold it.
    /// - Parameter id: The id of the item to remove.
    public func deleteById(_ id: String) async throws { _ = try await send("DELETE", url(id), id: id) }

    /// `base/ID`, with the id escaped as one path segment.
    func url(_ id: String) -> URL {
        var allowed = CharacterSet.urlPathAllowed
        allowed.remove(charactersIn: "/;?#%")
        let base = baseURL.absoluteString.hasSuffix("/") ? baseURL.absoluteString : baseURL.absoluteString + "/"
        return URL(string: base + (id.addingPercentEncoding(withAllowedCharacters: allowed) ?? ""))!
    }

    private func send(_ method: String, _ url: URL, id: String?, body: Data? = nil) async throws -> Data {
        var request = URLRequest(url: url, cachePolicy: .reloadIgnoringLocalCacheData, timeoutInterval: timeout)
        request.httpMethod = method
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        if let body {
            request.httpBody = body
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        let (data, response): (Data, URLResponse)
        do {
            let prepared = request
            (data, response) = try await withTimeout(url) { [session] in try await session.data(for: prepared) }
        } catch let error as RepositoryError {
            throw error
        } catch let error as URLError where error.code == .timedOut {
            throw RepositoryError.timeout(url: url.absoluteString, seconds: timeout)
        } catch {
            throw RepositoryError.storage(operation: "\(method) \(url.absoluteString)", id: id, underlying: error)
        }
        let status = (response as? HTTPURLResponse)?.statusCode ?? 0
        switch (status, id) {
        case (200 ..< 300, _): return data
        case (404, let id?): throw RepositoryError.recordNotFound(id: id)
        case (409, let id?) where method == "POST": throw RepositoryError.alreadyExists(id: id)
        default:
            throw RepositoryError.httpStatus(url: url.absoluteString, method: method, status: status,
                                             body: String(decoding: data.prefix(200), as: UTF8.self))
        }
    }

    /// Runs `request`, or throws `timeout` when it takes longer than `timeout` seconds
    /// (URLSession's own request timeout is an idle timeout, and not enforced everywhere).
    private func withTimeout<R: Sendable>(_ url: URL, _ request: @escaping @Sendable () async throws -> R) async throws -> R {
        try await withThrowingTaskGroup(of: R.self) { group in
            group.addTask { try await request() }
            group.addTask { [timeout] in
                try await Task.sleep(for: .seconds(timeout))
                throw RepositoryError.timeout(url: url.absoluteString, seconds: timeout)
            }
            defer { group.cancelAll() }
            return try await group.next()!
        }
    }

    private func decode<T: Decodable>(_ type: T.Type, _ data: Data) throws -> T {
        do { return try JSONDecoder().decode(type, from: data) } catch {
            throw RepositoryError.decodingFailed(id: name, transformer: "json", underlying: error)
        }
    }
}
