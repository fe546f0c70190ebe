import StrataEngine
import Foundation

/// Copies collections from one `Storage` to another — a Strata file to memory, to another
/// file, or to any backend — and proves the copy: the path for an app that outgrows one
/// machine. The source is read in one snapshot, so the copy is consistent even while the
/// app writes; the destination is written in batches, one transaction each, so memory stays
/// bounded. Afterwards both sides are read again and compared by record count and a content
/// checksum (XXH64 over each record's primary key and stored bytes, in primary-key order).
///
/// ```swift
/// let report = try StorageTransfer.copy([User.self, Post.self], from: file, to: server) { progress in
///     print("\(progress.collection): \(progress.copied)/\(progress.total)")
/// }
/// ```
public enum StorageTransfer {
    /// How far a copy has come: sent after every batch.
    public struct Progress: Sendable, Equatable {
        /// The collection being copied.
        public var collection: String
        /// Records copied so far.
        public var copied: Int
        /// Records to copy.
        public var total: Int
    }

    /// What was copied and verified, per collection.
    public struct Report: Sendable, Equatable {
        /// One collection copied.
        public struct Collection: Sendable, Equatable {
            /// Its name.
            public var name: String
            /// Records copied.
            public var records: Int
            /// The content checksum both sides agree on.
            public var checksum: UInt64
        }
        /// Every collection copied.
        public var collections: [Collection]
    }

    /// Copies every record of each model type's collection from `source` to `destination`.
    ///
    /// - Parameters:
    ///   - types: the model types whose collections to copy.
    ///   - source: the storage read.
    ///   - destination: the storage written; its collections must be empty.
    ///   - batchSize: records per destination transaction.
    ///   - progress: called after each batch.
    /// - Throws: `TransferError.destinationNotEmpty` before copying into a collection that
    ///   has records; `TransferError.verificationFailed` when the copy does not read back the
    ///   same (batches already committed stay: copy into a fresh destination again);
    ///   any error of either storage.
    @discardableResult
    public static func copy(_ types: [any Model.Type], from source: any Storage, to destination: any Storage,
                            batchSize: Int = 1_000, progress: (Progress) -> Void = { _ in }) throws -> Report {
        var collections: [Report.Collection] = []
        for type in types {
            collections.append(try copy(type, from: source, to: destination, batchSize: max(1, batchSize), progress: progress))
        }
        return Report(collections: collections)
    }

    private static func copy<M: Model>(_ type: M.Type, from source: any Storage, to destination: any Storage,
                                       batchSize: Int, progress: (Progress) -> Void) throws -> Report.Collection {
        let existing = try destination.count(M.self)
        guard existing == 0 else { throw TransferError.destinationNotEmpty(collection: M.collectionName, records: existing) }
        var sent = Digest<M>()
        try source.read { reader in
            let total = try reader.count(Query<M>())
            var batch: [M] = []
            batch.reserveCapacity(min(batchSize, total))
            func flush() throws {
                try destination.write { writer in for model in batch { try writer.create(model) } }
                batch.removeAll(keepingCapacity: true)
                progress(Progress(collection: M.collectionName, copied: sent.records, total: total))
            }
            try reader.forEach(Query<M>()) { model in
                try sent.add(model)
                batch.append(model)
                if batch.count == batchSize { try flush() }
                return true
            }
            if !batch.isEmpty || total == 0 { try flush() }
        }
        var received = Digest<M>()
        try destination.read { reader in try reader.forEach(Query<M>()) { try received.add($0); return true } }
        guard sent.records == received.records, sent.checksum == received.checksum else {
            throw TransferError.verificationFailed(collection: M.collectionName, sent: sent.records, received: received.records)
        }
        return Report.Collection(name: M.collectionName, records: sent.records, checksum: sent.checksum)
    }

    /// A running count and checksum of records in primary-key order.
    private struct Digest<M: Model> {
        var records = 0
        var checksum: UInt64 = 0
        /// One field table for the whole digest: the same models encode to the same bytes.
        var fields = FieldTable()

        mutating func add(_ model: M) throws {
            let bytes = M.schema.primaryKey(of: model).bytes + (try RecordEncoder.encode(model, fields: &fields, collection: M.collectionName))
            checksum = XXH64.hash(bytes, seed: checksum)
            records += 1
        }
    }
}

/// Why a `StorageTransfer` stopped.
public enum TransferError: Error, Sendable, Equatable, DescribedError {
    /// The destination already holds records of the collection; copy into an empty one.
    case destinationNotEmpty(collection: String, records: Int)
    /// The destination does not read back what was sent.
    case verificationFailed(collection: String, sent: Int, received: Int)

    public var description: String {
        switch self {
        case .destinationNotEmpty(let collection, let records):
            "collection '\(collection)' already has \(records) records at the destination; copy into an empty collection"
        case .verificationFailed(let collection, let sent, let received):
            "collection '\(collection)': the destination does not read back what was sent (\(sent) records sent, \(received) read back, or their contents differ); copy into a fresh destination again"
        }
    }
}
