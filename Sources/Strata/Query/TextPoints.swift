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
    /// The length of the only wanted string, held by itself so an element of another length
    /// costs one comparison; -1 when there are several.
    private let onlyLength: Int

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
                          onlyLength: strings.count == 1 ? strings[0].count : -1)
    }

    func deallocate() {
        storage.deallocate()
        UnsafeMutableBufferPointer(mutating: strings).baseAddress.map { $0.deallocate() }
    }

    /// Whether `text` (stored text's bytes) is one of the wanted strings: nil when it is not
    /// one by its bytes and is not ASCII.
    @inline(__always)
    func matches(_ text: UnsafeRawBufferPointer) -> Bool? {
        for string in strings where string.count == text.count {
            if equalBytes(text, string) { return true }
        }
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
        guard let base = buffer.baseAddress else { return nil }
        let size = buffer.count
        var p = position, notString = false, remaining = count
        while remaining > 0 {
            remaining &-= 1
            guard p >= 0, p &+ 1 < size else { return nil }
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
            if onlyLength >= 0, onlyLength != length { continue }
            let text = UnsafeRawBufferPointer(start: base + start, count: length)
            for string in strings where string.count == length {
                if equalBytes(text, string) { return true }
            }
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
