import Foundation
import Synchronization

/// Files held in memory: what `Database.inMemory` runs on. The engine, the format and
/// every check are the same as on disk; syncs cost nothing and nothing outlives the
/// `Database` (as GRDB's and SQLite's in-memory databases, and SwiftData's
/// `isStoredInMemoryOnly`).
final class MemoryFileSystem: FileSystem {
    /// One file's bytes; shared by every name and handle that refers to it.
    final class Inode: Sendable {
        let number: UInt64
        let bytes = Mutex<[UInt8]>([])
        let locked = Atomic<Bool>(false)
        init(number: UInt64) { self.number = number }
    }

    private struct Directory {
        var files: [String: Inode] = [:]
        var nextInode: UInt64 = 1
    }

    private let directory = Mutex(Directory())

    func open(_ path: String, mode: OpenMode) throws -> any StorageFile {
        let inode = try directory.withLock { directory -> Inode in
            if let inode = directory.files[path] { return inode }
            guard mode == .readWrite else { throw StrataError.io(operation: "open", path: path, errno: ENOENT) }
            let inode = Inode(number: directory.nextInode)
            directory.nextInode += 1
            directory.files[path] = inode
            return inode
        }
        return MemoryFile(path: path, inode: inode)
    }

    func exists(_ path: String) throws -> Bool { directory.withLock { $0.files[path] != nil } }

    func identity(of path: String) throws -> FileIdentity? {
        directory.withLock { $0.files[path].map { FileIdentity(device: 0, inode: $0.number) } }
    }

    func remove(_ path: String) throws { _ = directory.withLock { $0.files.removeValue(forKey: path) } }

    func rename(_ from: String, to: String) throws {
        try directory.withLock { directory in
            guard let inode = directory.files.removeValue(forKey: from) else {
                throw StrataError.io(operation: "rename to \(to)", path: from, errno: ENOENT)
            }
            directory.files[to] = inode
        }
    }

    func linkIfAbsent(_ from: String, to: String) throws -> Bool {
        try directory.withLock { directory in
            guard let inode = directory.files[from] else { throw StrataError.io(operation: "link to \(to)", path: from, errno: ENOENT) }
            guard directory.files[to] == nil else { return false }
            directory.files[to] = inode
            return true
        }
    }

    func syncDirectory(containing path: String) throws {}
}

/// An open handle on a `MemoryFileSystem` file.
final class MemoryFile: StorageFile {
    let path: String
    private let inode: MemoryFileSystem.Inode
    private let holdsLock = Atomic<Bool>(false)

    init(path: String, inode: MemoryFileSystem.Inode) {
        (self.path, self.inode) = (path, inode)
    }

    func read(into buffer: UnsafeMutableRawBufferPointer, at offset: UInt64) throws -> Int {
        inode.bytes.withLock { bytes in
            guard offset < UInt64(bytes.count) else { return 0 }
            let start = Int(offset), count = min(buffer.count, bytes.count - start)
            guard count > 0 else { return 0 }
            bytes.withUnsafeBytes { buffer.baseAddress?.copyMemory(from: $0.baseAddress! + start, byteCount: count) }
            return count
        }
    }

    func write(_ source: UnsafeRawBufferPointer, at offset: UInt64) throws {
        guard source.count > 0 else { return }
        inode.bytes.withLock { bytes in
            let start = Int(offset), end = start + source.count
            if bytes.count < end { bytes.append(contentsOf: repeatElement(0, count: end - bytes.count)) }
            bytes.withUnsafeMutableBytes { ($0.baseAddress! + start).copyMemory(from: source.baseAddress!, byteCount: source.count) }
        }
    }

    func sync() throws {}

    func size() throws -> UInt64 { UInt64(inode.bytes.withLock { $0.count }) }

    func truncate(to size: UInt64) throws {
        inode.bytes.withLock { bytes in
            if Int(size) < bytes.count { bytes.removeSubrange(Int(size)...) } else { bytes.append(contentsOf: repeatElement(0, count: Int(size) - bytes.count)) }
        }
    }

    func tryLockExclusive() throws -> Bool {
        if holdsLock.load(ordering: .acquiring) { return true }
        guard inode.locked.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged else { return false }
        holdsLock.store(true, ordering: .releasing)
        return true
    }

    func unlock() {
        guard holdsLock.exchange(false, ordering: .acquiringAndReleasing) else { return }
        inode.locked.store(false, ordering: .releasing)
    }

    func identity() throws -> FileIdentity { FileIdentity(device: 0, inode: inode.number) }

    func close() { unlock() }
}
