import Foundation
import Strata
import Testing

/// Copying collections between storages: consistent, batched, verified.
@Suite("Storage transfer")
struct StorageTransferTests {
    struct Author: Model, Equatable {
        var id: Int64
        var name: String
        var born: Date?
        static let schema = Schema<Author>(primaryKey: \.id, indexes: [.unique(\.name)])
    }

    struct Book: Model, Equatable {
        var isbn: String
        var authorID: Int64
        var title: String
        var tags: [String]
        static let schema = Schema<Book>(primaryKey: \.isbn, indexes: [.index(\.authorID)])
    }

    static let authors = (1 ... 25).map { Author(id: $0, name: "Author \($0)", born: $0 % 3 == 0 ? nil : Date(timeIntervalSince1970: Double($0) * 1e8)) }
    static let books = (1 ... 240).map { Book(isbn: "978-\($0)", authorID: Int64($0 % 25 + 1), title: "Book \($0)", tags: ["t\($0 % 4)"]) }

    func withFile(_ body: (String) throws -> Void) throws {
        let path = NSTemporaryDirectory() + "strata-transfer-" + UUID().uuidString + ".strata"
        defer { try? FileManager.default.removeItem(atPath: path) }
        try body(path)
    }

    @Test("a file's collections copy to memory and on to another file, identical, with progress per batch")
    func copiesAcrossBackends() throws {
        try withFile { sourcePath in
            try withFile { targetPath in
                let source = try StrataStorage(path: sourcePath)
                try source.persist(Self.authors)
                try source.persist(Self.books)
                let memory = try MemoryStorage()
                var seen: [StorageTransfer.Progress] = []
                let report = try StorageTransfer.copy([Author.self, Book.self], from: source, to: memory, batchSize: 100) { seen.append($0) }
                #expect(report.collections.map(\.records) == [25, 240])
                #expect(seen.map(\.copied) == [25, 100, 200, 240])
                #expect(seen.allSatisfy { $0.total == ($0.collection == "Author" ? 25 : 240) })

                let target = try StrataStorage(path: targetPath)
                let again = try StorageTransfer.copy([Author.self, Book.self], from: memory, to: target)
                #expect(again == report)
                #expect(try target.readAll(Book.self) == source.readAll(Book.self))
                #expect(try target.read(Book.filter(\.authorID == 3)).count == source.read(Book.filter(\.authorID == 3)).count)
                try source.close()
                try target.close()
            }
        }
    }

    @Test("a destination that already holds records of a collection is refused before anything is copied")
    func refusesANonEmptyDestination() throws {
        let source = try MemoryStorage(), destination = try MemoryStorage()
        try source.persist(Self.authors)
        try destination.persist(Self.authors[0])
        #expect(throws: TransferError.destinationNotEmpty(collection: "Author", records: 1)) {
            try StorageTransfer.copy([Author.self], from: source, to: destination)
        }
        #expect(try destination.count(Author.self) == 1)
    }

    @Test("a destination that does not keep what it is sent fails verification")
    func detectsALossyDestination() throws {
        let source = try MemoryStorage()
        try source.persist(Self.books)
        #expect(throws: TransferError.verificationFailed(collection: "Book", sent: 240, received: 239)) {
            try StorageTransfer.copy([Book.self], from: source, to: LossyStorage(dropping: "978-17"))
        }
    }
}

/// A storage that silently drops one record: what verification exists to catch.
struct LossyStorage: Storage {
    let base: MemoryStorage
    let dropped: String
    init(dropping isbn: String) throws { (base, dropped) = (try MemoryStorage(), isbn) }

    func read<R>(_ body: (any StorageReader) throws -> R) throws -> R { try base.read(body) }
    func observeCommits(_ observer: @escaping @Sendable (CommitEvent) -> Void) -> CommitObservation { base.observeCommits(observer) }
    func write<R>(_ body: (any StorageWriter) throws -> R) throws -> R {
        try base.write { try body(LossyWriter(base: $0, dropped: dropped)) }
    }

    struct LossyWriter: StorageWriter {
        let base: any StorageWriter
        let dropped: String
        func read<M: Model>(_ type: M.Type, primaryKey: some KeyComponent) throws -> M? { try base.read(type, primaryKey: primaryKey) }
        func read<M: Model>(_ query: Query<M>) throws -> [M] { try base.read(query) }
        func forEach<M: Model>(_ query: Query<M>, _ body: (M) throws -> Bool) throws { try base.forEach(query, body) }
        func count<M: Model>(_ query: Query<M>) throws -> Int { try base.count(query) }
        func explain<M: Model>(_ query: Query<M>) throws -> QueryPlan { try base.explain(query) }
        func create<M: Model>(_ model: M) throws -> M {
            if let book = model as? StorageTransferTests.Book, book.isbn == dropped { return model }
            return try base.create(model)
        }
        func persist<M: Model>(_ model: M) throws -> M { try base.persist(model) }
        func erase<M: Model>(_ type: M.Type, primaryKey: some KeyComponent) throws -> Bool { try base.erase(type, primaryKey: primaryKey) }
        func erase<M: Model>(_ query: Query<M>) throws -> Int { try base.erase(query) }
        func eraseAll<M: Model>(_ type: M.Type) throws { try base.eraseAll(type) }
        func dropIndex(_ index: String, from collection: String) throws { try base.dropIndex(index, from: collection) }
    }
}
