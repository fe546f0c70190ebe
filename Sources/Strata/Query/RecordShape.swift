import StrataEngine

/// The layout the records of one scan usually share up to the last field a condition is on:
/// each field's id and stored type, in order, learned from one record. A record with that
/// layout is checked by comparing two bytes per field and stepping over the value by its
/// known type, with no field lookup or type dispatch (`RecordPrefilter` uses it first and
/// walks the record field by field when it does not fit).
///
/// Records of one model written by one codec store their fields in the same order with the
/// same types, so nearly every record fits. Nothing is assumed: every id and tag byte the
/// shape relies on is compared, every length is bounded, and a record that differs in any
/// way (another field order, a `nil` where a value was, a long string, malformed bytes) is
/// answered by the full walk instead.
///
/// Measured on W1's scan.filter (`age` is the fourth field, after an integer and two
/// strings): the full walk took ~248 instructions per record; see Benchmarks/README.
struct RecordShape {
    /// One field of the shape.
    struct Step {
        /// The field's id byte and then its tag byte, read as one little-endian `UInt16`.
        let header: UInt16
        let action: Action

        enum Action: Equatable {
            /// Only stepped over.
            case stepOver
            /// A range on a signed integer, stored as one (the tag says so): its key bits
            /// must lie in `low ... low + span` (`FixedWidthCondition.integerBits`). Checked
            /// in line.
            case checkIntegerBits(low: UInt64, span: UInt64)
            /// Another condition: the index of the prefilter's fixed condition.
            case check(Int)
        }
    }

    /// The fields up to and including the last one a condition is on; never empty.
    let steps: [Step]

    /// The shape of `record` up to the last field one of `conditions` is on; nil when the
    /// record cannot serve as a shape: a field id above 127, a container before that field,
    /// two conditions on one field, a condition's field missing, or malformed bytes.
    init?(of record: UnsafeRawBufferPointer, conditions: UnsafeBufferPointer<FixedWidthCondition>) {
        guard !conditions.isEmpty, var walk = RecordFieldWalk(record) else { return nil }
        var steps: [Step] = [], found = 0
        while let field = walk.nextField() {
            let position = walk.position
            guard field < 0x80, position < record.count, let tag = RecordTag(rawValue: record[position]), Self.isScalar(tag) else { return nil }
            let matching = conditions.indices.filter { UInt64(conditions[$0].field) == field }
            guard matching.count <= 1 else { return nil }
            let action: Step.Action
            if let index = matching.first {
                if tag == .int, let bits = conditions[index].integerBits {
                    action = .checkIntegerBits(low: bits.low, span: bits.span)
                } else {
                    action = .check(index)
                }
            } else {
                action = .stepOver
            }
            steps.append(Step(header: UInt16(field) | UInt16(tag.rawValue) << 8, action: action))
            found += matching.count
            if found == conditions.count {
                self.steps = steps
                return
            }
            guard walk.stepOverScalar() else { return nil }
        }
        return nil
    }

    private static func isScalar(_ tag: RecordTag) -> Bool {
        switch tag {
        case .keyed, .unkeyed, .map: false
        default: true
        }
    }

    /// Whether `record` meets every condition, when it has this shape: true or false; nil
    /// when the record differs from the shape or a condition cannot tell on its bytes (the
    /// full walk then decides).
    @inline(__always)
    static func decides(_ record: UnsafeRawBufferPointer, steps: UnsafeBufferPointer<Step>,
                        conditions: UnsafePointer<FixedWidthCondition>, points: UnsafeBufferPointer<FixedKey>) -> Bool? {
        let size = record.count
        // A keyed record whose one-byte field count covers the shape.
        guard size >= 2, record[0] == RecordTag.keyed.rawValue, record[1] < 0x80, Int(record[1]) >= steps.count else { return nil }
        var p = 2
        var step = steps.baseAddress!
        let last = step + (steps.count - 1)
        while true {
            // Positions stay within the record (`endOfScalar` bounds every end), so the sums
            // below cannot overflow.
            guard p &+ 2 <= size else { return nil }
            let header = UInt16(littleEndian: record.loadUnaligned(fromByteOffset: p, as: UInt16.self))
            guard header == step.pointee.header else { return nil }
            let value = p &+ 1, payload = p &+ 2
            switch step.pointee.action {
            case .stepOver: break
            case .checkIntegerBits(let low, let span):
                var end = payload
                guard let stored = RecordBytes.varint(record, at: &end) else { return nil }
                guard Key.orderedBits(ZigZag.decode(stored)) &- low <= span else { return false }
                // The last step is a condition's (see `init`): every condition was met.
                if step == last { return true }
                p = end
                step += 1
                continue
            case .check(let index):
                guard let met = FixedWidthCondition.isMet(conditions + index, in: record, at: value, points: points) else { return nil }
                guard met else { return false }
                if step == last { return true }
            }
            guard let end = RecordBytes.endOfScalar(record, at: value) else { return nil }
            p = end
            step += 1
        }
    }
}
