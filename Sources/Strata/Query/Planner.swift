import Foundation
import StrataEngine

/// A tree the planner can read: the primary key or one index, keyed by its first field.
/// Fields are identified by key paths in typed queries and by names in `storedump`.
struct AccessCandidate<Field: Hashable> {
    enum Kind { case primaryKey, index(name: String, unique: Bool) }
    let kind: Kind
    let firstField: Field
}

/// What the planner needs to know about a query.
package struct PlanRequest<Field: Hashable> {
    var collection: String
    /// AND-ed conditions on single fields.
    package var conditions: [(Field, FieldBounds)]
    /// Whether other conditions (OR, NOT, …) must also be checked on each record.
    package var hasOpaque: Bool
    var hasConditions: Bool
    /// Sort keys: the field (nil when not a plain field) and direction.
    var sort: [(field: Field?, ascending: Bool)]
    var limit: Int?
    var offset: Int

    var needed: Int? { limit.map { offset + $0 } }
}

/// What to read for a query.
struct ChosenAccess {
    enum Source { case primaryKey, index(String) }
    var source: Source?
    /// Ranges (one per point, or one range) over the tree's keys.
    var ranges: [KeyRange]
    var reverse = false
    var plan: QueryPlan
}

/// Chooses how to run a query: point lookups beat ranges, the primary key beats an index,
/// and with no usable condition a sort on an indexed field with a limit walks that index.
package enum Planner {
    static func choose<Field>(_ query: PlanRequest<Field>, candidates: [AccessCandidate<Field>]) -> ChosenAccess {
        let collection = query.collection
        let (conditions, hasOpaque) = (query.conditions, query.hasOpaque)
        var best: (score: Int, access: ChosenAccess, consumed: Int)?
        for candidate in candidates {
            let onField = conditions.enumerated().filter { $0.element.0 == candidate.firstField }
            guard !onField.isEmpty else { continue }
            guard let bounds = intersect(onField.map(\.element.1)) else {
                // Contradictory conditions: nothing matches; read an empty range.
                return ChosenAccess(source: .primaryKey, ranges: [], plan: plan(query, collection, .primaryKeyPoints(count: 0), nil, residual: false, inOrder: false))
            }
            let (ranges, isPoints) = keyRanges(bounds)
            let isPrimary: Bool
            let source: ChosenAccess.Source
            let access: QueryPlan.Access
            switch candidate.kind {
            case .primaryKey:
                isPrimary = true
                source = .primaryKey
                access = isPoints ? .primaryKeyPoints(count: ranges.count) : .primaryKeyRange
            case .index(let name, _):
                isPrimary = false
                source = .index(name)
                access = isPoints ? .indexPoints(index: name, count: ranges.count) : .indexRange(index: name)
            }
            let score = (isPoints ? 4 : 2) + (isPrimary ? 1 : 0)
            if best == nil || score > best!.score {
                // Conditions on the tree's first field are answered exactly by the ranges.
                let residual = hasOpaque || conditions.count > onField.count
                let description = isPoints ? nil : describe(ranges.first)
                // The tree returns records in its first field's order (ties by primary key):
                // a sort on that field alone needs no sorting, and a limit stops early.
                let inOrder = query.sort.count == 1 && query.sort[0].field == candidate.firstField
                var chosen = ChosenAccess(source: source, ranges: ranges, plan: plan(query, collection, access, description, residual: residual, inOrder: inOrder))
                chosen.reverse = inOrder && !query.sort[0].ascending
                best = (score, chosen, onField.count)
            }
        }
        if let best { return best.access }
        if let order = indexOrder(query, collection: collection, candidates: candidates, residual: query.hasConditions) { return order }
        return ChosenAccess(source: nil, ranges: [KeyRange.all], plan: plan(query, collection, .fullScan, nil, residual: query.hasConditions, inOrder: false))
    }

    /// With no usable condition, a query sorted by a field that leads an index (or the
    /// primary key), with a limit, reads that tree in order and stops early.
    private static func indexOrder<Field>(_ query: PlanRequest<Field>, collection: String, candidates: [AccessCandidate<Field>], residual: Bool) -> ChosenAccess? {
        guard query.sort.count == 1, let sortPath = query.sort[0].field, query.limit != nil else { return nil }
        let descending = !query.sort[0].ascending
        for candidate in candidates where candidate.firstField == sortPath {
            let name: String
            let source: ChosenAccess.Source
            switch candidate.kind {
            case .primaryKey: name = "primary key"; source = .primaryKey
            case .index(let index, _): name = index; source = .index(index)
            }
            var chosen = ChosenAccess(source: source, ranges: [KeyRange.all], reverse: descending,
                                      plan: plan(query, collection, .indexOrder(index: name, descending: descending), nil, residual: residual, inOrder: true))
            chosen.plan.stopsAfter = query.needed
            return chosen
        }
        return nil
    }

    private static func plan<Field>(_ query: PlanRequest<Field>, _ collection: String, _ access: QueryPlan.Access, _ range: String?, residual: Bool, inOrder: Bool) -> QueryPlan {
        // Unsorted results come in primary-key order on every backend, so records found
        // through an index are put back in that order.
        let readsIndex: Bool
        switch access {
        case .indexRange, .indexPoints: readsIndex = true
        default: readsIndex = false
        }
        let sorts = (!query.sort.isEmpty || readsIndex) && !inOrder
        return QueryPlan(collection: collection, access: access, range: range, residualFilter: residual,
                         sortsInMemory: sorts, stopsAfter: sorts ? nil : query.needed)
    }

    /// The intersection of several conditions on one field, or nil when it is empty.
    package static func intersect(_ all: [FieldBounds]) -> FieldBounds? {
        var points: [[UInt8]]?
        var lower = KeyRange.Bound.unbounded, upper = KeyRange.Bound.unbounded
        for bounds in all {
            switch bounds {
            case .points(let p):
                let set = Set(p)
                points = points.map { $0.filter(set.contains) } ?? Array(set).sorted { $0.lexicographicallyPrecedes($1) }
            case .range(let l, let u):
                lower = tighterLower(lower, l)
                upper = tighterUpper(upper, u)
            }
        }
        if let points {
            let range = KeyRange(lower: lower, upper: upper)
            let kept = points.filter { range.contains($0) }
            return kept.isEmpty ? nil : .points(kept)
        }
        if case .included(let l) = lower, case .excluded(let u) = upper, !l.lexicographicallyPrecedes(u) { return nil }
        return .range(lower: lower, upper: upper)
    }

    private static func key(_ bound: KeyRange.Bound) -> [UInt8]? {
        switch bound {
        case .unbounded: nil
        case .included(let k), .excluded(let k): k
        }
    }

    private static func tighterLower(_ a: KeyRange.Bound, _ b: KeyRange.Bound) -> KeyRange.Bound {
        guard let ka = key(a) else { return b }
        guard let kb = key(b) else { return a }
        if ka == kb { return { if case .excluded = a { return a }; return b }() }
        return ka.lexicographicallyPrecedes(kb) ? b : a
    }

    private static func tighterUpper(_ a: KeyRange.Bound, _ b: KeyRange.Bound) -> KeyRange.Bound {
        guard let ka = key(a) else { return b }
        guard let kb = key(b) else { return a }
        if ka == kb { return { if case .excluded = a { return a }; return b }() }
        return ka.lexicographicallyPrecedes(kb) ? a : b
    }

    /// Tree ranges for field bounds: one range per point (its keys, whatever primary key
    /// follows), or the range itself.
    private static func keyRanges(_ bounds: FieldBounds) -> ([KeyRange], isPoints: Bool) {
        switch bounds {
        case .points(let points): return (points.map { KeyRange.startingWith(elements: $0) }, true)
        case .range(let lower, let upper): return ([KeyRange(lower: lower, upper: upper)], false)
        }
    }

    private static func describe(_ range: KeyRange?) -> String? {
        guard let range else { return nil }
        // `afterElements(k)` (k ++ FF) stands for "just above k": show it as k, exclusive
        // below or inclusive above.
        func text(_ bound: KeyRange.Bound, lower: Bool) -> String {
            switch bound {
            case .unbounded: return lower ? "(-∞" : "+∞)"
            case .included(let k) where lower && k.last == 0xFF: return "(\(Key(bytes: Array(k.dropLast())))"
            case .excluded(let k) where !lower && k.last == 0xFF: return "\(Key(bytes: Array(k.dropLast())))]"
            case .included(let k): return lower ? "[\(Key(bytes: k))" : "\(Key(bytes: k))]"
            case .excluded(let k): return lower ? "(\(Key(bytes: k))" : "\(Key(bytes: k)))"
            }
        }
        return text(range.lower, lower: true) + " … " + text(range.upper, lower: false)
    }
}
