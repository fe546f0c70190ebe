import StrataEngine

/// The layout the records of one scan usually share up to the last field a condition is on:
/// each field's id and stored type, in order, learned from one record. A record with that
/// layout is checked by comparing two bytes per field and stepping over the value by its
/// known type, with no field lookup or type dispatch (`RecordPrefilter` uses it first and
/// walks the record field by field when it does not fit).
///
/// It checks the fixed conditions (`FixedWidthCondition`) and string equality on text or on
/// an array's elements (`TextPoints`): a scan whose every condition is of those kinds.
/// An array condition must be on the last field a condition is on; the array is not
/// stepped over.
///
/// Records of one model written by one codec store their fields in the same order with the
/// same types, so nearly every record fits. Nothing is assumed: every id and tag byte the
/// shape relies on is compared, every length is bounded, and a record that differs in any
/// way (another field order, a `nil` where a value was, a long string, malformed bytes) is
/// answered by the full walk instead.
///
/// Measured on W1's scan.filter (`age` is the fourth field, after an integer and two
/// strings): the full walk took ~248 instructions per record; see Benchmarks/README. On
/// W2's (`tags contains`, after an integer and two strings): the walk and its calls took
/// ~490 instructions per document more than the layout.
struct RecordShape {
    /// One field of the shape: the two bytes it starts with, and what is done with its value
    /// — stepped over by the way its stored type is laid out, or checked. Each step knows its
    /// value's layout from the shape, so no tag is dispatched on per record (measured: a
    /// step that dispatched on the tag through `RecordBytes.endOfScalar` cost ~38
    /// instructions per field, W1 typed scan.filter, callgrind).
    struct Step {
        /// The field's id byte and then its tag byte, read as one little-endian `UInt16`.
        let header: UInt16
        let kind: Kind
        /// Whether this is the shape's last step (always a condition's, see `init`): once it
        /// is met, every condition is.
        var isLast = false
        /// `.fixedWidth`: the value's size after its tag. `.condition`: the index of the
        /// prefilter's fixed condition.
        let operand: Int
        /// `.integerBits`: the condition's key bits must lie in `low ... low + span`.
        let low: UInt64, span: UInt64
        /// `.text` and `.someElement`: the strings wanted.
        let text: TextPoints?

        enum Kind: UInt8 {
            /// Stepped over: a varint (signed or unsigned integer).
            case varint
            /// Stepped over: a varint length, then that many bytes (text, data, URL, decimal).
            case lengthPrefixed
            /// Stepped over: `operand` bytes.
            case fixedWidth
            /// A range on a signed integer, stored as one (the tag says so): its key bits
            /// must lie in `low ... low + span` (`FixedWidthCondition.integerBits`). Checked
            /// in line.
            case integerBits
            /// Another condition: `operand` is its index among the prefilter's fixed ones.
            case condition
            /// Text equal to one of `text`'s strings.
            case text
            /// An array with an element equal to one of `text`'s strings (`contains`). Always
            /// the last step: the array is not stepped over.
            case someElement
        }

        init(header: UInt16, kind: Kind, operand: Int = 0, low: UInt64 = 0, span: UInt64 = 0, text: TextPoints? = nil) {
            (self.header, self.kind, self.operand, self.low, self.span, self.text) = (header, kind, operand, low, span, text)
        }
    }

    /// The fields up to and including the last one a condition is on; never empty.
    let steps: [Step]

    /// A string-equality condition a shape checks: on the field's text, or on its array's
    /// elements.
    struct TextCondition {
        let field: UInt32
        let onElements: Bool
        let strings: TextPoints
    }

    /// The shape of `record` up to the last field one of `conditions` or `texts` is on; nil
    /// when the record cannot serve as a shape: a field id above 127, a container before
    /// that field, two conditions on one field, an array condition before another
    /// condition's field, a condition's field missing or of another stored type, or
    /// malformed bytes.
    init?(of record: UnsafeRawBufferPointer, conditions: UnsafeBufferPointer<FixedWidthCondition>, texts: [TextCondition] = []) {
        let total = conditions.count + texts.count
        guard total > 0, var walk = RecordFieldWalk(record) else { return nil }
        var steps: [Step] = [], found = 0
        while let field = walk.nextField() {
            let position = walk.position
            guard field < 0x80, position < record.count, let tag = RecordTag(rawValue: record[position]) else { return nil }
            let header = UInt16(field) | UInt16(tag.rawValue) << 8
            let matching = conditions.indices.filter { UInt64(conditions[$0].field) == field }
            let matchingText = texts.filter { UInt64($0.field) == field }
            guard matching.count + matchingText.count <= 1 else { return nil }
            if let text = matchingText.first {
                guard tag == (text.onElements ? .unkeyed : .string) else { return nil }
                steps.append(Step(header: header, kind: text.onElements ? .someElement : .text, text: text.strings))
                found += 1
                if found == total {
                    steps[steps.count - 1].isLast = true
                    self.steps = steps
                    return
                }
                guard !text.onElements else { return nil }
            } else if let index = matching.first {
                guard tag != .keyed, tag != .unkeyed, tag != .map else { return nil }
                if tag == .int, let bits = conditions[index].integerBits {
                    steps.append(Step(header: header, kind: .integerBits, low: bits.low, span: bits.span))
                } else {
                    steps.append(Step(header: header, kind: .condition, operand: index))
                }
                found += 1
                if found == total {
                    steps[steps.count - 1].isLast = true
                    self.steps = steps
                    return
                }
            } else {
                guard let step = Self.stepOver(tag, header: header) else { return nil }
                steps.append(step)
            }
            guard walk.stepOverScalar() else { return nil }
        }
        return nil
    }

    /// The step over a value stored with `tag`; nil for a container.
    private static func stepOver(_ tag: RecordTag, header: UInt16) -> Step? {
        switch tag {
        case .int, .uint: return Step(header: header, kind: .varint)
        case .string, .bytes, .url, .decimal: return Step(header: header, kind: .lengthPrefixed)
        default:
            guard let size = RecordBytes.fixedSize(of: tag) else { return nil }
            return Step(header: header, kind: .fixedWidth, operand: size)
        }
    }

    /// Whether `record` meets every condition, when it has this shape: true or false; nil
    /// when the record differs from the shape or a condition cannot tell on its bytes (the
    /// full walk then decides).
    ///
    /// One bounds check per step, at its start: it covers the step's two header bytes and
    /// the first byte of its value. A step over a fixed-width value reads nothing more, and
    /// the position it moves to is checked by the next step; the last step is always a
    /// condition's, which bounds its own reads, so nothing is read past the record.
    @inline(__always)
    static func decides(_ record: UnsafeRawBufferPointer, steps: UnsafeBufferPointer<Step>,
                        conditions: UnsafeBufferPointer<FixedWidthCondition>, points: UnsafeBufferPointer<FixedKey>) -> Bool? {
        let size = record.count
        // A keyed record whose one-byte field count covers the shape.
        guard size >= 2, let bytes = record.baseAddress, bytes.load(as: UInt8.self) == RecordTag.keyed.rawValue else { return nil }
        let fieldCount = bytes.load(fromByteOffset: 1, as: UInt8.self)
        guard fieldCount < 0x80, Int(fieldCount) >= steps.count else { return nil }
        var p = 2
        var step = steps.baseAddress!
        while true {
            // `p` is at most a fixed-width step's reach (2 + 16 bytes) past `size`: no overflow.
            guard p &+ 3 <= size else { return nil }
            guard UInt16(littleEndian: bytes.loadUnaligned(fromByteOffset: p, as: UInt16.self)) == step.pointee.header else { return nil }
            let payload = p &+ 2
            switch step.pointee.kind {
            case .lengthPrefixed:
                guard let end = RecordBytes.endOfLengthPrefixed(record, lengthAt: payload) else { return nil }
                p = end
            case .varint:
                guard let end = RecordBytes.endOfVarint(record, at: payload) else { return nil }
                p = end
            case .fixedWidth:
                p = payload &+ step.pointee.operand
            case .integerBits:
                var end = payload
                guard let stored = RecordBytes.varint(record, at: &end) else { return nil }
                guard Key.orderedBits(ZigZag.decode(stored)) &- step.pointee.low <= step.pointee.span else { return false }
                if step.pointee.isLast { return true }
                p = end
            case .condition:
                guard let met = FixedWidthCondition.isMet(conditions.baseAddress! + step.pointee.operand, in: record, at: p &+ 1, points: points) else { return nil }
                guard met else { return false }
                if step.pointee.isLast { return true }
                guard let end = RecordBytes.endOfScalar(record, at: p &+ 1) else { return nil }
                p = end
            case .text:
                guard let text = RecordBytes.payload(bytes, size: size, lengthAt: payload) else { return nil }
                guard let met = step.pointee.text.unsafelyUnwrapped.matches(UnsafeRawBufferPointer(rebasing: record[text])) else { return nil }
                guard met else { return false }
                if step.pointee.isLast { return true }
                p = text.upperBound
            case .someElement:
                var start = payload
                guard let count = RecordBytes.varint(bytes, size: size, at: &start) else { return nil }
                return step.pointee.text.unsafelyUnwrapped.someElement(record, from: start, count: count)
            }
            step += 1
        }
    }
}
