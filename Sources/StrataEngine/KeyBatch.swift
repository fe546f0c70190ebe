/// Encoded keys gathered for one batched lookup (`TreeHandle.withValues(_:_:)`): their bytes
/// in one array, so gathering a key allocates nothing once the batch has grown to its size.
/// Keep one and `removeAll()` it between batches to reuse its storage.
///
/// ```swift
/// var batch = KeyBatch()
/// for id: Int64 in [3, 5, 8] { batch.append(id) }
/// try users.withValues(batch) { i, value in
///     print(i, value?.count ?? 0)   // in the order the keys were appended
/// }
/// ```
public struct KeyBatch: Sendable {
    /// Every key's bytes, one after another.
    private var bytes: [UInt8] = []
    /// Where each key ends in `bytes`.
    private var ends: [Int] = []

    /// An empty batch.
    public init() {}

    /// How many keys the batch holds.
    public var count: Int { ends.count }

    /// Whether the batch holds no key.
    public var isEmpty: Bool { ends.isEmpty }

    /// Appends an encoded key (a copy of its bytes).
    /// - Parameter key: The encoded key, as trees store it.
    public mutating func append(_ key: UnsafeRawBufferPointer) {
        bytes.append(contentsOf: key)
        ends.append(bytes.count)
    }

    /// Appends an encoded key (a copy of its bytes).
    /// - Parameter key: The encoded key, as trees store it.
    public mutating func append(_ key: [UInt8]) {
        key.withUnsafeBytes { append($0) }
    }

    /// Appends the one-element key made of `key` (see `KeyComponent.withKeyBytes`).
    /// - Parameter key: The key's one element.
    public mutating func append(_ key: some KeyComponent) {
        key.withKeyBytes { append($0) }
    }

    /// Lends key `index` (in the order appended) to `body`.
    /// - Parameters:
    ///   - index: The key's position, below `count`.
    ///   - body: Reads the encoded key; the buffer is valid only during the call.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws.
    public func withKey<R>(at index: Int, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        precondition(index >= 0 && index < count, "key index out of range")
        return try withKeys { try body($0(index)) }
    }

    /// Removes every key, keeping the storage for the next batch.
    public mutating func removeAll() {
        bytes.removeAll(keepingCapacity: true)
        ends.removeAll(keepingCapacity: true)
    }

    /// Lends the keys to `body` as buffers into one array, valid only during the call.
    func withKeys<R>(_ body: (_ key: (Int) -> UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try bytes.withUnsafeBytes { raw in
            try ends.withUnsafeBufferPointer { ends in
                try body { i in
                    let start = i == 0 ? 0 : ends[i - 1]
                    return UnsafeRawBufferPointer(rebasing: raw[start ..< ends[i]])
                }
            }
        }
    }
}
