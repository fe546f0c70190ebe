import Foundation
import Strata
import Synchronization

/// What a record remembers about its row: the stored fields as last loaded or saved, for
/// dirty tracking. Never stored itself. Declare it in every record type:
/// `var recordState = RecordState()`.
public struct RecordState: Sendable, Equatable, Codable {
    var loaded: StoredFields?
    /// The state of a record not yet loaded or saved.
    public init() {}
    // Reached only outside keyed containers; keyed containers use the overloads below.
    /// A fresh state: the state is never stored.
    /// - Parameter decoder: Not read.
    public init(from decoder: any Decoder) throws {}
    /// Writes nothing: the state is never stored.
    /// - Parameter encoder: Not written to.
    public func encode(to encoder: any Encoder) throws {}
}

extension KeyedEncodingContainer {
    /// Writes nothing: the state is never stored.
    ///
    /// - Parameters:
    ///   - value: The state.
    ///   - key: The property's key.
    /// - Throws: Nothing.
    public mutating func encode(_ value: RecordState, forKey key: Key) throws {}
}

extension KeyedDecodingContainer {
    /// A fresh state: the state is never stored.
    ///
    /// - Parameters:
    ///   - type: `RecordState.self`.
    ///   - key: The property's key.
    /// - Returns: A new state.
    /// - Throws: Nothing.
    public func decode(_ type: RecordState.Type, forKey key: Key) throws -> RecordState { RecordState() }
}

/// One field table per record type, shared by its snapshots, so nested values' field ids
/// agree between any two snapshots of the type.
enum SnapshotTables {
    private static let tables = Mutex<[ObjectIdentifier: FieldTable]>([:])

    static func fields<M: Encodable>(of model: M) throws -> StoredFields {
        try tables.withLock { tables in
            var table = tables[ObjectIdentifier(M.self)] ?? FieldTable()
            defer { tables[ObjectIdentifier(M.self)] = table }
            return try StoredFields(encoding: model, table: &table)
        }
    }

    static func model<M: Decodable>(_ type: M.Type, from fields: StoredFields) throws -> M {
        try fields.decode(type, table: tables.withLock { $0[ObjectIdentifier(M.self)] ?? FieldTable() })
    }
}
