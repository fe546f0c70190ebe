import Foundation

/// The bytes a repository stores for one item: which transformer wrote it, and the
/// transformer's payload. Layout: "SR" magic, version 1, transformer name length (1 byte),
/// name (UTF-8), payload.
enum StoredItem {
    static let magic: [UInt8] = [0x53, 0x52, 1]

    static func encode<T: Encodable & Sendable>(_ item: T, id: String, transformer: any DataTransformer) async throws -> Data {
        let payload: Data
        do { payload = try await transformer.encode(item) } catch {
            throw RepositoryError.encodingFailed(id: id, transformer: transformer.name, underlying: error)
        }
        let name = Array(transformer.name.utf8.prefix(255))
        return Data(magic) + [UInt8(name.count)] + name + payload
    }

    static func decode<T: Decodable & Sendable>(_ type: T.Type, from data: Data, id: String, transformer: any DataTransformer) async throws -> T {
        let bytes = [UInt8](data)
        guard bytes.count >= 4, Array(bytes[0 ..< 3]) == magic, bytes.count >= 4 + Int(bytes[3]) else {
            throw RepositoryError.corruptRecord(id: id, reason: "it does not start with a repository record header")
        }
        let stored = String(decoding: bytes[4 ..< 4 + Int(bytes[3])], as: UTF8.self)
        guard stored == transformer.name else {
            throw RepositoryError.transformerMismatch(id: id, stored: stored, reading: transformer.name)
        }
        do {
            return try await transformer.decode(type, from: Data(bytes[(4 + Int(bytes[3]))...]))
        } catch {
            throw RepositoryError.decodingFailed(id: id, transformer: transformer.name, underlying: error)
        }
    }
}
