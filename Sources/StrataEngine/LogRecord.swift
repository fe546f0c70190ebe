/// The mutations of one transaction as stored in a log frame (FORMAT.md, "Log frames").
///
/// Payload: `u64 sequence, i64 commit time (ms since 1970), u32 operation count`, then the
/// operations. `select` names the tree that following `put`/`delete` operations act on,
/// so a batch of writes to one tree names it once.
enum LogOperationCode: UInt8 {
    case select = 1
    case put = 2
    case delete = 3
    case createTree = 4
    case dropTree = 5
    /// A put whose value the commit wrote in a value frame before its log frame (format 2).
    case putStored = 6
}

/// The large values of one commit (over `NodeLimits.maxInlineValue`), each in a value frame
/// of its own, laid out from `start` (the file's end when the transaction began) and written
/// with the commit, just before its log frame: a large value is compressed and written once,
/// where the log used to carry it and the next checkpoint to write it again (FORMAT.md §5.1).
struct PendingValueFrames {
    let start: UInt64
    let salt: UInt64
    /// The offset known synced as the frames are laid out (format 3; `Frame.encode`).
    let durableUpTo: UInt64?
    private(set) var bytes: [UInt8] = []
    /// Where each frame starts: the entries the commit pins in the value cache.
    private(set) var offsets: [UInt64] = []

    init(start: UInt64, salt: UInt64, durableUpTo: UInt64? = nil) {
        (self.start, self.salt, self.durableUpTo) = (start, salt, durableUpTo)
    }

    /// Where the next frame (and, after the last, the log frame) goes.
    var end: UInt64 { start + UInt64(bytes.count) }

    /// Encodes `value` as the next value frame; its address.
    mutating func append(_ value: UnsafeRawBufferPointer) -> FrameAddress {
        let offset = end
        let frame = Frame.encode(.value, payload: value, offset: offset, salt: salt, compress: true, durableUpTo: durableUpTo)
        bytes.append(contentsOf: frame)
        offsets.append(offset)
        return FrameAddress(offset: offset, length: UInt32(frame.count))
    }
}

/// Collects a transaction's operations as it runs.
struct LogBatchWriter {
    /// The payload as it will be stored: the operations after room for the header, which
    /// `takePayload` fills in, so that the payload is this array rather than a copy of it.
    /// (A copy is a second allocation as large as the transaction's log, and its page
    /// faults: insert.single-tx at 1M logs ~100 MB in one commit.)
    private var body: ByteWriter = {
        var body = ByteWriter(capacity: 256)
        body.raw(repeatElement(0, count: LogBatchHeader.size))
        return body
    }()
    private(set) var operationCount: UInt32 = 0
    private var selectedTree: String?

    var isEmpty: Bool { operationCount == 0 }

    private mutating func select(_ tree: String) {
        guard selectedTree != tree else { return }
        selectedTree = tree
        body.u8(LogOperationCode.select.rawValue)
        body.lengthPrefixed(tree.utf8)
    }

    mutating func put(tree: String, key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {
        select(tree)
        body.u8(LogOperationCode.put.rawValue)
        body.varint(key.count)
        body.raw(key)
        body.varint(value.count)
        body.raw(value)
        operationCount += 1
    }

    /// A put whose value is in the value frame at `address` (`length` bytes, raw).
    mutating func put(tree: String, key: UnsafeRawBufferPointer, storedAt address: FrameAddress, length: UInt32) {
        select(tree)
        body.u8(LogOperationCode.putStored.rawValue)
        body.varint(key.count)
        body.raw(key)
        body.u64(address.offset)
        body.u32(address.length)
        body.u32(length)
        operationCount += 1
    }

    mutating func delete(tree: String, key: UnsafeRawBufferPointer) {
        select(tree)
        body.u8(LogOperationCode.delete.rawValue)
        body.varint(key.count)
        body.raw(key)
        operationCount += 1
    }

    mutating func createTree(_ tree: String) {
        body.u8(LogOperationCode.createTree.rawValue)
        body.lengthPrefixed(tree.utf8)
        operationCount += 1
    }

    mutating func dropTree(_ tree: String) {
        body.u8(LogOperationCode.dropTree.rawValue)
        body.lengthPrefixed(tree.utf8)
        if selectedTree == tree { selectedTree = nil }
        operationCount += 1
    }

    /// The complete log payload for commit `sequence`, taken from the writer (its header
    /// written into the room left for it), which starts over empty.
    mutating func takePayload(sequence: UInt64, timeMilliseconds: Int64) -> [UInt8] {
        var taken = LogBatchWriter()
        swap(&taken, &self)
        var payload: [UInt8] = []
        swap(&payload, &taken.body.bytes)
        payload.withUnsafeMutableBytes { bytes in
            var header = InPlaceWriter(UnsafeMutableRawBufferPointer(rebasing: bytes[..<LogBatchHeader.size]))
            header.littleEndian(sequence)
            header.littleEndian(UInt64(bitPattern: timeMilliseconds))
            header.littleEndian(taken.operationCount)
        }
        return payload
    }
}

/// One decoded log operation; byte buffers are lent for the duration of the visit.
enum LogOperation {
    case put(tree: String, key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer)
    /// A put whose value is in a value frame before the log frame: `length` raw bytes.
    case putStored(tree: String, key: UnsafeRawBufferPointer, address: FrameAddress, length: UInt32)
    case delete(tree: String, key: UnsafeRawBufferPointer)
    case createTree(String)
    case dropTree(String)

    /// The tree the operation changes.
    var tree: String {
        switch self {
        case .put(let tree, _, _), .putStored(let tree, _, _, _), .delete(let tree, _), .createTree(let tree), .dropTree(let tree): tree
        }
    }
}

struct LogBatchHeader: Equatable {
    var sequence: UInt64
    var timeMilliseconds: Int64
    var operationCount: UInt32

    /// Bytes at the front of a log payload: sequence, commit time and operation count.
    static let size = 20
}

enum LogBatchReader {
    /// Decodes the batch header and visits every operation, checking all bounds. A stored
    /// value's frame must lie between the file's first frame and this log frame
    /// (`context.offset`): frames only point backwards.
    static func read(_ payload: [UInt8], context: CorruptionContext, visit: (LogOperation) throws -> Void) throws -> LogBatchHeader {
        try payload.withUnsafeBytes { raw in
            var r = ByteReader(raw, context: context)
            let header = LogBatchHeader(
                sequence: try r.u64("sequence"), timeMilliseconds: Int64(bitPattern: try r.u64("commit time")),
                operationCount: try r.u32("operation count"))
            var selected: String?
            var seen: UInt32 = 0
            func treeName() throws -> String {
                let bytes = try r.bytes(try r.length("tree name length", limit: 255), "tree name")
                guard let name = String(validating: bytes, as: UTF8.self) else { throw context.error("tree name is not UTF-8") }
                return name
            }
            while !r.isAtEnd {
                let code = try r.u8("operation code")
                switch LogOperationCode(rawValue: code) {
                case .select:
                    selected = try treeName()
                case .put, .delete:
                    guard let tree = selected else { throw context.error("operation before any tree was selected") }
                    let key = try r.bytes(try r.length("key length"), "key")
                    if code == LogOperationCode.put.rawValue {
                        let value = try r.bytes(try r.length("value length"), "value")
                        try visit(.put(tree: tree, key: key, value: value))
                    } else {
                        try visit(.delete(tree: tree, key: key))
                    }
                    seen += 1
                case .putStored:
                    guard let tree = selected else { throw context.error("operation before any tree was selected") }
                    let key = try r.bytes(try r.length("key length"), "key")
                    let address = FrameAddress(offset: try r.u64("value frame offset"), length: try r.u32("value frame length"))
                    let length = try r.u32("value length")
                    // `end` saturates: a crafted offset near 2^64 fails the check, not the process.
                    guard address.offset >= FileHeader.dataStart, Int(address.length) > FrameHeader.size,
                          address.end <= context.offset else {
                        throw context.error("value frame \(address.offset)+\(address.length) does not lie before its log frame")
                    }
                    guard Int(length) <= Database.maxValueSize else {
                        throw context.error("value of \(length) bytes exceeds the limit of \(Database.maxValueSize)")
                    }
                    try visit(.putStored(tree: tree, key: key, address: address, length: length))
                    seen += 1
                case .createTree:
                    try visit(.createTree(try treeName()))
                    seen += 1
                case .dropTree:
                    let name = try treeName()
                    if selected == name { selected = nil }
                    try visit(.dropTree(name))
                    seen += 1
                case nil:
                    throw context.error("unknown log operation \(code)")
                }
            }
            guard seen == header.operationCount else {
                throw context.error("log frame holds \(seen) operations, its header says \(header.operationCount)")
            }
            return header
        }
    }
}
