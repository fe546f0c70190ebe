// LMDB through its C API: the read-speed reference. Default flags, so every commit is
// synced; one named database per key space in one environment.
import CPeers
import Foundation

final class LMDBStore: KeyValueStore {
    private let directory: String
    private var env: OpaquePointer?
    private var databases: [MDB_dbi] = []

    init(directory: String) throws {
        self.directory = directory + "/lmdb"
        try FileManager.default.createDirectory(atPath: self.directory, withIntermediateDirectories: true)
        try open()
    }

    private func open() throws {
        try check(mdb_env_create(&env))
        try check(mdb_env_set_maxdbs(env, MDB_dbi(KeySpace.allCases.count)))
        try check(mdb_env_set_mapsize(env, 64 << 30))
        try check(mdb_env_open(env, directory, 0, 0o644))
        var txn: OpaquePointer?
        try check(mdb_txn_begin(env, nil, 0, &txn))
        databases = try KeySpace.allCases.map { space in
            var dbi: MDB_dbi = 0
            try check(mdb_dbi_open(txn, "\(space)", UInt32(MDB_CREATE), &dbi))
            return dbi
        }
        try check(mdb_txn_commit(txn))
    }

    func write(_ body: (Transaction) throws -> Void) throws {
        var txn: OpaquePointer?
        try check(mdb_txn_begin(env, nil, 0, &txn))
        do {
            try body(Transaction(txn: txn, databases: databases))
        } catch {
            mdb_txn_abort(txn)
            throw error
        }
        try check(mdb_txn_commit(txn))
    }

    func read<R>(_ body: (Transaction) throws -> R) throws -> R {
        var txn: OpaquePointer?
        try check(mdb_txn_begin(env, nil, UInt32(MDB_RDONLY), &txn))
        defer { mdb_txn_abort(txn) }
        return try body(Transaction(txn: txn, databases: databases))
    }

    func reopen() throws {
        try close()
        try open()
    }

    /// LMDB has no in-place compaction (only `mdb_env_copy2` to another file).
    func compact() throws -> Bool { false }

    func close() throws {
        guard env != nil else { return }
        mdb_env_close(env)
        env = nil
    }

    struct Transaction: KeyValueWriter {
        let txn: OpaquePointer?
        let databases: [MDB_dbi]

        func put(_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer, in space: KeySpace) throws {
            var k = MDB_val(key), v = MDB_val(value)
            try check(mdb_put(txn, databases[space.rawValue], &k, &v, 0))
        }

        func withValue<R>(_ key: UnsafeRawBufferPointer, in space: KeySpace, _ body: (UnsafeRawBufferPointer) throws -> R) throws -> R? {
            var k = MDB_val(key), v = MDB_val()
            let rc = mdb_get(txn, databases[space.rawValue], &k, &v)
            if rc == MDB_NOTFOUND { return nil }
            try check(rc)
            return try body(UnsafeRawBufferPointer(start: v.mv_data, count: v.mv_size))
        }

        func scan(_ space: KeySpace, from start: [UInt8], _ body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Bool) throws {
            var cursor: OpaquePointer?
            try check(mdb_cursor_open(txn, databases[space.rawValue], &cursor))
            defer { mdb_cursor_close(cursor) }
            var k = MDB_val(), v = MDB_val()
            var rc = start.withUnsafeBytes { bytes -> Int32 in
                if start.isEmpty { return mdb_cursor_get(cursor, &k, &v, MDB_FIRST) }
                k = MDB_val(bytes)
                return mdb_cursor_get(cursor, &k, &v, MDB_SET_RANGE)
            }
            while rc == 0 {
                let more = try body(UnsafeRawBufferPointer(start: k.mv_data, count: k.mv_size),
                                    UnsafeRawBufferPointer(start: v.mv_data, count: v.mv_size))
                if !more { return }
                rc = mdb_cursor_get(cursor, &k, &v, MDB_NEXT)
            }
            if rc != MDB_NOTFOUND { try check(rc) }
        }
    }
}

extension MDB_val {
    init(_ bytes: UnsafeRawBufferPointer) {
        self.init(mv_size: bytes.count, mv_data: UnsafeMutableRawPointer(mutating: bytes.baseAddress))
    }
}

private func check(_ rc: Int32) throws {
    guard rc == 0 else { throw BenchError("LMDB: \(String(cString: mdb_strerror(rc)))") }
}
