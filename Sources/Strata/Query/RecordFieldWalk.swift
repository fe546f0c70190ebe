/// A walk over the top-level fields of a stored record (a keyed container), for the checks
/// that read a record's bytes without decoding it: the scan's conditions
/// (`RecordPrefilter.decides`) and the byte sort keys of a top-k (`ByteOrder`).
///
/// ```swift
/// guard var walk = RecordFieldWalk(record) else { return nil }
/// while let field = walk.nextField() {
///     if field == wanted { use(walk.position) }
///     guard walk.stepOverValue(in: context) else { return nil }
/// }
/// if walk.isMalformed { return nil }
/// ```
///
/// Everything is in line: a local walk keeps its state in registers (measured: a call per
/// field, or a closure per field, spilled and reloaded it, half the walk's instructions).
struct RecordFieldWalk {
    let record: UnsafeRawBufferPointer
    /// Where the current field's value starts (after `nextField()`), then where the walk is.
    private(set) var position: Int
    private var remaining: UInt64
    /// Whether the walk stopped at bytes that are not a well-formed field.
    private(set) var isMalformed = false

    /// Nil when `record` is not a keyed container with a readable field count.
    @inline(__always)
    init?(_ record: UnsafeRawBufferPointer) {
        guard record.count >= 2, record[0] == RecordTag.keyed.rawValue else { return nil }
        var p = 1
        guard let count = RecordBytes.varint(record, at: &p) else { return nil }
        self.record = record
        position = p
        remaining = count
    }

    /// The id of the next field, whose value then starts at `position`; nil after the last
    /// field, or at a malformed id (`isMalformed`).
    @inline(__always)
    mutating func nextField() -> UInt64? {
        guard remaining > 0 else { return nil }
        remaining -= 1
        guard let field = RecordBytes.varint(record, at: &position) else {
            isMalformed = true
            return nil
        }
        return field
    }

    /// Steps over the current field's value: integers and short strings in line, other
    /// values through `context` (which must read `record`). False at malformed bytes
    /// (`isMalformed`).
    @inline(__always)
    mutating func stepOverValue(in context: DecodingContext) -> Bool {
        if let end = RecordBytes.endOfScalar(record, at: position) {
            position = end
            return true
        }
        guard let end = try? context.skip(at: position) else {
            isMalformed = true
            return false
        }
        position = end
        return true
    }

    /// Steps over the current field's value when it is a scalar (`RecordBytes.endOfScalar`);
    /// false for a container or malformed bytes (then the walk stops, not `isMalformed`).
    @inline(__always)
    mutating func stepOverScalar() -> Bool {
        guard let end = RecordBytes.endOfScalar(record, at: position) else { return false }
        position = end
        return true
    }
}
