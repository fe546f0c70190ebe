import Foundation
import Strata
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One file per item in a directory, as in the CRUD article — with ids that can never
/// escape the directory or collide, and writes that are atomic.
///
/// **File names.** An id's UTF-8 bytes are kept when they are `a`–`z`, `0`–`9`, `_` or `-`
/// and written as `%XX` otherwise (upper-case letters too, so names are distinct on
/// case-insensitive file systems; `.`, `/` and NUL are always escaped), after an `i` prefix:
/// `""` → `i`, `../../etc/passwd` → `i%2E%2E%2F%2E%2E%2Fetc%2Fpasswd`. When that would exceed
/// 240 bytes, the name is `h` + 32 hex digits of two 64-bit hashes of the id. Every file
/// starts with its full id, and a read checks it, so even a hash collision is an error,
/// never another item's data.
///
/// **Atomic writes.** An item is written to a `.tmp-UUID` file, fsynced, then linked
/// (create: fails if the name exists) or renamed (update) into place, and the directory is
/// fsynced. A crash leaves the old item or the new one, never a mix; leftover temporary files
/// are ignored and removed on open.
public final class FileSystemBackend: RepositoryBackend {
    /// Where the items' files are.
    public let directory: String

    /// Uses `directory`, creating it when missing.
    ///
    /// - Parameter directory: The directory's path.
    /// - Throws: `RepositoryError.storage` when it cannot be created.
    public init(directory: String) throws {
        self.directory = directory
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        for name in try FileManager.default.contentsOfDirectory(atPath: directory) where name.hasPrefix(".tmp-") {
            unlink(directory + "/" + name)
        }
    }

    // MARK: Names

    static let maxEscapedName = 240

    /// The file name of `id` (see the type's documentation).
    ///
    /// - Parameter id: An item's id.
    /// - Returns: A file name that is safe on every file system and unique to the id.
    public static func fileName(for id: String) -> String {
        var name = "i"
        for byte in id.utf8 {
            switch byte {
            case UInt8(ascii: "a") ... UInt8(ascii: "z"), UInt8(ascii: "0") ... UInt8(ascii: "9"), UInt8(ascii: "_"), UInt8(ascii: "-"):
                name.unicodeScalars.append(UnicodeScalar(byte))
            default:
                name += "%" + String(byte, radix: 16, uppercase: true).leftPadded(to: 2)
            }
            if name.utf8.count > maxEscapedName { return hashedName(id) }
        }
        return name
    }

    static func hashedName(_ id: String) -> String {
        let bytes = Array(id.utf8)
        let hashes = [XXH64.hash(bytes, seed: 0x5354_5241_5441), XXH64.hash(bytes, seed: 0x7265_706F)]
        return "h" + hashes.map { String($0, radix: 16).leftPadded(to: 16) }.joined()
    }

    /// The id an escaped name stands for; nil for hashed names (their id is in the file).
    static func id(fromEscaped name: String) -> String? {
        guard name.hasPrefix("i") else { return nil }
        var bytes: [UInt8] = []
        var utf8 = name.utf8.dropFirst()[...]
        while let byte = utf8.popFirst() {
            if byte == UInt8(ascii: "%"), let hex = String(bytes: utf8.prefix(2), encoding: .ascii), let value = UInt8(hex, radix: 16) {
                bytes.append(value)
                utf8 = utf8.dropFirst(2)
            } else {
                bytes.append(byte)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }

    private func path(_ id: String) -> String { directory + "/" + Self.fileName(for: id) }

    // MARK: File contents: varint id length, id, item bytes

    private func read(_ path: String, id expected: String?) throws -> (id: String, data: Data)? {
        let contents: Data
        do {
            contents = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch let error as CocoaError where error.code == .fileReadNoSuchFile {
            return nil
        } catch {
            throw RepositoryError.storage(operation: "read \(path)", id: expected, underlying: error)
        }
        var reader = DataReader([UInt8](contents))
        guard let length = try? reader.varint(), let idBytes = try? reader.bytes(Int(length)),
              let id = String(validating: idBytes, as: UTF8.self) else {
            throw RepositoryError.corruptRecord(id: expected ?? path, reason: "the file \(path) does not start with its item's id")
        }
        if let expected, id != expected {
            throw RepositoryError.corruptRecord(id: expected, reason: "its file \(path) holds item \(quoted(id)) (a name collision)")
        }
        return (id, Data(reader.rest))
    }

    /// Writes a temporary file with the id and data, fsynced; returns its path.
    private func writeTemporary(_ id: String, _ data: Data) throws -> String {
        let temporary = directory + "/.tmp-" + UUID().uuidString
        var contents = Data()
        appendVarint(UInt64(id.utf8.count), to: &contents)
        contents.append(contentsOf: id.utf8)
        contents.append(data)
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL, 0o644)
        guard fd >= 0 else { throw failure("create \(temporary)", id) }
        defer { close(fd) }
        let written = contents.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        guard written == contents.count, fsync(fd) == 0 else {
            let error = failure("write \(temporary)", id)
            unlink(temporary)
            throw error
        }
        return temporary
    }

    private func syncDirectory() throws {
        let fd = open(directory, O_RDONLY)
        guard fd >= 0 else { throw failure("open directory \(directory)", nil) }
        defer { close(fd) }
        guard fsync(fd) == 0 else { throw failure("fsync directory \(directory)", nil) }
    }

    private func failure(_ operation: String, _ id: String?) -> RepositoryError {
        .storage(operation: operation, id: id, underlying: POSIXError(errno))
    }

    // MARK: RepositoryBackend

    /// The stored bytes of `id`, or nil.
    ///
    /// - Parameter id: The item's id.
    /// - Returns: The item's encoded bytes, or nil when none is stored under `id`.
    /// - Throws: The store's read errors.
    public func load(_ id: String) throws -> Data? { try read(path(id), id: id)?.data }

    /// Each item is linked into place atomically; when one fails, those already created by
    /// this call are removed again, so the batch is all or nothing (a crash in between can
    /// leave a prefix of the batch).
    ///
    /// - Parameter items: The ids and encoded bytes to store.
    /// - Throws: `RepositoryError.alreadyExists` when an id is taken; `.storage` when a file
    ///   cannot be written.
    public func insert(_ items: [(id: String, data: Data)]) throws {
        try checkInsert(items.map(\.id)) { try load($0) != nil }
        var created: [String] = []
        do {
            for (id, data) in items {
                let temporary = try writeTemporary(id, data)
                defer { unlink(temporary) }
                guard link(temporary, path(id)) == 0 else {
                    throw errno == EEXIST ? RepositoryError.alreadyExists(id: id) : failure("link \(path(id))", id)
                }
                created.append(path(id))
            }
            try syncDirectory()
        } catch {
            for path in created { unlink(path) }
            throw error
        }
    }

    /// Replaces a stored item atomically.
    /// - Throws: `RepositoryError.recordNotFound`.
    /// - Parameters:
    ///   - id: The item's id.
    ///   - data: Its new encoded bytes.
    public func replace(_ id: String, with data: Data) throws {
        guard try load(id) != nil else { throw RepositoryError.recordNotFound(id: id) }
        let temporary = try writeTemporary(id, data)
        guard rename(temporary, path(id)) == 0 else {
            let error = failure("rename to \(path(id))", id)
            unlink(temporary)
            throw error
        }
        try syncDirectory()
    }

    /// Removes items.
    /// - Throws: `RepositoryError.recordNotFound` for one not stored.
    /// - Parameter ids: The ids of the items to remove.
    public func remove(_ ids: [String]) throws {
        try checkRemove(ids) { try load($0) != nil }
        for id in ids where unlink(path(id)) != 0 && errno != ENOENT { throw failure("unlink \(path(id))", id) }
        try syncDirectory()
    }

    /// The ids starting with `prefix`, in byte order, at most `limit`.
    ///
    /// - Parameters:
    ///   - prefix: What the ids start with; "" for all.
    ///   - limit: The most ids to return; nil for all.
    /// - Returns: The ids, in byte order.
    /// - Throws: The store's read errors.
    public func ids(prefix: String, limit: Int?) throws -> [String] {
        let names = try FileManager.default.contentsOfDirectory(atPath: directory)
        let ids = try names.compactMap { name -> String? in
            if name.hasPrefix("i") { return Self.id(fromEscaped: name) }
            if name.hasPrefix("h") { return try read(directory + "/" + name, id: nil)?.id }
            return nil
        }
        return orderedIDs(ids, prefix: prefix, limit: limit)
    }
}

/// A `CRUDRepository` of one file per item in a directory.
public typealias FileSystemRepository = BackendRepository<FileSystemBackend>

extension BackendRepository where Backend == FileSystemBackend {
    /// A repository of one file per item in `directory`.
    ///
    /// - Parameters:
    ///   - directory: The directory's path, created when missing.
    ///   - transformer: How items become bytes (JSON by default).
    /// - Throws: `RepositoryError.storage` when the directory cannot be created.
    public init(directory: String, transformer: any DataTransformer = JSONDataTransformer()) throws {
        self.init(backend: try FileSystemBackend(directory: directory), transformer: transformer)
    }
}

extension String {
    func leftPadded(to length: Int) -> String {
        count >= length ? self : String(repeating: "0", count: length - count) + self
    }
}

extension POSIXError {
    init(_ code: Int32) { self.init(POSIXErrorCode(rawValue: code) ?? .EIO) }
}
