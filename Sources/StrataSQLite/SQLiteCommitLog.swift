import Foundation
import GRDB
import StrataSQL
import Synchronization

/// How storages on one SQLite file — in this process or others — tell each other which
/// collections their commits changed. SQLite has no notifications between connections, so
/// each commit adds a row to `strata_commits` inside its transaction (only a commit makes it
/// visible), and a storage with observers polls the file on a connection of its own:
/// `PRAGMA data_version` (which moves when another connection commits; one cheap call)
/// every `interval`, and reads the rows after the last it saw when it moved.
///
/// The table keeps the last `kept` rows; a poller that fell further behind reports every
/// collection as changed.
enum SQLiteCommitLog {
    static let table = "strata_commits"
    /// Rows kept after pruning (pruning runs every `pruneEvery` commits).
    static let kept: Int64 = 1024
    static let pruneEvery: Int64 = 256

    static func create(in db: Database) throws {
        try db.execute(sql: "CREATE TABLE IF NOT EXISTS \(table) (id INTEGER PRIMARY KEY AUTOINCREMENT, storage TEXT NOT NULL, collections TEXT NOT NULL)")
    }

    /// Records a commit of `storage` that changed `collections`, inside its transaction.
    static func append(_ collections: Set<String>, from storage: String, in db: Database) throws {
        let names = String(decoding: try JSONEncoder().encode(collections.sorted()), as: UTF8.self)
        try db.execute(sql: "INSERT INTO \(table) (storage, collections) VALUES (?, ?)", arguments: [storage, names])
        let id = db.lastInsertedRowID
        if id % pruneEvery == 0 { try db.execute(sql: "DELETE FROM \(table) WHERE id <= ?", arguments: [id - kept]) }
    }
}

/// The polling thread of one observed `SQLiteStorage` (see `SQLiteCommitLog`).
final class SQLiteCommitPoller: Sendable {
    private final class Flag: Sendable { let raised = Atomic<Bool>(false) }
    private let stopped = Flag()

    /// Starts polling the file at `path`; `handler` gets each commit's storage id and the
    /// collections it changed (an empty storage id and every collection when rows were missed).
    init(path: String, interval: Duration, handler: @escaping @Sendable (_ storage: String, _ collections: Set<String>) -> Void) throws {
        var configuration = Configuration()
        configuration.readonly = true
        let connection = try DatabaseQueue(path: path, configuration: configuration)
        let seen = try connection.read { db in try Int64.fetchOne(db, sql: "SELECT MAX(id) FROM \(SQLiteCommitLog.table)") ?? 0 }
        let startVersion = try connection.inDatabase { db in try Int64.fetchOne(db, sql: "PRAGMA data_version") ?? 0 }
        let seconds = Double(interval.components.seconds) + Double(interval.components.attoseconds) / 1e18
        let stopped = self.stopped
        let thread = Thread {
            var (last, version) = (seen, startVersion)
            while !stopped.raised.load(ordering: .acquiring) {
                Thread.sleep(forTimeInterval: seconds)
                do {
                    // data_version is per connection: it must be read outside a transaction
                    // on the same connection each time, hence `inDatabase`.
                    let now = try connection.inDatabase { db in try Int64.fetchOne(db, sql: "PRAGMA data_version") ?? 0 }
                    guard now != version else { continue }
                    version = now
                    let rows = try connection.read { db in
                        try Row.fetchAll(db, sql: "SELECT id, storage, collections FROM \(SQLiteCommitLog.table) WHERE id > ? ORDER BY id", arguments: [last])
                    }
                    if let first = rows.first, first["id"] as Int64 > last + 1, last > 0 {
                        let all = try connection.read { db in try String.fetchAll(db, sql: "SELECT collection FROM \(SQLNames.catalogTable)") }
                        handler("", Set(all))
                    }
                    for row in rows {
                        last = row["id"]
                        let names = (try? JSONDecoder().decode([String].self, from: Data((row["collections"] as String).utf8))) ?? []
                        handler(row["storage"], Set(names))
                    }
                } catch {
                    // A busy or briefly locked file: the next poll tries again.
                    continue
                }
            }
        }
        thread.name = "strata.sqlite-commit-poll"
        thread.start()
    }

    func stop() { stopped.raised.store(true, ordering: .releasing) }

    deinit { stop() }
}
