#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

// The C library's calls whose Swift names collide with this file's methods, qualified
// once per platform.
#if canImport(Glibc)
private func posixOpen(_ path: String, _ flags: Int32, _ mode: mode_t) -> Int32 { Glibc.open(path, flags, mode) }
private func posixRename(_ from: String, _ to: String) -> Int32 { Glibc.rename(from, to) }
private func posixClose(_ fd: Int32) -> Int32 { Glibc.close(fd) }
#elseif canImport(Musl)
private func posixOpen(_ path: String, _ flags: Int32, _ mode: mode_t) -> Int32 { Musl.open(path, flags, mode) }
private func posixRename(_ from: String, _ to: String) -> Int32 { Musl.rename(from, to) }
private func posixClose(_ fd: Int32) -> Int32 { Musl.close(fd) }
#elseif canImport(Darwin)
private func posixOpen(_ path: String, _ flags: Int32, _ mode: mode_t) -> Int32 { Darwin.open(path, flags, mode) }
private func posixRename(_ from: String, _ to: String) -> Int32 { Darwin.rename(from, to) }
private func posixClose(_ fd: Int32) -> Int32 { Darwin.close(fd) }
#endif

/// One open file, as the engine uses it: positional reads and writes, sync, truncate and
/// an advisory lock. The engine talks to disk only through this protocol, so tests can
/// swap in a file that drops, tears or garbles unsynced writes, or fails on demand.
protocol StorageFile: AnyObject, Sendable {
    var path: String { get }
    /// Reads up to `buffer.count` bytes at `offset`; returns fewer only at end of file.
    func read(into buffer: UnsafeMutableRawBufferPointer, at offset: UInt64) throws -> Int
    /// Writes all of `bytes` at `offset`.
    func write(_ bytes: UnsafeRawBufferPointer, at offset: UInt64) throws
    /// Makes every completed write durable (fdatasync).
    func sync() throws
    func size() throws -> UInt64
    func truncate(to size: UInt64) throws
    /// Takes an exclusive advisory lock without waiting; false when another holder has it.
    func tryLockExclusive() throws -> Bool
    /// Releases the advisory lock, if held.
    func unlock()
    /// Which file this descriptor refers to (`fstat`).
    func identity() throws -> FileIdentity
    func close()
}

/// Which file a descriptor or a path refers to: device and inode, as `stat` reports them.
/// A handle compares the two after taking the write lock, because another process may have
/// renamed a new file over the path between its `open` and its `flock`.
struct FileIdentity: Hashable, Sendable {
    var device: UInt64
    var inode: UInt64

    init(_ info: stat) {
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
    }

    init(device: UInt64, inode: UInt64) {
        self.device = device
        self.inode = inode
    }
}

enum OpenMode: Sendable {
    case readOnly
    case readWrite
}

/// The directory-level operations the engine needs.
protocol FileSystem: Sendable {
    func open(_ path: String, mode: OpenMode) throws -> any StorageFile
    /// Whether a file is at `path`; throws when that cannot be known (a directory on the
    /// way cannot be searched, a component is not a directory): only ENOENT means "missing".
    func exists(_ path: String) throws -> Bool
    /// The identity of the file at `path`, or nil when there is none.
    func identity(of path: String) throws -> FileIdentity?
    func remove(_ path: String) throws
    func rename(_ from: String, to: String) throws
    /// Gives the file at `from` the additional name `to`, atomically, unless `to` exists;
    /// returns false then.
    func linkIfAbsent(_ from: String, to: String) throws -> Bool
    /// Makes a rename or create in the directory holding `path` durable.
    func syncDirectory(containing path: String) throws
}

extension StorageFile {
    /// Reads `count` bytes at `offset`; the result is shorter only at end of file.
    func read(count: Int, at offset: UInt64) throws -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        let n = try bytes.withUnsafeMutableBytes { try read(into: $0, at: offset) }
        if n < count { bytes.removeLast(count - n) }
        return bytes
    }

    func write(_ bytes: [UInt8], at offset: UInt64) throws {
        try bytes.withUnsafeBytes { try write($0, at: offset) }
    }
}

/// The real file system, through POSIX calls.
struct POSIXFileSystem: FileSystem {
    func open(_ path: String, mode: OpenMode) throws -> any StorageFile {
        let flags: Int32 = mode == .readOnly ? O_RDONLY | O_CLOEXEC : O_RDWR | O_CREAT | O_CLOEXEC
        let fd = retryingOnInterrupt { posixOpen(path, flags, 0o644) }
        guard fd >= 0 else { throw StrataError.io(operation: "open", path: path, errno: errno) }
        return POSIXFile(fd: fd, path: path, writable: mode == .readWrite)
    }

    func exists(_ path: String) throws -> Bool { try identity(of: path) != nil }

    func identity(of path: String) throws -> FileIdentity? {
        var info = stat()
        if stat(path, &info) == 0 { return FileIdentity(info) }
        if errno == ENOENT { return nil }
        throw StrataError.io(operation: "stat", path: path, errno: errno)
    }

    func remove(_ path: String) throws {
        guard unlink(path) == 0 || errno == ENOENT else { throw StrataError.io(operation: "unlink", path: path, errno: errno) }
    }

    func rename(_ from: String, to: String) throws {
        guard posixRename(from, to) == 0 else { throw StrataError.io(operation: "rename to \(to)", path: from, errno: errno) }
    }

    func linkIfAbsent(_ from: String, to: String) throws -> Bool {
        if link(from, to) == 0 { return true }
        if errno == EEXIST { return false }
        throw StrataError.io(operation: "link to \(to)", path: from, errno: errno)
    }

    func syncDirectory(containing path: String) throws {
        let directory = path.contains("/") ? String(path[..<path.lastIndex(of: "/")!]) : "."
        let fd = posixOpen(directory.isEmpty ? "/" : directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0)
        guard fd >= 0 else { throw StrataError.io(operation: "open directory", path: directory, errno: errno) }
        defer { _ = posixClose(fd) }
        guard fsync(fd) == 0 else { throw StrataError.io(operation: "fsync directory", path: directory, errno: errno) }
    }
}

@inline(__always)
func retryingOnInterrupt<T: BinaryInteger>(_ call: () -> T) -> T {
    while true {
        let result = call()
        if result >= 0 || errno != EINTR { return result }
    }
}

final class POSIXFile: StorageFile {
    let fd: Int32
    let path: String
    private let writable: Bool
    private let isClosed = Atomic<Bool>(false)

    init(fd: Int32, path: String, writable: Bool) {
        self.fd = fd
        self.path = path
        self.writable = writable
    }

    func read(into buffer: UnsafeMutableRawBufferPointer, at offset: UInt64) throws -> Int {
        var done = 0
        while done < buffer.count {
            let n = retryingOnInterrupt { pread(fd, buffer.baseAddress! + done, buffer.count - done, off_t(offset) + off_t(done)) }
            if n < 0 { throw StrataError.io(operation: "pread", path: path, errno: errno) }
            if n == 0 { break }
            done += n
        }
        return done
    }

    func write(_ bytes: UnsafeRawBufferPointer, at offset: UInt64) throws {
        var done = 0
        while done < bytes.count {
            let n = retryingOnInterrupt { pwrite(fd, bytes.baseAddress! + done, bytes.count - done, off_t(offset) + off_t(done)) }
            if n < 0 { throw StrataError.io(operation: "pwrite", path: path, errno: errno) }
            done += n
        }
    }

    func sync() throws {
        #if canImport(Darwin)
        // On Darwin fsync and fdatasync leave data in the drive's cache; only F_FULLFSYNC
        // reaches stable storage (as SQLite's fullfsync and LMDB do).
        guard fcntl(fd, F_FULLFSYNC) == 0 else { throw StrataError.io(operation: "fcntl(F_FULLFSYNC)", path: path, errno: errno) }
        #else
        guard fdatasync(fd) == 0 else { throw StrataError.io(operation: "fdatasync", path: path, errno: errno) }
        #endif
    }

    func identity() throws -> FileIdentity {
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw StrataError.io(operation: "fstat", path: path, errno: errno) }
        return FileIdentity(info)
    }

    func size() throws -> UInt64 {
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw StrataError.io(operation: "fstat", path: path, errno: errno) }
        return UInt64(info.st_size)
    }

    func truncate(to size: UInt64) throws {
        guard retryingOnInterrupt({ ftruncate(fd, off_t(size)) }) == 0 else {
            throw StrataError.io(operation: "ftruncate", path: path, errno: errno)
        }
    }

    func tryLockExclusive() throws -> Bool {
        if flock(fd, LOCK_EX | LOCK_NB) == 0 { return true }
        if errno == EWOULDBLOCK { return false }
        throw StrataError.io(operation: "flock", path: path, errno: errno)
    }

    func unlock() { _ = flock(fd, LOCK_UN) }

    func close() {
        if isClosed.exchange(true, ordering: .acquiringAndReleasing) { return }
        // A file a compaction replaced gives its space back in steps (`SpaceRelease`).
        SpaceRelease.close(fd, path: path, writable: writable) { _ = posixClose($0) }
    }

    deinit { close() }
}
