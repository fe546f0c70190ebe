import StrataEngine

/// Conditions on a record's top-level numeric, Boolean and (ASCII) string fields, and on the
/// elements of its top-level arrays of those, checked on its stored
/// bytes before it is decoded: a full scan skips most non-matching records without running
/// `Decodable`. Only a first pass: a record it admits is decoded and checked in full, so it
/// must never reject a match, and admits whenever it is unsure (field absent, stored type
/// not the condition's, nested field, malformed bytes — decoding then reports those).
///
/// Only fields the model declares (`Model.storedFields`, which `@StoredModel` writes for
/// every property) are checked here: a declaration says which stored field a key path reads,
/// and that the value is stored as the key path reads it. A plain `Codable` property may be
/// stored under another coding key or transformed by a custom `init(from:)`, which nothing
/// short of running the model's coding could tell, so its conditions are left to the full
/// check.
struct RecordPrefilter {
    private struct Condition {
        let field: UInt32
        let bounds: FieldBounds
        /// The key tag of the bounds: what the stored value must be converted to.
        let kind: UInt8
        /// Whether the field is an array one of whose elements must be within the bounds.
        let onElements: Bool
    }

    private let conditions: [Condition]
    /// Reused for every record of one query's scan (a scan runs on one thread).
    private let context: DecodingContext
    /// Whether every condition it was given is checked here (none was left to decoding).
    let checksAll: Bool

    /// Nil when no condition can be checked on the bytes.
    /// `elements` are conditions on array fields, met when one element is within the bounds.
    init?<M>(_ conditions: [(AnyKeyPath, FieldBounds)], elements: [(AnyKeyPath, FieldBounds)] = [],
             of description: ModelDescription<M>, fields: FieldTable, collection: String) {
        func condition(_ keyPath: AnyKeyPath, _ bounds: FieldBounds, onElements: Bool) -> Condition? {
            guard let declared = description.field(keyPath), let field = fields.id(of: declared.name),
                  let kind = Self.kind(of: bounds) else { return nil }
            return Condition(field: field, bounds: bounds, kind: kind, onElements: onElements)
        }
        self.conditions = conditions.compactMap { condition($0, $1, onElements: false) }
            + elements.compactMap { condition($0, $1, onElements: true) }
        guard !self.conditions.isEmpty else { return nil }
        checksAll = self.conditions.count == conditions.count + elements.count
        context = DecodingContext(buffer: UnsafeRawBufferPointer(start: nil, count: 0), fields: fields, collection: collection)
    }

    /// The tag shared by every bound, when it is one this filter can compare.
    private static func kind(of bounds: FieldBounds) -> UInt8? {
        var keys: [[UInt8]] = []
        switch bounds {
        case .points(let points): keys = points
        case .range(let lower, let upper):
            for bound in [lower, upper] {
                switch bound {
                case .included(let k), .excluded(let k): keys.append(k)
                case .unbounded: break
                }
            }
        }
        guard let tag = keys.first?.first, keys.allSatisfy({ $0.first == tag }) else { return nil }
        return [KeyTag.int, KeyTag.uint, KeyTag.double, KeyTag.falseValue, KeyTag.trueValue, KeyTag.string].contains(tag) ? tag : nil
    }

    /// False only when a condition is certainly not met. `scratch` is reused across records.
    func admits(_ record: UnsafeRawBufferPointer, scratch: inout Key) -> Bool {
        decides(record, scratch: &scratch) != false
    }

    /// Whether the record meets every condition: true or false when its bytes tell for
    /// each, nil when one is unsure (field absent, another stored type, malformed bytes) —
    /// then decoding must tell. With `checksAll` and no other condition in the query, a
    /// decision is the query's answer (counts need not decode).
    func decides(_ record: UnsafeRawBufferPointer, scratch: inout Key) -> Bool? {
        var decided = 0, rejected = false
        let walked = Self.forEachField(of: record, in: context) { field, position in
            for condition in conditions where condition.field == field {
                let met = condition.onElements
                    ? try Self.someElement(context, at: position, meets: condition, scratch: &scratch)
                    : try Self.value(context, at: position, meets: condition, scratch: &scratch)
                guard let met else { continue }
                guard met else {
                    rejected = true
                    return false
                }
                decided += 1
            }
            return true
        }
        if rejected { return false }
        return walked && decided == conditions.count ? true : nil
    }

    /// Whether the value at `position` meets `condition`; nil when its stored type cannot tell.
    @inline(__always)
    private static func value(_ context: DecodingContext, at position: Int, meets condition: Condition, scratch: inout Key) throws -> Bool? {
        scratch.removeAll()
        guard try storedKey(context, at: position, as: condition.kind, into: &scratch) else { return nil }
        return contains(condition.bounds, scratch.bytes)
    }

    /// Whether the array at `position` has an element meeting `condition`: true at the first
    /// that does, false when every element was checked and none does, nil when the value is
    /// not an array or an element's stored type cannot tell (non-ASCII text, say).
    private static func someElement(_ context: DecodingContext, at position: Int, meets condition: Condition, scratch: inout Key) throws -> Bool? {
        guard try context.tag(at: position) == .unkeyed else { return nil }
        var p = position + 1
        let count = try context.varint(at: &p)
        var unsure = false
        for _ in 0 ..< count {
            switch try value(context, at: p, meets: condition, scratch: &scratch) {
            case true?: return true
            case nil: unsure = true
            case false?: break
            }
            p = try context.skip(at: p)
        }
        return unsure ? nil : false
    }

    /// Calls `body` with each top-level field's id and the position of its value, while it
    /// returns true; false when the record is not a keyed container, is malformed, or `body`
    /// stopped or threw.
    @inline(__always)
    static func forEachField(of record: UnsafeRawBufferPointer, in context: DecodingContext,
                             _ body: (_ field: UInt32, _ position: Int) throws -> Bool) -> Bool {
        context.buffer = record
        do {
            guard try context.tag(at: 0) == .keyed else { return false }
            var p = 1
            let count = try context.varint(at: &p)
            for _ in 0 ..< count {
                let field = UInt32(truncatingIfNeeded: try context.varint(at: &p))
                guard try body(field, p) else { return false }
                p = try context.skip(at: p)
            }
            return true
        } catch {
            return false
        }
    }

    /// Appends the key of the value at `position` converted to `kind`; false when the stored
    /// type cannot be (exactly) converted.
    fileprivate static func storedKey(_ context: DecodingContext, at position: Int, as kind: UInt8, into key: inout Key) throws -> Bool {
        var p = position + 1
        switch (try context.tag(at: position), kind) {
        case (.int, KeyTag.int): key.append(ZigZag.decode(try context.varint(at: &p)))
        case (.uint, KeyTag.uint): key.append(try context.varint(at: &p))
        case (.int, KeyTag.uint):
            let value = ZigZag.decode(try context.varint(at: &p))
            guard value >= 0 else { return false }
            key.append(UInt64(value))
        case (.uint, KeyTag.int):
            let value = try context.varint(at: &p)
            guard value <= UInt64(Int64.max) else { return false }
            key.append(Int64(value))
        case (.double, KeyTag.double): key.append(Double(bitPattern: try context.fixed(UInt64.self, at: p)))
        case (.float, KeyTag.double): key.append(Double(Float(bitPattern: try context.fixed(UInt32.self, at: p))))
        case (.string, KeyTag.string):
            // ASCII is its own normalized form, so its key is known without building the
            // String's normalization; other text is left to decoding.
            let (bytes, _) = try context.lengthPrefixed(at: position + 1)
            guard DecodingContext.isASCII(bytes) else { return false }
            key.append(String(decoding: bytes, as: UTF8.self))
        case (.bool, KeyTag.falseValue), (.bool, KeyTag.trueValue):
            guard p < context.buffer.count else { return false }
            key.append(context.buffer[p] != 0)
        default: return false
        }
        return true
    }

    private static func contains(_ bounds: FieldBounds, _ key: [UInt8]) -> Bool {
        switch bounds {
        case .points(let points): return points.contains(key)
        case .range(let lower, let upper):
            switch lower {
            case .included(let k): if key.lexicographicallyPrecedes(k) { return false }
            case .excluded(let k): if !k.lexicographicallyPrecedes(key) { return false }
            case .unbounded: break
            }
            switch upper {
            case .included(let k): if k.lexicographicallyPrecedes(key) { return false }
            case .excluded(let k): if !key.lexicographicallyPrecedes(k) { return false }
            case .unbounded: break
            }
            return true
        }
    }
}

extension ByteOrder {
    /// The byte order of `query`'s sort, when every sort key is a declared integer or
    /// Boolean field and the record bytes decide what the access path leaves to check
    /// (nothing, when `residual` is false; else every condition, by `decider`); nil otherwise.
    init?<M: Model>(_ query: Query<M>, residual: Bool, decider: RecordPrefilter?, fields: FieldTable, collection: String) {
        let decides: (UnsafeRawBufferPointer) -> Bool?
        if !residual {
            decides = { _ in true }
        } else if let decider {
            var scratch = Key()
            decides = { decider.decides($0, scratch: &scratch) }
        } else {
            return nil
        }
        var sortFields: [(id: UInt32, kind: UInt8, descending: Bool)] = []
        for key in query.sortKeys {
            guard let path = key.keyPath, let declared = M.schema.description.field(path), let id = fields.id(of: declared.name) else { return nil }
            switch declared.storedType {
            case .integer?: sortFields.append((id, KeyTag.int, !key.ascending))
            case .bool?: sortFields.append((id, KeyTag.falseValue, !key.ascending))
            default: return nil   // variable-width or unordered encodings: compared after decoding
            }
        }
        guard !sortFields.isEmpty else { return nil }
        let context = DecodingContext(buffer: UnsafeRawBufferPointer(start: nil, count: 0), fields: fields, collection: collection)
        var scratch = Key()
        var values = [[UInt8]?](repeating: nil, count: sortFields.count)
        self.init(keyLength: sortFields.reduce(0) { $0 + ($1.kind == KeyTag.int ? 9 : 1) }, key: { record, key in
            for i in values.indices { values[i] = nil }
            let walked = RecordPrefilter.forEachField(of: record, in: context) { field, position in
                for (i, sortField) in sortFields.enumerated() where sortField.id == field {
                    scratch.removeAll()
                    guard try RecordPrefilter.storedKey(context, at: position, as: sortField.kind, into: &scratch) else { return false }
                    values[i] = sortField.descending ? scratch.bytes.map { ~$0 } : scratch.bytes
                }
                return true
            }
            guard walked else { return false }
            for value in values {
                guard let value else { return false }
                key.append(contentsOf: value)
            }
            return true
        }, decides: decides)
    }
}
