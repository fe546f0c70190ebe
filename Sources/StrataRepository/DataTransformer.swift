import Foundation
import Strata

/// How items become bytes and back (the CRUD article's `DataTransformer`). A repository
/// stores the transformer's `name` with every item, so reading with another transformer is
/// a `RepositoryError.transformerMismatch`, not garbage.
///
/// The requirements are `async`, as the repositories around them are: a transformer may
/// suspend — to encrypt through an actor holding a key, or to compress on another
/// executor. A synchronous implementation satisfies them as it is (the transformers below
/// are synchronous).
///
/// ```swift
/// let repository = InMemoryRepository(transformer: PropertyListDataTransformer(format: .xml))
///
/// struct SealedTransformer: DataTransformer {      // suspends for the key
///     let name = "sealed-json"
///     let vault: KeyVault                          // an actor
///     func encode<T: Encodable & Sendable>(_ item: T) async throws -> Data {
///         try await vault.seal(JSONEncoder().encode(item))
///     }
///     func decode<T: Decodable & Sendable>(_ type: T.Type, from data: Data) async throws -> T {
///         try JSONDecoder().decode(type, from: await vault.open(data))
///     }
/// }
/// ```
public protocol DataTransformer: Sendable {
    /// A short stable name recorded with each item (at most 255 UTF-8 bytes).
    var name: String { get }
    /// Encodes an item.
    /// - Parameter item: The item.
    /// - Returns: Its bytes.
    /// - Throws: why the item cannot be encoded; the repository reports it as
    ///   `RepositoryError.encodingFailed`.
    func encode<T: Encodable & Sendable>(_ item: T) async throws -> Data
    /// Decodes an item.
    /// - Parameters:
    ///   - type: The item's type.
    ///   - data: Bytes this transformer wrote.
    /// - Returns: The item.
    /// - Throws: why the bytes cannot be decoded; the repository reports it as
    ///   `RepositoryError.decodingFailed`.
    func decode<T: Decodable & Sendable>(_ type: T.Type, from data: Data) async throws -> T
}

/// Foundation's JSONEncoder/JSONDecoder.
public struct JSONDataTransformer: DataTransformer {
    /// `json`.
    public let name = "json"
    /// The transformer.
    public init() {}
    /// JSON of the item.
    ///
    /// - Parameter item: The item to encode.
    /// - Returns: Its JSON.
    /// - Throws: `EncodingError` for a value JSON cannot hold.
    public func encode<T: Encodable>(_ item: T) throws -> Data { try JSONEncoder().encode(item) }
    /// The item from its JSON.
    ///
    /// - Parameters:
    ///   - type: The item's type.
    ///   - data: Its JSON.
    /// - Returns: The item.
    /// - Throws: `DecodingError` for data that is not the item's JSON.
    public func decode<T: Decodable>(_ type: T.Type, from data: Data) throws -> T { try JSONDecoder().decode(type, from: data) }
}

/// Foundation's PropertyListEncoder, as XML (the article's "XML" transformer) or binary.
public struct PropertyListDataTransformer: DataTransformer {
    /// XML or binary.
    public let format: PropertyListSerialization.PropertyListFormat
    /// `plist-xml` or `plist-binary`.
    public var name: String { format == .xml ? "plist-xml" : "plist-binary" }

    /// A transformer writing `format`.
    ///
    /// - Parameter format: `.xml` (the default) or `.binary`.
    public init(format: PropertyListSerialization.PropertyListFormat = .xml) { self.format = format }

    /// The item as a property list.
    ///
    /// - Parameter item: The item to encode.
    /// - Returns: Its property list.
    /// - Throws: `EncodingError` for a value a property list cannot hold.
    public func encode<T: Encodable>(_ item: T) throws -> Data {
        let encoder = PropertyListEncoder()
        encoder.outputFormat = format
        return try encoder.encode(item)
    }

    /// The item from its property list.
    ///
    /// - Parameters:
    ///   - type: The item's type.
    ///   - data: Its property list.
    /// - Returns: The item.
    /// - Throws: `DecodingError` for data that is not the item's property list.
    public func decode<T: Decodable>(_ type: T.Type, from data: Data) throws -> T {
        try PropertyListDecoder().decode(type, from: data)
    }
}

/// Strata's binary record codec (FORMAT.md, "Records"). A standalone item carries its own
/// field table: varint count, then each field name as varint length + UTF-8, then the record.
public struct RecordDataTransformer: DataTransformer {
    /// `strata-record`.
    public let name = "strata-record"
    /// The transformer.
    public init() {}

    /// The item as a Strata record with its own field table.
    ///
    /// - Parameter item: The item to encode.
    /// - Returns: Its field table and record.
    /// - Throws: `RecordError.unencodable` for a value the format cannot hold.
    public func encode<T: Encodable>(_ item: T) throws -> Data {
        var fields = FieldTable()
        let record = try RecordEncoder.encode(item, fields: &fields, collection: "item")
        var data = Data()
        appendVarint(UInt64(fields.names.count), to: &data)
        for name in fields.names {
            appendVarint(UInt64(name.utf8.count), to: &data)
            data.append(contentsOf: name.utf8)
        }
        data.append(contentsOf: record)
        return data
    }

    /// The item from its record.
    ///
    /// - Parameters:
    ///   - type: The item's type.
    ///   - data: Its field table and record.
    /// - Returns: The item.
    /// - Throws: `RecordError` for malformed data or a field of another type.
    public func decode<T: Decodable>(_ type: T.Type, from data: Data) throws -> T {
        var reader = DataReader(Array(data))
        var names: [String] = []
        for _ in 0 ..< (try reader.varint()) {
            guard let name = String(validating: try reader.bytes(Int(try reader.varint())), as: UTF8.self) else {
                throw RecordError.corruptRecord(collection: "item", reason: "a field name is not UTF-8")
            }
            names.append(name)
        }
        return try RecordDecoder.decode(type, from: Array(reader.rest), fields: FieldTable(names: names), collection: "item")
    }
}

func appendVarint(_ value: UInt64, to data: inout Data) {
    var v = value
    while v >= 0x80 {
        data.append(UInt8(truncatingIfNeeded: v) | 0x80)
        v >>= 7
    }
    data.append(UInt8(v))
}

/// Bounds-checked reading of a byte array.
struct DataReader {
    private let bytes: [UInt8]
    private var position = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    struct Truncated: Error, CustomStringConvertible {
        var description: String { "the bytes end early" }
    }

    mutating func varint() throws -> UInt64 {
        var result: UInt64 = 0, shift: UInt64 = 0
        while true {
            guard position < bytes.count, shift < 64 else { throw Truncated() }
            let byte = bytes[position]
            position += 1
            result |= UInt64(byte & 0x7F) << shift
            if byte < 0x80 { return result }
            shift += 7
        }
    }

    mutating func bytes(_ count: Int) throws -> ArraySlice<UInt8> {
        guard count >= 0, count <= bytes.count - position else { throw Truncated() }
        defer { position += count }
        return bytes[position ..< position + count]
    }

    var rest: ArraySlice<UInt8> { bytes[position...] }
}
