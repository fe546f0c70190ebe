import StrataEngine

/// The strings a string-equality condition wants (`==`, `IN`, an array's `contains`), as
/// UTF-8 in one allocation, compared with stored text as it is: no key is built and no
/// `String` made per record. What `RecordPrefilter`'s walk and `RecordShape`'s steps both
/// check stored text with.
///
/// Equal bytes are equal strings. Other bytes are another string only when the stored text
/// is ASCII (ASCII is its own normalized form); other text may equal a wanted string in
/// another normalization, so those checks answer nil and decoding tells.
///
/// A trivial value: whoever makes one with `allocate` frees it with `deallocate`, once.
struct TextPoints {
    /// Each wanted string's UTF-8, pointing into `storage`.
    let strings: UnsafeBufferPointer<UnsafeRawBufferPointer>
    private let storage: UnsafeMutableRawBufferPointer
    /// Bit `min(L, 63)` set for each wanted string's length `L`: stored text of a length
    /// no wanted string has is passed over with a shift and a test (`mayBeWanted`).
    private let lengths: UInt64

    /// Copies `strings` into memory of its own.
    static func allocate(_ strings: [[UInt8]]) -> TextPoints {
        let storage = UnsafeMutableRawBufferPointer.allocate(byteCount: max(1, strings.reduce(0) { $0 + $1.count }), alignment: 8)
        let views = UnsafeMutableBufferPointer<UnsafeRawBufferPointer>.allocate(capacity: max(1, strings.count))
        var offset = 0
        for (i, string) in strings.enumerated() {
            let target = UnsafeMutableRawBufferPointer(rebasing: storage[offset ..< offset + string.count])
            target.copyBytes(from: string)
            (views.baseAddress! + i).initialize(to: UnsafeRawBufferPointer(target))
            offset += string.count
        }
        return TextPoints(strings: UnsafeBufferPointer(rebasing: views[..<strings.count]), storage: storage,
                          lengths: strings.reduce(0) { $0 | 1 << min($1.count, 63) })
    }

    /// Whether some wanted string is `length` bytes long, or may be (63 bytes or more).
    @inline(__always)
    private func mayBeWanted(length: Int) -> Bool {
        lengths &>> min(length, 63) & 1 != 0
    }

    /// Whether `text` is one of the wanted strings by its bytes. Out of line: called only
    /// for text of a wanted length, so that the element loop keeps its state in registers.
    @inline(never)
    private func isWanted(_ text: UnsafeRawBufferPointer) -> Bool {
        for string in strings where string.count == text.count {
            if equalBytes(text, string) { return true }
        }
        return false
    }

    func deallocate() {
        storage.deallocate()
        UnsafeMutableBufferPointer(mutating: strings).baseAddress.map { $0.deallocate() }
    }

    /// Whether `text` (stored text's bytes) is one of the wanted strings: nil when it is not
    /// one by its bytes and is not ASCII.
    @inline(__always)
    func matches(_ text: UnsafeRawBufferPointer) -> Bool? {
        if mayBeWanted(length: text.count), isWanted(text) { return true }
        return DecodingContext.isASCII(text) ? false : nil
    }

    /// Whether one of the `count` elements from `position` in `buffer` is a wanted string:
    /// true at the first that is; false when every element is ASCII text and none is; nil
    /// when an element is not a string or not ASCII (and none matched), or the bytes are
    /// malformed.
    ///
    /// Each element is compared in place, with no call, copy or reference count per element:
    /// a short string (a one-byte length, the usual tag) is read by two loads and one bounds
    /// check; anything else goes through `RecordBytes`. Positions are bounded by the buffer's
    /// size, so their sums cannot overflow. (Checked arithmetic and a loop over the wanted
    /// strings' lengths were most of ~49 instructions per element; a general varint and a
    /// bounds check per byte read, ~40 (W2 typed scan.filter, callgrind).)
    @inline(__always)
    func someElement(_ buffer: UnsafeRawBufferPointer, from position: Int, count: UInt64) -> Bool? {
        guard let base = buffer.baseAddress, position >= 0 else { return nil }
        let size = buffer.count
        // `p` only grows (each element ends after it starts), so it stays at or above zero.
        var p = position, notString = false, remaining = count
        while remaining > 0 {
            remaining &-= 1
            guard p &+ 1 < size else { return nil }
            var start = p &+ 2, length = Int(base.load(fromByteOffset: p &+ 1, as: UInt8.self))
            if base.load(fromByteOffset: p, as: UInt8.self) != RecordTag.string.rawValue {
                notString = true
                guard let end = RecordBytes.endOfScalar(buffer, at: p) else { return nil }
                p = end
                continue
            }
            if length >= 0x80 {
                guard let long = RecordBytes.payload(base, size: size, lengthAt: p &+ 1) else { return nil }
                (start, length) = (long.lowerBound, long.count)
            }
            guard length <= size &- start else { return nil }
            p = start &+ length
            if mayBeWanted(length: length), isWanted(UnsafeRawBufferPointer(start: base + start, count: length)) { return true }
        }
        if notString { return nil }
        // None matched: the answer is no when every element is ASCII. The elements' tags
        // and one-byte lengths are ASCII bytes too, so one pass over the array's bytes
        // usually tells; else each element's text is checked.
        let elements = UnsafeRawBufferPointer(rebasing: buffer[position ..< p])
        return DecodingContext.isASCII(elements) || Self.everyStringIsASCII(buffer, from: position, count: count) ? false : nil
    }

    /// Whether each of the `count` strings from `position` (checked well-formed by the
    /// caller) is ASCII text.
    @inline(never)
    private static func everyStringIsASCII(_ buffer: UnsafeRawBufferPointer, from position: Int, count: UInt64) -> Bool {
        guard let base = buffer.baseAddress else { return false }
        var p = position
        for _ in 0 ..< count {
            guard let text = RecordBytes.payload(base, size: buffer.count, lengthAt: p + 1),
                  DecodingContext.isASCII(UnsafeRawBufferPointer(rebasing: buffer[text])) else { return false }
            p = text.upperBound
        }
        return true
    }
}
