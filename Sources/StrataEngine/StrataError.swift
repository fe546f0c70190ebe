import Foundation

/// Every failure the engine reports. Each case carries what a user needs to act on it:
/// the file, the byte offset of damaged data, the versions involved, the original OS error.
public enum StrataError: Error, Sendable, Equatable, DescribedError {
    /// The file does not start with the Strata magic bytes.
    case notAStrataFile(path: String)
    /// The file was written by a newer Strata whose format this version cannot read.
    case unsupportedFormat(path: String, fileReadVersion: UInt16, fileWriteVersion: UInt16, supported: UInt16)
    /// The file can be read but was written by a newer format; it can only be opened read-only.
    case formatRequiresReadOnly(path: String, fileWriteVersion: UInt16, supported: UInt16)
    /// Bytes on disk failed verification (checksum, bounds, structure).
    case corruption(path: String, offset: UInt64, reason: String)
    /// Another handle or process holds the write lock on the file.
    case locked(path: String)
    /// An operating-system call failed.
    case io(operation: String, path: String, errno: Int32)
    /// An earlier write or sync failed; the handle refuses further writes until it is reopened.
    case poisoned(cause: String)
    /// The database was opened read-only.
    case readOnly(path: String)
    /// The database handle has been closed.
    case closed(path: String)
    /// No tree of this name exists; create it with `createTree`.
    case treeNotFound(String)
    /// `createTree` was asked for a name that exists (pass `ifNotExists: true` to allow it).
    case treeAlreadyExists(String)
    /// Tree names are 1 to 255 bytes of UTF-8.
    case invalidTreeName(String)
    /// A key longer than a quarter of the page size.
    case keyTooLarge(size: Int, limit: Int)
    /// Keys are at least one byte.
    case emptyKey
    /// A value longer than `Database.maxValueSize`.
    case valueTooLarge(size: Int, limit: Int)
    /// The transaction was already committed or rolled back.
    case transactionFinished
    /// A write of this transaction failed partway (a merge of buffered writes into a tree
    /// met a damaged page, say), leaving its changes incomplete: it can only roll back.
    case transactionFailed(cause: String)
    /// A write transaction (or checkpoint, compaction, close) was started on a thread that
    /// is already inside a write transaction of the same database: waiting would deadlock.
    case nestedTransaction(path: String)
    case invalidOption(String)

    public var description: String {
        switch self {
        case .notAStrataFile(let path):
            return "\(path) is not a Strata database (magic bytes do not match)"
        case .unsupportedFormat(let path, let r, let w, let supported):
            return "\(path) needs format read version \(r) (write version \(w)); this Strata reads up to version \(supported). Upgrade Strata to open it."
        case .formatRequiresReadOnly(let path, let w, let supported):
            return "\(path) was written with format write version \(w), newer than \(supported); open it with readOnly: true or upgrade Strata"
        case .corruption(let path, let offset, let reason):
            return "\(path) is corrupt at byte offset \(offset): \(reason)"
        case .locked(let path):
            return "database is locked: \(path) is open for writing by another handle or process (open read-only, or set Options.lockTimeout to wait for it)"
        case .io(let op, let path, let code):
            return "\(op) failed on \(path): \(String(cString: strerror(code))) (errno \(code))"
        case .poisoned(let cause):
            return "database handle is unusable for writes after an I/O failure (\(cause)); close and reopen it"
        case .readOnly(let path):
            return "\(path) is open read-only"
        case .closed(let path):
            return "\(path) has been closed"
        case .treeNotFound(let name):
            return "no tree named '\(name)'"
        case .treeAlreadyExists(let name):
            return "a tree named '\(name)' already exists"
        case .invalidTreeName(let name):
            return "invalid tree name '\(name)': names are 1 to 255 bytes of UTF-8"
        case .keyTooLarge(let size, let limit):
            return "key of \(size) bytes exceeds the limit of \(limit) bytes"
        case .emptyKey:
            return "keys must not be empty"
        case .valueTooLarge(let size, let limit):
            return "value of \(size) bytes exceeds the limit of \(limit) bytes"
        case .transactionFinished:
            return "the transaction has already been committed or rolled back"
        case .transactionFailed(let cause):
            return "a write of this transaction failed partway (\(cause)); its changes are incomplete: roll it back and start again"
        case .nestedTransaction(let path):
            return "a write transaction on \(path) is already open on this thread; do the work in that transaction instead of starting another (nesting would wait for itself forever)"
        case .invalidOption(let why):
            return "invalid option: \(why)"
        }
    }
}
