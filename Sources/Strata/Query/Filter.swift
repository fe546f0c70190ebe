import Foundation
import StrataEngine

/// What the planner knows about a filter: conditions on single fields it may answer from a
/// B-tree, combined with AND; anything else is `opaque` (evaluated on each record).
indirect enum PlanTerm: @unchecked Sendable {
    /// A condition on the field reached by the key path, as bounds on its key encoding.
    case field(AnyKeyPath, FieldBounds)
    /// Some element of the array field reached by the key path is within the bounds. No tree
    /// answers it (the planner sees it as opaque); record bytes can.
    case element(AnyKeyPath, FieldBounds)
    case and([PlanTerm])
    /// `a || b || …` whose branches are not all equalities on one field: the planner may
    /// read it as the union of each branch's access (every branch must be narrowed by a
    /// tree); the records read are checked against the whole condition.
    case anyOf([PlanTerm])
    case opaque

    /// `a || b`: when both are equality or IN on the same field, the union of their values
    /// (an IN); otherwise a disjunction of both (nested ones flattened).
    static func or(_ a: PlanTerm, _ b: PlanTerm) -> PlanTerm {
        if case .field(let path, .points(let left)) = a, case .field(let other, .points(let right)) = b, path == other {
            return .field(path, .points(left + right.filter { !left.contains($0) }))
        }
        func branches(_ term: PlanTerm) -> [PlanTerm] { if case .anyOf(let terms) = term { terms } else { [term] } }
        return .anyOf(branches(a) + branches(b))
    }

    /// `field != value`: the keys below the value's or above it (a union of two ranges, nil
    /// and NaN included, as Swift's `!=` includes them). Opaque for dates, whose keys round
    /// (a date can differ from `value` yet share its key), and for NaN (nothing equals it).
    static func notEqual(_ path: AnyKeyPath, _ value: [UInt8]) -> PlanTerm {
        guard value.first != KeyTag.date, !UnorderedKeys.isNaN(value) else { return .opaque }
        return .anyOf([.field(path, .range(lower: .unbounded, upper: .excluded(value))),
                       .field(path, .range(lower: .included(KeyRange.afterElements(value)), upper: .unbounded))])
    }

    /// The AND-ed field conditions, and whether anything else (OR, NOT, …) remains.
    var conjuncts: (fields: [(AnyKeyPath, FieldBounds)], hasOpaque: Bool) {
        switch self {
        case .field(let path, let bounds): return ([(path, bounds)], false)
        case .opaque, .element, .anyOf: return ([], true)
        case .and(let terms):
            var fields: [(AnyKeyPath, FieldBounds)] = []
            var opaque = false
            for term in terms {
                let inner = term.conjuncts
                fields += inner.fields
                opaque = opaque || inner.hasOpaque
            }
            return (fields, opaque)
        }
    }

    /// The disjunctions AND-ed into the condition, each as its branches' AND-ed field
    /// conditions (a branch's conditions hold for every record the branch matches: reading
    /// the union of the branches' ranges finds every match).
    var disjunctions: [[[(AnyKeyPath, FieldBounds)]]] {
        switch self {
        case .anyOf(let branches): return [branches.map(\.conjuncts.fields)]
        case .and(let terms): return terms.flatMap(\.disjunctions)
        case .field, .element, .opaque: return []
        }
    }

    /// Whether the term is AND-ed conditions on fields and on array elements alone (no OR,
    /// NOT or closure): what a record's stored bytes can decide in full.
    var isFieldAndElementConditions: Bool {
        switch self {
        case .field, .element: return true
        case .opaque, .anyOf: return false
        case .and(let terms): return terms.allSatisfy(\.isFieldAndElementConditions)
        }
    }

    /// The AND-ed conditions on array elements (which `conjuncts` counts as opaque).
    var elementConjuncts: [(AnyKeyPath, FieldBounds)] {
        switch self {
        case .element(let path, let bounds): return [(path, bounds)]
        case .field, .opaque, .anyOf: return []
        case .and(let terms): return terms.flatMap(\.elementConjuncts)
        }
    }
}

/// Bounds on one field's key encoding (see `Key`): a range, a set of points, or a prefix.
package enum FieldBounds: Sendable, Equatable {
    case range(lower: KeyRange.Bound, upper: KeyRange.Bound)
    case points([[UInt8]])

    /// The keys comparing to `value` with `op`, as Swift's operators compare the values.
    static func comparison(_ op: PredicateExpressions.ComparisonOperator, _ value: [UInt8]) -> FieldBounds {
        if UnorderedKeys.isNaN(value) { return .points([]) }  // NaN compares false with everything
        // Keys equal to `value` may continue with the primary key's elements; a longer
        // string with the same start sorts from `afterElements(value)` on.
        let after = KeyRange.afterElements(value)
        // NaN keys sort above +∞ (Key's order), but no value is below NaN: ranges reaching
        // upwards stop at +∞. Without this, index counts included NaN that reads filtered out.
        let top = UnorderedKeys.ceiling(sameTypeAs: value)
        // A date's key rounds its seconds (see `keysDecide`): strict comparisons keep the
        // keys equal to the bound's, and the records decide.
        let roundsKeys = value.first == KeyTag.date
        switch op {
        case .lessThan: return .range(lower: .unbounded, upper: .excluded(roundsKeys ? after : value))
        case .lessThanOrEqual: return .range(lower: .unbounded, upper: .excluded(after))
        case .greaterThan: return .range(lower: .included(roundsKeys ? value : after), upper: top)
        case .greaterThanOrEqual: return .range(lower: .included(value), upper: top)
        @unknown default: return .range(lower: .unbounded, upper: .unbounded)
        }
    }

    /// The keys of non-nil values: nil's key (the null tag) sorts below every value.
    static let notNil = FieldBounds.range(lower: .included(KeyRange.afterElements(Key(Optional<Int>.none).bytes)), upper: .unbounded)

    /// The keys of nil.
    static let isNil = FieldBounds.points([Key(Optional<Int>.none).bytes])

    /// These bounds without nil's key: comparisons never match nil, as in SQL.
    var excludingNil: FieldBounds {
        switch self {
        case .points(let keys): return .points(keys.filter { $0 != Key(Optional<Int>.none).bytes })
        case .range(let lower, let upper): return Planner.intersect([.range(lower: lower, upper: upper), Self.notNil]) ?? .points([])
        }
    }

    /// The keys equal to one of `values`. NaN equals nothing, so its key is left out.
    static func equal(toAnyOf values: [[UInt8]]) -> FieldBounds {
        .points(values.filter { !UnorderedKeys.isNaN($0) })
    }

    static func prefix(_ bytes: [UInt8]) -> FieldBounds {
        .range(lower: .included(bytes), upper: KeyRange.prefixSuccessorOrMax(bytes))
    }

    /// Whether a value's key within these bounds means the value meets the condition. Not
    /// for dates: a date's key holds its seconds since 1970 rounded to a Double, so dates a
    /// few hundred nanoseconds apart can share a key (and a bound's).
    var keysDecide: Bool {
        func isDate(_ key: [UInt8]) -> Bool { key.first == KeyTag.date }
        switch self {
        case .points(let keys): return !keys.contains(where: isDate)
        case .range(let lower, let upper):
            for bound in [lower, upper] {
                switch bound {
                case .included(let key), .excluded(let key): if isDate(key) { return false }
                case .unbounded: break
                }
            }
            return true
        }
    }
}

/// Keys of floating-point fields (`Double`, `Float`, `Date`) that have no order: every NaN
/// encodes as one key above +∞ (FORMAT.md, "Key encoding").
enum UnorderedKeys {
    /// Two keys, compared outright: hashing each value of an `IN` list of 9-byte keys (every
    /// `Int64`) to look it up in a set was a tenth of a 64-id `IN` query (perf).
    private static let nan: [[UInt8]] = [Key(Double.nan).bytes, Key(Date(timeIntervalSince1970: .nan)).bytes]
    private static let infinity: [UInt8: [UInt8]] = [
        Key(Double.infinity).bytes[0]: Key(Double.infinity).bytes,
        Key(Date(timeIntervalSince1970: .infinity)).bytes[0]: Key(Date(timeIntervalSince1970: .infinity)).bytes,
    ]

    static func isNaN(_ key: [UInt8]) -> Bool { key.count == 9 && nan.contains(key) }

    /// For a floating-point key, the upper bound that keeps NaN out (+∞ included); for other
    /// keys, unbounded.
    static func ceiling(sameTypeAs key: [UInt8]) -> KeyRange.Bound {
        guard key.count == 9, let tag = key.first, let top = infinity[tag] else { return .unbounded }
        return .excluded(KeyRange.afterElements(top))
    }
}

extension KeyRange {
    /// The exclusive upper bound of every key starting with `prefix`.
    static func prefixSuccessorOrMax(_ prefix: [UInt8]) -> Bound {
        KeyRange.prefix(prefix).upper
    }
}

/// A condition on a model, built from key paths (GRDB/SwiftData style) or combined with
/// `&&`, `||` and `!`. Conditions on the primary key or an indexed field are answered from
/// the B-tree; the rest is checked on each record.
///
/// ```swift
/// User.filter(\.age >= 18 && \.name != "root")
/// User.filter(.in(\.country, ["FR", "DE"]))
/// User.filter(.between(\.age, 30 ... 40)).sorted(by: \.name)
/// ```
public struct Filter<M>: @unchecked Sendable {
    let evaluate: (M) -> Bool
    let plan: PlanTerm

    init(plan: PlanTerm, evaluate: @escaping (M) -> Bool) {
        self.plan = plan
        self.evaluate = evaluate
    }

    /// Both conditions; the planner may answer either from an index.
    ///
    /// - Parameters:
    ///   - a: The first condition.
    ///   - b: The second condition.
    /// - Returns: A filter matching the models both match.
    public static func && (a: Filter, b: Filter) -> Filter {
        Filter(plan: .and([a.plan, b.plan])) { a.evaluate($0) && b.evaluate($0) }
    }

    /// Either condition; equalities on one field become an IN the planner answers from an
    /// index. Otherwise, when a tree narrows every branch (`\.id == 3 || \.age > 70`), the
    /// planner may read the union of the branches' ranges instead of every record.
    ///
    /// - Parameters:
    ///   - a: The first condition.
    ///   - b: The second condition.
    /// - Returns: A filter matching the models either matches.
    public static func || (a: Filter, b: Filter) -> Filter {
        Filter(plan: .or(a.plan, b.plan)) { a.evaluate($0) || b.evaluate($0) }
    }

    /// The condition negated (checked on each record).
    ///
    /// - Parameter a: The condition to negate.
    /// - Returns: A filter matching the models `a` does not.
    public static prefix func ! (a: Filter) -> Filter {
        Filter(plan: .opaque) { !a.evaluate($0) }
    }

    /// The field is one of `values`.
    ///
    /// - Parameters:
    ///   - keyPath: The field.
    ///   - values: The values it may hold; an empty list matches nothing.
    /// - Returns: The condition, answered from the primary key or an index on the field when
    ///   there is one (one range per value).
    public static func `in`<V: KeyComponent & Equatable>(_ keyPath: KeyPath<M, V>, _ values: [V]) -> Filter {
        // Each key built into room for it, through the value's own type: `Key(value)` takes
        // an existential and grows its bytes twice, 900 instructions a value (callgrind).
        let keys = values.map { value in
            var key = Key(reservingCapacity: 16)
            key.append(value)
            return key.bytes
        }
        return Filter(plan: .field(keyPath, .equal(toAnyOf: keys))) { values.contains($0[keyPath: keyPath]) }
    }

    /// The field is none of `values`.
    ///
    /// - Parameters:
    ///   - keyPath: The field.
    ///   - values: The values it must not hold.
    /// - Returns: The condition, checked on each record.
    public static func notIn<V: KeyComponent & Equatable>(_ keyPath: KeyPath<M, V>, _ values: [V]) -> Filter {
        Filter(plan: .opaque) { !values.contains($0[keyPath: keyPath]) }
    }

    /// `range.lowerBound <= field <= range.upperBound`.
    ///
    /// - Parameters:
    ///   - keyPath: The field.
    ///   - range: The values it may hold, both bounds included.
    /// - Returns: The condition, answered as one range of the primary key or an index when there
    ///   is one.
    public static func between<V: KeyComponent & Comparable>(_ keyPath: KeyPath<M, V>, _ range: ClosedRange<V>) -> Filter {
        let lower = Key(range.lowerBound).bytes, upper = Key(range.upperBound).bytes
        return Filter(plan: .field(keyPath, .range(lower: .included(lower), upper: .excluded(KeyRange.afterElements(upper))))) {
            range.contains($0[keyPath: keyPath])
        }
    }

    /// `range.lowerBound <= field < range.upperBound`.
    ///
    /// - Parameters:
    ///   - keyPath: The field.
    ///   - range: The values it may hold, the upper bound excluded.
    /// - Returns: The condition, answered as one range of the primary key or an index when there
    ///   is one.
    public static func between<V: KeyComponent & Comparable>(_ keyPath: KeyPath<M, V>, _ range: Range<V>) -> Filter {
        let upper = Key(range.upperBound).bytes
        // A date's key rounds its seconds: keep the upper bound's key, and the records decide.
        let end = upper.first == KeyTag.date ? KeyRange.afterElements(upper) : upper
        return Filter(plan: .field(keyPath, .range(lower: .included(Key(range.lowerBound).bytes), upper: .excluded(end)))) {
            range.contains($0[keyPath: keyPath])
        }
    }

    /// The string field starts with `prefix`.
    ///
    /// - Parameters:
    ///   - keyPath: The string field.
    ///   - prefix: The text it must start with (compared as Unicode canonical equivalence).
    /// - Returns: The condition, answered as a range of an index on the field when there is one.
    public static func hasPrefix(_ keyPath: KeyPath<M, String>, _ prefix: String) -> Filter {
        Filter(plan: .field(keyPath, .prefix(Key().appendingStringPrefix(prefix)))) { $0[keyPath: keyPath].hasPrefix(prefix) }
    }

    /// SQL's `LIKE`: `%` matches any run of characters, `_` exactly one. Case-sensitive by
    /// default (SQLite's LIKE folds ASCII case: pass `caseSensitive: false` for that). A
    /// case-sensitive pattern that is a prefix followed by `%` is answered by an index on
    /// the field; any other is checked on each record.
    ///
    /// ```swift
    /// User.filter(.like(\.name, "A%"))                            // Ada, Alan
    /// User.filter(.like(\.email, "%@EXAMPLE.com", caseSensitive: false))
    /// ```
    ///
    /// - Parameters:
    ///   - keyPath: The string field.
    ///   - pattern: The pattern: `%` for any run of characters, `_` for one, other characters
    ///     for themselves.
    ///   - caseSensitive: Whether letters must match in case (`true` by default); `false` folds
    ///     case as SQLite does.
    /// - Returns: The condition.
    public static func like(_ keyPath: KeyPath<M, String> & Sendable, _ pattern: String, caseSensitive: Bool = true) -> Filter {
        let matcher = LikePattern(pattern, caseSensitive: caseSensitive)
        if let prefix = matcher.literalPrefix { return .hasPrefix(keyPath, prefix) }
        return .matching { matcher.matches($0[keyPath: keyPath]) }
    }

    /// SQL's `NOT LIKE`; see `like(_:_:caseSensitive:)`.
    ///
    /// - Parameters:
    ///   - keyPath: The string field.
    ///   - pattern: The pattern, as in `like(_:_:caseSensitive:)`.
    ///   - caseSensitive: Whether letters must match in case (`true` by default).
    /// - Returns: The condition, checked on each record.
    public static func notLike(_ keyPath: KeyPath<M, String> & Sendable, _ pattern: String, caseSensitive: Bool = true) -> Filter {
        let matcher = LikePattern(pattern, caseSensitive: caseSensitive)
        return .matching { !matcher.matches($0[keyPath: keyPath]) }
    }

    /// The array field holds `element`. Checked on each record's stored bytes before it is
    /// decoded (for fields the model declares), so a scan decodes only the records that hold it.
    ///
    /// ```swift
    /// Document.filter(.contains(\.tags, "swift"))
    /// ```
    ///
    /// - Parameters:
    ///   - keyPath: The array field.
    ///   - element: The element it must hold.
    /// - Returns: The condition.
    public static func contains<V: KeyComponent & Equatable>(_ keyPath: KeyPath<M, [V]>, _ element: V) -> Filter {
        Filter(plan: .element(keyPath, .equal(toAnyOf: [Key(element).bytes]))) { $0[keyPath: keyPath].contains(element) }
    }

    /// The string field contains `substring`.
    ///
    /// - Parameters:
    ///   - keyPath: The string field.
    ///   - substring: The text it must contain.
    /// - Returns: The condition, checked on each record.
    public static func contains(_ keyPath: KeyPath<M, String>, _ substring: String) -> Filter {
        Filter(plan: .opaque) { $0[keyPath: keyPath].contains(substring) }
    }

    /// The optional field is nil.
    ///
    /// - Parameter keyPath: The optional field.
    /// - Returns: The condition, checked on each record.
    public static func isNil<V>(_ keyPath: KeyPath<M, V?>) -> Filter {
        Filter(plan: .opaque) { $0[keyPath: keyPath] == nil }
    }

    /// The optional field is nil; answered by an index on the field when there is one.
    ///
    /// - Parameter keyPath: The optional field.
    /// - Returns: The condition.
    public static func isNil<V: KeyComponent>(_ keyPath: KeyPath<M, V?>) -> Filter {
        Filter(plan: .field(keyPath, .isNil)) { $0[keyPath: keyPath] == nil }
    }

    /// The optional field is not nil.
    ///
    /// - Parameter keyPath: The optional field.
    /// - Returns: The condition, checked on each record.
    public static func isNotNil<V>(_ keyPath: KeyPath<M, V?>) -> Filter {
        Filter(plan: .opaque) { $0[keyPath: keyPath] != nil }
    }

    /// The optional field is not nil; answered by an index on the field when there is one.
    ///
    /// - Parameter keyPath: The optional field.
    /// - Returns: The condition.
    public static func isNotNil<V: KeyComponent>(_ keyPath: KeyPath<M, V?>) -> Filter {
        Filter(plan: .field(keyPath, .notNil)) { $0[keyPath: keyPath] != nil }
    }

    /// A condition the planner cannot use, checked on each record.
    ///
    /// - Parameter test: Whether a model matches; called on each candidate record, decoded.
    /// - Returns: The condition.
    public static func matching(_ test: @escaping @Sendable (M) -> Bool) -> Filter {
        Filter(plan: .opaque, evaluate: test)
    }

    static func compare<V: KeyComponent & Comparable>(_ keyPath: KeyPath<M, V?>, _ op: PredicateExpressions.ComparisonOperator, _ value: V) -> Filter {
        let bounds = FieldBounds.comparison(op, Key(value).bytes).excludingNil
        return Filter(plan: .field(keyPath, bounds)) { model in
            guard let field = model[keyPath: keyPath] else { return false }
            return Self.holds(field, op, value)
        }
    }

    private static func holds<V: Comparable>(_ field: V, _ op: PredicateExpressions.ComparisonOperator, _ value: V) -> Bool {
        switch op {
        case .lessThan: field < value
        case .lessThanOrEqual: field <= value
        case .greaterThan: field > value
        case .greaterThanOrEqual: field >= value
        @unknown default: false
        }
    }

    static func compare<V: KeyComponent & Comparable>(_ keyPath: KeyPath<M, V>, _ op: PredicateExpressions.ComparisonOperator, _ value: V) -> Filter {
        let bounds = FieldBounds.comparison(op, Key(value).bytes)
        return Filter(plan: .field(keyPath, bounds)) { Self.holds($0[keyPath: keyPath], op, value) }
    }
}

/// The field equals `value`: answered from the primary key or an index on the field.
///
/// ```swift
/// User.filter(\.city == "Oslo")
/// ```
///
/// - Parameters:
///   - keyPath: The field.
///   - value: The value it must hold.
/// - Returns: The condition.
public func == <M, V: KeyComponent & Equatable>(keyPath: KeyPath<M, V>, value: V) -> Filter<M> {
    Filter(plan: .field(keyPath, .equal(toAnyOf: [Key(value).bytes]))) { $0[keyPath: keyPath] == value }
}

/// The field differs from `value`. On the primary key or an indexed field the planner may
/// read the keys below and above the value (a union of two ranges) when few records hold
/// other values; otherwise it is checked on each record.
///
/// - Parameters:
///   - keyPath: The field.
///   - value: The value it must not hold.
/// - Returns: The condition.
public func != <M, V: KeyComponent & Equatable>(keyPath: KeyPath<M, V>, value: V) -> Filter<M> {
    Filter(plan: .notEqual(keyPath, Key(value).bytes)) { $0[keyPath: keyPath] != value }
}

/// The optional field is less than `value`: nil matches no comparison (as NULL in SQL).
/// Ranges on the primary key or an indexed field are read from its tree.
///
/// - Parameters:
///   - keyPath: The optional field.
///   - value: The bound, excluded.
/// - Returns: The condition.
public func < <M, V: KeyComponent & Comparable>(keyPath: KeyPath<M, V?>, value: V) -> Filter<M> { .compare(keyPath, .lessThan, value) }
/// The optional field is at most `value`; nil matches no comparison.
///
/// - Parameters:
///   - keyPath: The optional field.
///   - value: The bound, included.
/// - Returns: The condition.
public func <= <M, V: KeyComponent & Comparable>(keyPath: KeyPath<M, V?>, value: V) -> Filter<M> { .compare(keyPath, .lessThanOrEqual, value) }
/// The optional field is greater than `value`; nil matches no comparison.
///
/// - Parameters:
///   - keyPath: The optional field.
///   - value: The bound, excluded.
/// - Returns: The condition.
public func > <M, V: KeyComponent & Comparable>(keyPath: KeyPath<M, V?>, value: V) -> Filter<M> { .compare(keyPath, .greaterThan, value) }
/// The optional field is at least `value`; nil matches no comparison.
///
/// - Parameters:
///   - keyPath: The optional field.
///   - value: The bound, included.
/// - Returns: The condition.
public func >= <M, V: KeyComponent & Comparable>(keyPath: KeyPath<M, V?>, value: V) -> Filter<M> { .compare(keyPath, .greaterThanOrEqual, value) }

/// The field is less than `value`. Ranges on the primary key or an indexed field are read
/// from its tree; other fields are checked on each record's stored bytes.
///
/// ```swift
/// User.filter(\.age >= 18 && \.age < 65)
/// ```
///
/// - Parameters:
///   - keyPath: The field.
///   - value: The bound, excluded.
/// - Returns: The condition.
public func < <M, V: KeyComponent & Comparable>(keyPath: KeyPath<M, V>, value: V) -> Filter<M> { .compare(keyPath, .lessThan, value) }
/// The field is at most `value`.
///
/// - Parameters:
///   - keyPath: The field.
///   - value: The bound, included.
/// - Returns: The condition.
public func <= <M, V: KeyComponent & Comparable>(keyPath: KeyPath<M, V>, value: V) -> Filter<M> { .compare(keyPath, .lessThanOrEqual, value) }
/// The field is greater than `value`.
///
/// - Parameters:
///   - keyPath: The field.
///   - value: The bound, excluded.
/// - Returns: The condition.
public func > <M, V: KeyComponent & Comparable>(keyPath: KeyPath<M, V>, value: V) -> Filter<M> { .compare(keyPath, .greaterThan, value) }
/// The field is at least `value`.
///
/// - Parameters:
///   - keyPath: The field.
///   - value: The bound, included.
/// - Returns: The condition.
public func >= <M, V: KeyComponent & Comparable>(keyPath: KeyPath<M, V>, value: V) -> Filter<M> { .compare(keyPath, .greaterThanOrEqual, value) }
