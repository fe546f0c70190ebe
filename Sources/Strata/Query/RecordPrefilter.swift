import StrataEngine

/// Conditions on a record's top-level numeric, Boolean, date, UUID and (ASCII) string
/// fields, and on the elements of its top-level arrays of those, checked on its stored
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
///
/// A class, made once per query: the scan calls it for every record, and as a struct it was
/// copied (56 bytes) to be passed to each call.
final class RecordPrefilter {
    private struct Condition {
        let field: UInt32
        let bounds: FieldBounds
        /// The key tag of the bounds: what the stored value must be converted to.
        let kind: UInt8
        /// Whether the field is an array one of whose elements must be within the bounds.
        let onElements: Bool
        /// For equality with strings (`==`, `IN`, an array holding one): the strings' UTF-8,
        /// compared with stored text as it is (`TextPoints`). Set by the prefilter, which
        /// frees it.
        var texts: TextPoints? = nil

        /// The strings of equality bounds on strings; nil for other bounds.
        var wantedStrings: [[UInt8]]? {
            guard kind == KeyTag.string, case .points(let points) = bounds else { return nil }
            var strings: [[UInt8]] = []
            for point in points {
                guard let elements = try? Key(bytes: point).elements(), elements.count == 1,
                      case .string(let string) = elements[0] else { return nil }
                strings.append(Array(string.utf8))
            }
            return strings
        }
    }

    /// Conditions on numbers, Booleans and dates, compiled to integer comparisons: trivial values,
    /// so checking one costs no reference counting, copy or `memcmp` per record. Held in
    /// memory of the prefilter's own, so a record's check reaches them with no array access.
    private let fixed: UnsafeMutableBufferPointer<FixedWidthCondition>
    /// The values of `fixed` conditions that are sets of points (`==`, `IN`).
    private let fixedPoints: UnsafeMutableBufferPointer<FixedKey>
    /// How many conditions a record must meet: `fixed` and `conditions`.
    private let conditionCount: Int
    /// The layout of the fields up to the last condition's, learned from the first record
    /// when every condition is a fixed one or string equality; empty when there is none
    /// (yet, or for good).
    @exclusivity(unchecked) private var shape: UnsafeMutableBufferPointer<RecordShape.Step> = .init(start: nil, count: 0)
    /// Whether the shape was learned or given up on: it is learned once.
    @exclusivity(unchecked) private var shapeSettled = false
    /// Records the shape decided, and those it did not fit.
    @exclusivity(unchecked) private var shapeHits = 0, shapeMisses = 0
    /// Every other condition (strings, array elements, bounds that are not plain values),
    /// compared as keys.
    private let conditions: [Condition]
    /// The key a string condition's stored value is converted into, reused across records:
    /// a prefilter serves one query execution, on one thread.
    private let scratch = Scratch()

    private final class Scratch {
        @exclusivity(unchecked) var key = Key()
    }
    /// Reused for every record of one query's scan (a scan runs on one thread).
    private let context: DecodingContext
    /// Whether every condition it was given is checked here (none was left to decoding).
    let checksAll: Bool
    /// The fields some condition is on: the walk steps over the others.
    private let walked: FieldSet

    /// Nil when no condition can be checked on the bytes.
    /// `elements` are conditions on array fields, met when one element is within the bounds.
    init?<M>(_ conditions: [(AnyKeyPath, FieldBounds)], elements: [(AnyKeyPath, FieldBounds)] = [],
             of description: ModelDescription<M>, fields: FieldTable, collection: String) {
        func condition(_ keyPath: AnyKeyPath, _ bounds: FieldBounds, onElements: Bool) -> Condition? {
            guard let declared = description.field(keyPath), let field = fields.id(of: declared.name),
                  let kind = Self.kind(of: bounds) else { return nil }
            return Condition(field: field, bounds: bounds, kind: kind, onElements: onElements)
        }
        let all = conditions.compactMap { condition($0, $1, onElements: false) }
            + elements.compactMap { condition($0, $1, onElements: true) }
        guard !all.isEmpty else { return nil }
        var fixed: [FixedWidthCondition] = [], points: [FixedKey] = [], general: [Condition] = []
        for condition in all {
            if !condition.onElements, let compiled = FixedWidthCondition(field: condition.field, bounds: condition.bounds, kind: condition.kind, pointList: &points) {
                fixed.append(compiled)
            } else {
                var condition = condition
                condition.texts = condition.wantedStrings.map(TextPoints.allocate)
                general.append(condition)
            }
        }
        self.fixed = .allocate(capacity: fixed.count)
        _ = self.fixed.initialize(from: fixed)
        fixedPoints = .allocate(capacity: points.count)
        _ = fixedPoints.initialize(from: points)
        self.conditions = general
        conditionCount = fixed.count + general.count
        // The shape checks fixed conditions and string equality only.
        shapeSettled = general.contains { $0.texts == nil }
        walked = FieldSet(all.map(\.field))
        checksAll = all.count == conditions.count + elements.count
        context = DecodingContext(buffer: UnsafeRawBufferPointer(start: nil, count: 0), fields: fields, collection: collection)
    }

    deinit {
        fixed.deallocate()
        fixedPoints.deallocate()
        shape.deallocate()
        for condition in conditions { condition.texts?.deallocate() }
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
        return [KeyTag.int, KeyTag.uint, KeyTag.double, KeyTag.date, KeyTag.uuid, KeyTag.falseValue, KeyTag.trueValue, KeyTag.string].contains(tag) ? tag : nil
    }

    /// Whether the record meets every condition: true or false when its bytes tell for
    /// each, nil when one is unsure (field absent, another stored type, malformed bytes) —
    /// then decoding must tell. With `checksAll` and no other condition in the query, a
    /// decision is the query's answer (counts need not decode).
    ///
    /// In line in the scan's closure (measured: the call's frame was ~20 instructions per
    /// record); learning, giving up and walking are calls.
    @inline(__always)
    func decides(_ record: UnsafeRawBufferPointer) -> Bool? {
        if shape.count > 0 {
            if let decision = RecordShape.decides(record, steps: UnsafeBufferPointer(shape), conditions: UnsafeBufferPointer(fixed), points: UnsafeBufferPointer(fixedPoints)) {
                shapeHits &+= 1
                return decision
            }
            noteShapeMiss()
        } else if !shapeSettled {
            learnShape(from: record)
        }
        return decidesByWalk(record)
    }

    /// Learns the shape from `record`, once.
    @inline(never)
    private func learnShape(from record: UnsafeRawBufferPointer) {
        shapeSettled = true
        let texts = conditions.map { RecordShape.TextCondition(field: $0.field, onElements: $0.onElements, strings: $0.texts!) }
        guard let learned = RecordShape(of: record, conditions: UnsafeBufferPointer(fixed), texts: texts) else { return }
        shape = .allocate(capacity: learned.steps.count)
        _ = shape.initialize(from: learned.steps)
    }

    /// Gives the shape up when more than a fifth of the records do not fit it: each such
    /// record pays for the shape's check as well as the walk.
    @inline(never)
    private func noteShapeMiss() {
        shapeMisses += 1
        guard shapeMisses >= 64, shapeMisses &* 4 > shapeHits else { return }
        shape.deallocate()
        shape = .init(start: nil, count: 0)
    }

    /// `decides` by walking the record's fields one by one.
    @inline(never)
    private func decidesByWalk(_ record: UnsafeRawBufferPointer) -> Bool? {
        // No call or closure on the walk's common path (integers, short strings, the
        // compiled comparisons), so the loop keeps its state in registers (measured: a
        // closure per field spilled and reloaded it, half the walk's instructions).
        context.buffer = record
        guard var walk = RecordFieldWalk(record) else { return nil }
        var undecided = conditionCount
        let fixed = UnsafeBufferPointer(fixed), points = UnsafeBufferPointer(fixedPoints)
        while let field = walk.nextField() {
            let p = walk.position
            if walked.contains(field) {
                for i in fixed.indices where UInt64(fixed[i].field) == field {
                    guard let met = FixedWidthCondition.isMet(fixed.baseAddress! + i, in: record, at: p, points: points) else { continue }
                    guard met else { return false }
                    undecided -= 1
                }
                // Other conditions are checked out of line: this loop runs for every
                // field of every scanned record.
                if !conditions.isEmpty {
                    var decided = 0
                    guard let met = try? decideOthers(UInt32(truncatingIfNeeded: field), at: p, decided: &decided) else { return nil }
                    guard met else { return false }
                    undecided -= decided
                }
                // Once every condition is decided the rest of the record is not walked.
                if undecided == 0 { return true }
            }
            guard walk.stepOverValue(in: context) else { return nil }
        }
        // Not all decided: a field absent, of another type, or the record malformed.
        return nil
    }

    /// Checks the conditions other than `fixed` on `field`, whose value is at `position`,
    /// counting those met in `decided`; false when one is certainly not met.
    @inline(never)
    private func decideOthers(_ field: UInt32, at position: Int, decided: inout Int) throws -> Bool {
        for i in conditions.indices where conditions[i].field == field {
            let met = conditions[i].onElements
                ? try Self.someElement(context, at: position, meets: conditions[i], scratch: &scratch.key)
                : try Self.value(context, at: position, meets: conditions[i], scratch: &scratch.key)
            guard let met else { continue }
            guard met else { return false }
            decided += 1
        }
        return true
    }

    /// Whether the value at `position` meets `condition`; nil when its stored type cannot tell.
    @inline(__always)
    private static func value(_ context: DecodingContext, at position: Int, meets condition: Condition, scratch: inout Key) throws -> Bool? {
        if let texts = condition.texts {
            guard try context.tag(at: position) == .string else { return nil }
            return texts.matches(try context.lengthPrefixed(at: position + 1).0)
        }
        if condition.kind == KeyTag.uuid {
            // A UUID's key is its tag and its 16 bytes, as stored: built on the stack.
            guard try context.tag(at: position) == .uuid, position + 17 <= context.buffer.count else { return nil }
            return withUnsafeTemporaryAllocation(byteCount: 17, alignment: 8) { key in
                key[0] = KeyTag.uuid
                UnsafeMutableRawBufferPointer(rebasing: key[1...]).copyMemory(from: UnsafeRawBufferPointer(rebasing: context.buffer[position + 1 ..< position + 17]))
                return contains(condition.bounds, UnsafeRawBufferPointer(key))
            }
        }
        // Dates whose bounds are plain keys are compiled (`FixedWidthCondition`, which knows
        // when their rounded keys cannot tell); others are left to decoding.
        if condition.kind == KeyTag.date { return nil }
        if condition.kind != KeyTag.string {
            // Numbers and Booleans (the rest of them: most are compiled into a
            // `FixedWidthCondition`): the key is at most 9 bytes, built on the stack (measured:
            // building it in `scratch` and comparing arrays was a third of a W1 scan's
            // instructions per record).
            return withUnsafeTemporaryAllocation(byteCount: 9, alignment: 8) { key in
                guard let length = RecordBytes.fixedKey(context.buffer, at: position, as: condition.kind)?.write(into: key) else { return nil }
                return contains(condition.bounds, UnsafeRawBufferPointer(rebasing: key[..<length]))
            }
        }
        scratch.removeAll()
        guard try asciiStringKey(context, at: position, into: &scratch) else { return nil }
        return scratch.bytes.withUnsafeBytes { contains(condition.bounds, $0) }
    }

    /// Whether the array at `position` has an element meeting `condition`: true at the first
    /// that does, false when every element was checked and none does, nil when the value is
    /// not an array or an element's stored type cannot tell (non-ASCII text, say).
    private static func someElement(_ context: DecodingContext, at position: Int, meets condition: Condition, scratch: inout Key) throws -> Bool? {
        guard try context.tag(at: position) == .unkeyed else { return nil }
        var p = position + 1
        let count = try context.varint(at: &p)
        if let texts = condition.texts { return texts.someElement(context.buffer, from: p, count: count) }
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

    /// Appends the key of the string at `position`; false when it is not a string or not
    /// ASCII. (ASCII is its own normalized form, so its key is known without building the
    /// String's normalization; other text is left to decoding.)
    private static func asciiStringKey(_ context: DecodingContext, at position: Int, into key: inout Key) throws -> Bool {
        guard try context.tag(at: position) == .string else { return false }
        let (bytes, _) = try context.lengthPrefixed(at: position + 1)
        guard DecodingContext.isASCII(bytes) else { return false }
        key.append(String(decoding: bytes, as: UTF8.self))
        return true
    }

    private static func contains(_ bounds: FieldBounds, _ key: UnsafeRawBufferPointer) -> Bool {
        func compare(_ bound: [UInt8]) -> Int { bound.withUnsafeBytes { compareBytes(key, $0) } }
        switch bounds {
        case .points(let points): return points.contains { compare($0) == 0 }
        case .range(let lower, let upper):
            switch lower {
            case .included(let k): if compare(k) < 0 { return false }
            case .excluded(let k): if compare(k) <= 0 { return false }
            case .unbounded: break
            }
            switch upper {
            case .included(let k): if compare(k) > 0 { return false }
            case .excluded(let k): if compare(k) >= 0 { return false }
            case .unbounded: break
            }
            return true
        }
    }

}

/// The field ids a record walk hands to its body: ids below 64 as bits of one word, every
/// larger id always (the body compares ids itself, so a false "contains" never changes an
/// answer; it only spares the call).
struct FieldSet {
    private let bits: UInt64

    init(_ ids: some Sequence<UInt32>) {
        bits = ids.reduce(0) { $1 < 64 ? $0 | 1 << UInt64($1) : $0 }
    }

    @inline(__always)
    func contains(_ id: UInt64) -> Bool {
        id >= 64 || bits & (1 << id) != 0
    }
}

/// Where some fields' values start in the record being read (-1: not seen), reused across
/// records by one query on one thread.
private final class FieldPositions {
    @exclusivity(unchecked) var values: [Int]
    init(_ count: Int) { values = [Int](repeating: -1, count: count) }
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
            decides = { decider.decides($0) }
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
        // Where each sort field's value starts in the current record (-1: not seen); reused,
        // so a record's key costs no allocation.
        // (In a class with unchecked exclusivity: a variable captured by this escaping closure
        // was checked dynamically at each access, a fifth of a top-k query's instructions.)
        let positions = FieldPositions(sortFields.count)
        let keyFields = sortFields   // a constant: the closure reads it without access checks
        let sortFieldIDs = FieldSet(sortFields.map(\.id))
        self.init(keyLength: keyFields.reduce(0) { $0 + ($1.kind == KeyTag.int ? 9 : 1) }, key: { record, key in
            for i in positions.values.indices { positions.values[i] = -1 }
            context.buffer = record
            guard var walk = RecordFieldWalk(record) else { return false }
            while let field = walk.nextField() {
                if sortFieldIDs.contains(field) {
                    for i in keyFields.indices where UInt64(keyFields[i].id) == field { positions.values[i] = walk.position }
                }
                guard walk.stepOverValue(in: context) else { return false }
            }
            guard !walk.isMalformed else { return false }
            for (sortField, position) in zip(keyFields, positions.values) {
                guard position >= 0 else { return false }
                let written = withUnsafeTemporaryAllocation(byteCount: 9, alignment: 8) { buffer -> Bool in
                    guard let length = RecordBytes.fixedKey(context.buffer, at: position, as: sortField.kind)?.write(into: buffer) else { return false }
                    // Descending keys are inverted: their bytes then compare in reverse.
                    for byte in buffer[..<length] { key.append(sortField.descending ? ~byte : byte) }
                    return true
                }
                guard written else { return false }
            }
            return true
        }, decides: decides)
    }
}
