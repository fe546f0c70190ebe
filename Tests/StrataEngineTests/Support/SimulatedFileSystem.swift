import Foundation
import Synchronization
@testable import StrataEngine

/// An in-memory file system for fault tests, after SQLite's crash VFS and RocksDB's
/// FaultInjectionFileSystem: it remembers which writes are not yet synced, and on a
/// simulated power loss drops, tears or garbles them. It can also fail chosen operations
/// with an errno, or "crash" at the Nth operation (every later operation fails too).
final class SimulatedFileSystem: FileSystem, @unchecked Sendable {
    enum Operation: Equatable { case write, sync, truncate }

    struct Fault {
        var operation: Operation
        var errno: Int32
    }

    /// The contents of one file: what is durable, what reads see, and what is pending.
    final class Inode {
        var durable: [UInt8] = []
        var current: [UInt8] = []
        var pending: [Pending] = []
        var locked = false
    }

    enum Pending {
        case write(offset: Int, bytes: [UInt8])
        case truncate(Int)
    }

    private let lock = NSLock()
    private var inodes: [String: Inode] = [:]
    /// Operations (write, sync, truncate) counted across all files.
    private(set) var operationCount = 0
    /// When set, the operation with this number and all after it fail: the machine died.
    var crashAtOperation: Int?
    private(set) var hasCrashed = false
    /// Fails the next operation of a kind with an errno, once.
    var nextFault: Fault?
    /// Operations of `nextFault`'s kind to let through before it fires.
    var nextFaultSkipping = 0

    static let crashErrno: Int32 = EIO

    /// Called after each read, outside the lock, with the path, offset and bytes read: a
    /// test can let another handle write "while" a reader reads (the reader has its bytes
    /// already; its next reads see the writes). Cleared before it is called, so it runs once.
    var afterNextRead: (@Sendable (_ path: String, _ offset: UInt64, _ count: Int) -> Void)? {
        get { withLock { readHook } }
        set { withLock { readHook = newValue } }
    }
    private var readHook: (@Sendable (String, UInt64, Int) -> Void)?

    /// The read hook, taken (once) when `accept` says this read is the one.
    func takeReadHook(path: String, offset: UInt64, count: Int, accept: (UInt64, Int) -> Bool) -> (@Sendable (String, UInt64, Int) -> Void)? {
        withLock {
            guard let hook = readHook, accept(offset, count) else { return nil }
            readHook = nil
            return hook
        }
    }
    /// Called at the start of the next sync (of any file), outside the lock, once: a test
    /// can hold a sync "in flight" while other threads commit.
    /// Called each time a handle asks for a write lock another handle holds (outside the
    /// file system's lock): lets a test know an open is waiting, without sleeping.
    var onLockRefused: (@Sendable () -> Void)? {
        get { withLock { lockRefusedHook } }
        set { withLock { lockRefusedHook = newValue } }
    }
    private var lockRefusedHook: (@Sendable () -> Void)?
    /// How many lock requests were refused.
    private(set) var refusedLocks = 0

    func lockRefused() {
        let hook = withLock {
            refusedLocks += 1
            return lockRefusedHook
        }
        hook?()
    }

    var beforeNextSync: (@Sendable () -> Void)? {
        get { withLock { syncHook } }
        set { withLock { syncHook = newValue } }
    }
    private var syncHook: (@Sendable () -> Void)?

    /// The sync hook, taken (once).
    func takeSyncHook() -> (@Sendable () -> Void)? {
        withLock {
            defer { syncHook = nil }
            return syncHook
        }
    }

    /// Which reads fire `afterNextRead`: by default the first.
    var readHookFilter: @Sendable (_ offset: UInt64, _ count: Int) -> Bool = { _, _ in true }

    func withLock<R>(_ body: () throws -> R) rethrows -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body()
    }

    func inode(_ path: String) -> Inode? { withLock { inodes[path] } }

    /// Counts an operation and throws when it is the crash point or a planned fault.
    func check(_ operation: Operation, path: String) throws {
        try withLock {
            operationCount += 1
            if let crash = crashAtOperation, operationCount >= crash {
                hasCrashed = true
            }
            if hasCrashed { throw StrataError.io(operation: "simulated crash", path: path, errno: Self.crashErrno) }
            if let fault = nextFault, fault.operation == operation {
                if nextFaultSkipping > 0 {
                    nextFaultSkipping -= 1
                    return
                }
                nextFault = nil
                throw StrataError.io(operation: "injected \(operation)", path: path, errno: fault.errno)
            }
        }
    }

    /// What a power loss does to one unsynced change: a write is kept, dropped, torn (a
    /// prefix kept) or garbled (replaced by these bytes); a truncate is kept or dropped.
    enum Fate {
        case kept, dropped
        case torn(keeping: Int)
        case garbled([UInt8])
    }

    /// Power loss: each unsynced write is kept, dropped, torn or garbled at random; each
    /// unsynced truncate is kept or lost. Then the machine "reboots".
    func powerLoss<G: RandomNumberGenerator>(using rng: inout G) {
        powerLoss { change in
            switch change {
            case .truncate: return Bool.random(using: &rng) ? .kept : .dropped
            case .write(_, let bytes):
                switch Int.random(in: 0 ..< 100, using: &rng) {
                case 0 ..< 40: return .kept
                case 40 ..< 70: return .dropped
                case 70 ..< 85: return .torn(keeping: Int.random(in: 0 ... bytes.count, using: &rng))
                default: return .garbled((0 ..< bytes.count).map { _ in UInt8.random(in: 0 ... 255, using: &rng) })
                }
            }
        }
    }

    /// Power loss where `fate` decides what becomes of each unsynced change, in the order
    /// they were made: a test can drop one write and keep a later one, as a disk that writes
    /// back pages in any order may. Then the machine "reboots".
    func powerLoss(_ fate: (Pending) -> Fate) {
        withLock {
            for inode in inodes.values {
                var image = inode.durable
                for change in inode.pending {
                    switch (change, fate(change)) {
                    case (_, .dropped): break
                    case (.truncate(let size), _): Self.resize(&image, to: size)
                    case (.write(let offset, let bytes), .kept): Self.apply(bytes, at: offset, to: &image)
                    case (.write(let offset, let bytes), .torn(let keeping)): Self.apply(Array(bytes.prefix(keeping)), at: offset, to: &image)
                    case (.write(let offset, _), .garbled(let bytes)): Self.apply(bytes, at: offset, to: &image)
                    }
                }
                inode.durable = image
                inode.current = image
                inode.pending = []
                inode.locked = false
            }
            hasCrashed = false
            crashAtOperation = nil
            nextFault = nil
        }
    }

    static func apply(_ bytes: [UInt8], at offset: Int, to image: inout [UInt8]) {
        if image.count < offset + bytes.count { image += [UInt8](repeating: 0, count: offset + bytes.count - image.count) }
        image.replaceSubrange(offset ..< offset + bytes.count, with: bytes)
    }

    static func resize(_ image: inout [UInt8], to size: Int) {
        if image.count > size { image.removeLast(image.count - size) } else { image += [UInt8](repeating: 0, count: size - image.count) }
    }

    /// The bytes a reader would see now.
    func contents(of path: String) -> [UInt8] { withLock { inodes[path]?.current ?? [] } }

    /// Replaces a file's contents, durably (for corruption tests).
    func setContents(_ bytes: [UInt8], of path: String) {
        withLock {
            let inode = inodes[path] ?? Inode()
            inode.durable = bytes
            inode.current = bytes
            inode.pending = []
            inodes[path] = inode
        }
    }

    // MARK: FileSystem

    func open(_ path: String, mode: OpenMode) throws -> any StorageFile {
        try withLock {
            if let inode = inodes[path] { return SimulatedFile(fileSystem: self, inode: inode, path: path) }
            guard mode == .readWrite else { throw StrataError.io(operation: "open", path: path, errno: ENOENT) }
            let inode = Inode()
            inodes[path] = inode
            return SimulatedFile(fileSystem: self, inode: inode, path: path)
        }
    }

    func exists(_ path: String) -> Bool { withLock { inodes[path] != nil } }

    func identity(of path: String) -> FileIdentity? {
        withLock { inodes[path].map { FileIdentity(device: 1, inode: UInt64(UInt(bitPattern: ObjectIdentifier($0).hashValue))) } }
    }

    func remove(_ path: String) throws { withLock { inodes[path] = nil } }

    func rename(_ from: String, to: String) throws {
        try check(.sync, path: from)
        withLock {
            inodes[to] = inodes[from]
            inodes[from] = nil
        }
    }

    func linkIfAbsent(_ from: String, to: String) throws -> Bool {
        try check(.sync, path: from)
        return withLock {
            guard inodes[to] == nil else { return false }
            inodes[to] = inodes[from]
            return true
        }
    }

    func syncDirectory(containing path: String) throws { try check(.sync, path: path) }
}

final class SimulatedFile: StorageFile, @unchecked Sendable {
    let fileSystem: SimulatedFileSystem
    let inode: SimulatedFileSystem.Inode
    let path: String
    private var holdsLock = false

    init(fileSystem: SimulatedFileSystem, inode: SimulatedFileSystem.Inode, path: String) {
        self.fileSystem = fileSystem
        self.inode = inode
        self.path = path
    }

    func read(into buffer: UnsafeMutableRawBufferPointer, at offset: UInt64) throws -> Int {
        let n = fileSystem.withLock {
            let start = min(Int(offset), inode.current.count)
            let n = min(buffer.count, inode.current.count - start)
            inode.current.withUnsafeBytes { source in
                if n > 0 { buffer.baseAddress!.copyMemory(from: source.baseAddress! + start, byteCount: n) }
            }
            return n
        }
        let filter = fileSystem.withLock { fileSystem.readHookFilter }
        fileSystem.takeReadHook(path: path, offset: offset, count: n, accept: filter)?(path, offset, n)
        return n
    }

    func write(_ bytes: UnsafeRawBufferPointer, at offset: UInt64) throws {
        try fileSystem.check(.write, path: path)
        fileSystem.withLock {
            let data = Array(bytes)
            SimulatedFileSystem.apply(data, at: Int(offset), to: &inode.current)
            inode.pending.append(.write(offset: Int(offset), bytes: data))
        }
    }

    func sync() throws {
        fileSystem.takeSyncHook()?()
        try fileSystem.check(.sync, path: path)
        fileSystem.withLock {
            inode.durable = inode.current
            inode.pending = []
        }
    }

    func size() throws -> UInt64 { fileSystem.withLock { UInt64(inode.current.count) } }

    func truncate(to size: UInt64) throws {
        try fileSystem.check(.truncate, path: path)
        fileSystem.withLock {
            SimulatedFileSystem.resize(&inode.current, to: Int(size))
            inode.pending.append(.truncate(Int(size)))
        }
    }

    func tryLockExclusive() throws -> Bool {
        let taken = fileSystem.withLock {
            if inode.locked { return holdsLock }
            inode.locked = true
            holdsLock = true
            return true
        }
        if !taken { fileSystem.lockRefused() }
        return taken
    }

    func unlock() {
        fileSystem.withLock {
            if holdsLock { inode.locked = false }
            holdsLock = false
        }
    }

    func identity() -> FileIdentity { FileIdentity(device: 1, inode: UInt64(UInt(bitPattern: ObjectIdentifier(inode).hashValue))) }

    func close() { unlock() }
}
