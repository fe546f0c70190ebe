// LevelDB through its C API: the write-speed and file-size reference. Writes go in one
// WriteBatch per transaction with sync=true; key spaces are a one-byte key prefix.
import CPeers
import Foundation

final class LevelDBStore: KeyValueStore {
    private let path: String
    private let options: OpaquePointer
    private let syncWrites: OpaquePointer
    private var db: OpaquePointer?

    init(directory: String) throws {
        path = directory + "/leveldb"
        options = leveldb_options_create()
        leveldb_options_set_create_if_missing(options, 1)
        syncWrites = leveldb_writeoptions_create()
        leveldb_writeoptions_set_sync(syncWrites, 1)
        try open()
    }

    deinit {
        try? close()
        leveldb_options_destroy(options)
        leveldb_writeoptions_destroy(syncWrites)
    }

    private func open() throws {
        db = try call { leveldb_open(options, path, &$0) }
    }

    func write(_ body: (Writer) throws -> Void) throws {
        let batch = leveldb_writebatch_create()
        defer { leveldb_writebatch_destroy(batch) }
        try read { reader in try body(Writer(reader: reader, batch: batch)) }
        try call { leveldb_write(db, syncWrites, batch, &$0) }
    }

    func read<R>(_ body: (Reader) throws -> R) throws -> R {
        let snapshot = leveldb_create_snapshot(db)
        let readOptions = leveldb_readoptions_create()
        leveldb_readoptions_set_snapshot(readOptions, snapshot)
        defer {
            leveldb_readoptions_destroy(readOptions)
            leveldb_release_snapshot(db, snapshot)
        }
        return try body(Reader(db: db, readOptions: readOptions))
    }

    func reopen() throws {
        try close()
        try open()
    }

    func compact() throws -> Bool {
        leveldb_compact_range(db, nil, 0, nil, 0)
        return true
    }

    func close() throws {
        guard db != nil else { return }
        leveldb_close(db)
        db = nil
    }

    struct Reader: KeyValueReader {
        let db: OpaquePointer?
        let readOptions: OpaquePointer?

        func withValue<R>(_ key: UnsafeRawBufferPointer, in space: KeySpace, _ body: (UnsafeRawBufferPointer) throws -> R) throws -> R? {
            var length = 0
            let value = try withPrefixed(key, space) { k in try call { leveldb_get(db, readOptions, k.baseAddress, k.count, &length, &$0) } }
            guard let value else { return nil }
            defer { leveldb_free(value) }
            return try body(UnsafeRawBufferPointer(start: value, count: length))
        }

        func scan(_ space: KeySpace, from start: [UInt8], _ body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Bool) throws {
            let iterator = leveldb_create_iterator(db, readOptions)
            defer { leveldb_iter_destroy(iterator) }
            start.withUnsafeBytes { start in withPrefixed(start, space) { leveldb_iter_seek(iterator, $0.baseAddress, $0.count) } }
            var keyLength = 0, valueLength = 0
            while leveldb_iter_valid(iterator) != 0 {
                let key = UnsafeRawBufferPointer(start: leveldb_iter_key(iterator, &keyLength), count: keyLength)
                guard key.first == UInt8(space.rawValue) else { break }
                let value = UnsafeRawBufferPointer(start: leveldb_iter_value(iterator, &valueLength), count: valueLength)
                if try !body(UnsafeRawBufferPointer(rebasing: key[1...]), value) { break }
                leveldb_iter_next(iterator)
            }
            try call { leveldb_iter_get_error(iterator, &$0) }
        }
    }

    struct Writer: KeyValueWriter {
        let reader: Reader
        let batch: OpaquePointer?

        func put(_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer, in space: KeySpace) throws {
            withPrefixed(key, space) { leveldb_writebatch_put(batch, $0.baseAddress, $0.count, value.baseAddress, value.count) }
        }

        func withValue<R>(_ key: UnsafeRawBufferPointer, in space: KeySpace, _ body: (UnsafeRawBufferPointer) throws -> R) throws -> R? {
            try reader.withValue(key, in: space, body)
        }

        func scan(_ space: KeySpace, from start: [UInt8], _ body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Bool) throws {
            try reader.scan(space, from: start, body)
        }
    }
}

/// `key` with its key space's one-byte prefix, in a stack buffer.
private func withPrefixed<R>(_ key: UnsafeRawBufferPointer, _ space: KeySpace, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
    try withUnsafeTemporaryAllocation(byteCount: key.count + 1, alignment: 1) { buffer in
        buffer[0] = UInt8(space.rawValue)
        if !key.isEmpty { UnsafeMutableRawBufferPointer(rebasing: buffer[1...]).copyMemory(from: key) }
        return try body(UnsafeRawBufferPointer(buffer))
    }
}

/// Runs a LevelDB call that reports failure through a `char **errptr`.
@discardableResult
private func call<R>(_ body: (inout UnsafeMutablePointer<CChar>?) -> R) throws -> R {
    var error: UnsafeMutablePointer<CChar>?
    let result = body(&error)
    if let error {
        defer { leveldb_free(error) }
        throw BenchError("LevelDB: \(String(cString: error))")
    }
    return result
}
