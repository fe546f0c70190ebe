// The demo's repository part: the three thinner persistence patterns of StrataRepository,
// on the same database file.
import Foundation
import Strata
import StrataEngine
import StrataRepository

struct Client: Codable, Sendable {
    var name: String
}

struct Book: Identifiable, Codable, Sendable {
    var id: String
    var title: String
}

struct NoteEntity: Entity {
    var id: Int64 = 0
    var created = Date()
    var modified = Date()
    var text = ""
    static let schema = Schema<NoteEntity>.autoIncrementing(\.id)
}

func repositoryTour(storage: any Storage) async throws {
    section("CRUD repository: the article's client code, on a table of this file")
    let repository = StrataCRUDRepository(storage: storage, table: "clients")
    try await repository.create(id: "client", item: Client(name: "Chill Client"))
    var clientRecord: Client = try await repository.read(id: "client")
    print("Client Name: \(clientRecord.name)")
    clientRecord.name = "Busy Client"
    try await repository.update(id: "client", item: clientRecord)
    let updatedClient: Client = try await repository.read(id: "client")
    print("Updated Client Name: \(updatedClient.name)")
    try await repository.delete(id: "client")
    do {
        let _: Client = try await repository.read(id: "client")
    } catch {
        print("read after delete: \(error)")
    }

    section("Data sources: a memory cache in front of the disk, cache-through")
    let disk = RepositoryDataSource<Book>(StrataCRUDRepository(storage: storage, table: "books"))
    for book in [Book(id: "978-0262510875", title: "Structure and Interpretation of Computer Programs"),
                 Book(id: "978-0201633610", title: "Design Patterns")] {
        try await disk.upsert(book)
    }
    let cache = MemoryDataSource<Book>(capacity: 100)
    let books = Repository<Book>(sources: [cache, disk], strategy: .cacheThrough)
    let book = try await books.getById("978-0201633610")
    print("read '\(book.title)' from disk; the cache now holds \(cache.count) book(s)")

    section("Accessor and entities: ids from a counter kept in the file")
    let notes = Accessor<NoteEntity>(storage: storage)
    let note = try notes.create { $0.text = "written at \(Date())" }
    print("created note \(note.id) (\(try notes.count()) in all; ids keep increasing across runs)")
}
