import Foundation
import StrataEngine

/// A tree the planner can read: the primary key or one index, with the fields its keys
/// hold, in order. Fields are identified by key paths in typed queries and by names in
/// `storedump`.
struct AccessCandidate<Field: Hashable> {
    enum Kind { case primaryKey, index(name: String, unique: Bool) }
    let kind: Kind
    let fields: [Field]

    init(kind: Kind, fields: [Field]) {
        precondition(!fields.isEmpty, "a tree's keys hold at least one field")
        (self.kind, self.fields) = (kind, fields)
    }

    var isPrimaryKey: Bool { if case .primaryKey = kind { true } else { false } }
    var isUnique: Bool {
        switch kind {
        case .primaryKey: true
        case .index(_, let unique): unique
        }
    }
    var source: ChosenAccess.Source {
        switch kind {
        case .primaryKey: .primaryKey
        case .index(let name, _): .index(name)
        }
    }
    var name: String {
        switch kind {
        case .primaryKey: "primary key"
        case .index(let name, _): name
        }
    }
}

/// What the planner needs to know about a query.
package struct PlanRequest<Field: Hashable> {
    var collection: String
    /// AND-ed conditions on single fields.
    package var conditions: [(Field, FieldBounds)]
    /// Whether other conditions (OR, NOT, array elements, …) must also be checked on each record.
    package var hasOpaque: Bool
    /// AND-ed conditions on array fields' elements (part of `hasOpaque`): no tree answers
    /// them, record bytes can.
    package var elementConditions: [(Field, FieldBounds)] = []
    /// Whether every condition is one on a field or on an array's elements: with `hasOpaque`
    /// set by element conditions alone, a record's bytes can still decide the whole query.
    package var onlyFieldAndElementConditions = false
    /// ORs AND-ed into the condition (part of `hasOpaque`), each as its branches' AND-ed
    /// field conditions: read as the union of one access per branch when every branch has one.
    package var disjunctions: [[[(Field, FieldBounds)]]] = []
    var hasConditions: Bool
    /// Sort keys: the field (nil when not a plain field) and direction.
    var sort: [(field: Field?, ascending: Bool)]
    var limit: Int?
    var offset: Int
    /// Only the matches' number is wanted: an access whose keys decide every condition reads
    /// no record (its entries are counted), which the costs reflect.
    var counting = false

    var needed: Int? { limit.map { offset + $0 } }

    /// Whether the keys of an access answering every condition decide them (see `FieldBounds.keysDecide`).
    var keysDecide: Bool { conditions.allSatisfy { $0.1.keysDecide } }
}

/// What the planner may measure: the collection's size, and how many entries a tree holds
/// in given ranges (counted on the keys alone, up to a limit: exact for small ranges, "at
/// least this many" for large ones).
package struct PlannerStatistics {
    package var records: Int
    package var countEntries: (_ source: ChosenAccess.Source, _ ranges: [KeyRange], _ limit: Int) throws -> Int

    package init(records: Int, countEntries: @escaping (_ source: ChosenAccess.Source, _ ranges: [KeyRange], _ limit: Int) throws -> Int) {
        (self.records, self.countEntries) = (records, countEntries)
    }
}

/// What to read for a query.
package struct ChosenAccess {
    package enum Source: Equatable { case primaryKey, index(String) }
    /// The tree read; nil for a full scan, or when `keySets` names the records.
    var source: Source?
    /// Ranges (one per point, or one range) over the tree's keys.
    var ranges: [KeyRange]
    var reverse = false
    var plan: QueryPlan
    /// Set when several trees' primary keys, combined, name the records (an OR's union, an
    /// AND's intersection).
    var keySets: KeySets?

    /// Ranges of several trees whose primary keys are combined.
    struct KeySets {
        enum Combination { case union, intersection }
        var combination: Combination
        var parts: [(source: Source, ranges: [KeyRange])]
    }

    /// Whether the records are named by primary keys read from other trees (an index, or
    /// several trees' keys combined) rather than scanned from the records tree.
    var readsByPrimaryKey: Bool {
        if keySets != nil { return true }
        if case .index? = source { return true }
        return false
    }
}

/// Chooses how to run a query.
///
/// Each tree — the primary key and every index — is matched against the conditions field by
/// field: equality (or IN) on its leading fields and a range on the next become key ranges
/// (an IN makes one range per value). A tree also serves the sort when, after the fields the
/// conditions fix, its fields are the sort's (all in one direction; an index must cover them
/// all, so that ties come in primary-key order): then nothing is sorted and a limit stops the
/// read. Each way is costed by the rows it reads — counted on the tree's keys, up to the point
/// where the full scan is cheaper — with a fetch through an index at four times a scanned
/// record; a read in order with a limit reads only the rows it needs. The cheapest wins;
/// `explain()` shows it, its estimate and the others considered. Collections of fewer than
/// `smallCollection` records keep the structural choice (points, then ranges, the primary key
/// before an index, any condition before a full scan): every plan is cheap there, and plans
/// stay predictable.
package enum Planner {
    /// Below this many records the choice is structural, not costed.
    static let smallCollection = 256
    /// At most this many key ranges from IN lists on several fields.
    static let maxRanges = 256
    /// What a record read through an index costs, relative to a record read by a scan.
    static let indexFetchCost = 4

    /// One way to run the query.
    private struct Option {
        var candidate: Int?
        var access: QueryPlan.Access
        var source: ChosenAccess.Source?
        var ranges: [KeyRange]
        var consumed: Set<Int>
        var inOrder: Bool
        var reverse: Bool
        var score: Int
        var estimatedRows = 0
        /// The entries its tree ranges hold (counted up to where the choice was clear).
        var entries = 0
        var cost = 0
        /// For a union or intersection: the single-tree options combined.
        var keySets: (combination: ChosenAccess.KeySets.Combination, parts: [Option])? = nil
    }

    /// How a tree's fields meet the conditions.
    private struct Shape {
        var ranges: [KeyRange]
        var consumed: Set<Int>
        /// Fields fixed to one value.
        var constant: Set<Int>
        var allPoints: Bool
        /// The position of the one field with several values, if one; nil also when several have.
        var multiPoint: Int?
    }

    static func choose<Field>(_ query: PlanRequest<Field>, candidates: [AccessCandidate<Field>], statistics: PlannerStatistics? = nil) throws -> ChosenAccess {
        guard var options = treeOptions(query, candidates: candidates) else {
            // Contradictory conditions: nothing matches; read an empty range.
            return ChosenAccess(source: .primaryKey, ranges: [], plan: plan(query, .primaryKeyPoints(count: 0), nil, residual: false, inOrder: false))
        }
        let usesConditions = !options.isEmpty
        // Trees read whole in the sort's order, stopping at the limit.
        if query.needed != nil, !query.sort.isEmpty {
            for (number, candidate) in candidates.enumerated() {
                let order = self.order(query.sort, candidate, constant: [], rangeCount: 1, multiPoint: nil)
                guard order.inOrder else { continue }
                options.append(Option(candidate: number, access: .indexOrder(index: candidate.name, descending: order.reverse),
                                      source: candidate.source, ranges: [KeyRange.all], consumed: [], inOrder: true, reverse: order.reverse, score: 64))
            }
        }
        let scanOrder = candidates.first(where: \.isPrimaryKey).map { order(query.sort, $0, constant: [], rangeCount: 1, multiPoint: nil) }
        options.append(Option(candidate: nil, access: .fullScan, source: nil, ranges: [KeyRange.all], consumed: [],
                              inOrder: scanOrder?.inOrder ?? query.sort.isEmpty, reverse: scanOrder?.reverse ?? false, score: 0))

        let costed = statistics.map { $0.records >= smallCollection } ?? false
        // The accesses whose keys answer every condition count the matches; the others'
        // limited reads then expect to read `needed × records / matches` rows for a page.
        var matches: Int?
        for i in options.indices where !isResidual(options[i], query) {
            try estimate(&options[i], query, candidates, statistics: statistics, matches: nil)
            if !(options[i].inOrder && query.needed != nil) { matches = min(matches ?? .max, options[i].entries) }
        }
        for i in options.indices where isResidual(options[i], query) {
            try estimate(&options[i], query, candidates, statistics: statistics, matches: matches)
        }
        let singleTree = options.filter { !$0.consumed.isEmpty }
        if costed, let best = options.map(\.cost).min(), let intersection = try intersection(of: singleTree, query, under: best, statistics: statistics!) {
            options.append(intersection)
        }
        for disjunction in query.disjunctions {
            if let union = try union(of: disjunction, query, candidates: candidates, statistics: statistics) { options.append(union) }
        }
        let chosen: Option
        if costed {
            chosen = options.min { a, b in a.cost != b.cost ? a.cost < b.cost : a.score > b.score }!
        } else {
            // Structural: the best-scoring condition; else a union; else an ordered walk; else the scan.
            let pool = usesConditions || !query.disjunctions.isEmpty ? options.filter { $0.score >= 2 * 64 } : options
            chosen = (pool.isEmpty ? options : pool).max { a, b in a.score < b.score }!
        }
        let residual = isResidual(chosen, query)
        let isRange = switch chosen.access {
        case .primaryKeyRange, .indexRange: true
        default: false
        }
        var result = ChosenAccess(source: chosen.source, ranges: chosen.ranges, reverse: chosen.inOrder && chosen.reverse,
                                  plan: plan(query, chosen.access, isRange ? describe(chosen.ranges) : nil, residual: residual, inOrder: chosen.inOrder))
        result.keySets = chosen.keySets.map { ChosenAccess.KeySets(combination: $0.combination, parts: $0.parts.map { ($0.source!, $0.ranges) }) }
        if statistics != nil {
            result.plan.estimatedRows = chosen.estimatedRows
            result.plan.alternatives = options.filter { $0.access != chosen.access }.map { QueryPlan.Alternative(access: $0.access, estimatedRows: $0.estimatedRows) }
        }
        return result
    }

    /// Whether records read by `option` must still be checked against conditions: a union
    /// always (each branch's ranges may hold records of the branch's other conditions).
    private static func isResidual<Field>(_ option: Option, _ query: PlanRequest<Field>) -> Bool {
        if option.keySets?.combination == .union { return true }
        return query.hasOpaque || option.consumed.count < query.conditions.count
    }

    /// One option per tree whose leading field has a condition: its point or range access,
    /// and whether it reads in the sort's order. Nil when the conditions contradict each
    /// other (nothing matches).
    private static func treeOptions<Field>(_ query: PlanRequest<Field>, candidates: [AccessCandidate<Field>]) -> [Option]? {
        var options: [Option] = []
        for (number, candidate) in candidates.enumerated() {
            guard let match = shape(of: candidate, query.conditions) else { continue }
            guard let shape = match else { return nil }
            let order = self.order(query.sort, candidate, constant: Set(shape.constant.map { candidate.fields[$0] }),
                                   rangeCount: shape.ranges.count, multiPoint: shape.multiPoint.map { candidate.fields[$0] })
            let access: QueryPlan.Access = switch (candidate.kind, shape.allPoints) {
            case (.primaryKey, true): .primaryKeyPoints(count: shape.ranges.count)
            case (.primaryKey, false): .primaryKeyRange
            case (.index(let name, _), true): .indexPoints(index: name, count: shape.ranges.count)
            case (.index(let name, _), false): .indexRange(index: name)
            }
            options.append(Option(candidate: number, access: access, source: candidate.source, ranges: shape.ranges, consumed: shape.consumed,
                                  inOrder: order.inOrder, reverse: order.reverse,
                                  // Points, then ranges; the primary key first; then the most conditions answered.
                                  score: ((shape.allPoints ? 4 : 2) + (candidate.isPrimaryKey ? 1 : 0)) * 64 + shape.consumed.count))
        }
        return options
    }

    /// An OR read as the union of one access per branch — each branch's cheapest tree — or
    /// nil when some branch has no condition a tree answers (every record could match it).
    /// A branch whose conditions contradict each other matches nothing and reads nothing.
    private static func union<Field>(of branches: [[(Field, FieldBounds)]], _ query: PlanRequest<Field>, candidates: [AccessCandidate<Field>],
                                     statistics: PlannerStatistics?) throws -> Option? {
        var parts: [Option] = []
        for conditions in branches {
            let branch = PlanRequest(collection: query.collection, conditions: conditions, hasOpaque: true, hasConditions: true,
                                     sort: [], limit: nil, offset: 0)
            guard var options = treeOptions(branch, candidates: candidates) else { continue }
            guard !options.isEmpty else { return nil }
            for i in options.indices { try estimate(&options[i], branch, candidates, statistics: statistics, matches: nil) }
            parts.append(options.min { a, b in a.cost != b.cost ? a.cost < b.cost : a.score > b.score }!)
        }
        let rows = parts.reduce(0) { $0 + $1.estimatedRows }
        // Structurally (small collections) a union of point lookups counts as a range; one
        // with a range in it (`!=`, say) is never preferred to the scan.
        let allPoints = parts.allSatisfy { switch $0.access { case .primaryKeyPoints, .indexPoints: true; default: false } }
        return Option(candidate: nil, access: .union(parts.map(\.access)), source: nil, ranges: [], consumed: [], inOrder: false, reverse: false,
                      score: allPoints ? 2 * 64 : -1, estimatedRows: rows,
                      // Each part costs what reading its records alone would.
                      cost: parts.reduce(0) { $0 + $1.cost }, keySets: (.union, parts))
    }

    /// Conditions on fields of two different trees read as the primary keys both trees'
    /// ranges hold: each tree's keys are read (cheap: no record), and only the records in
    /// both are fetched — or none when counting and the keys decide. The pair of the two
    /// narrowest accesses that each answer a condition the other does not; nil without one.
    private static func intersection<Field>(of options: [Option], _ query: PlanRequest<Field>, under best: Int,
                                            statistics: PlannerStatistics) throws -> Option? {
        // Parts need their key counts: not an in-order read's estimate cut at its limit.
        let records = statistics.records
        let sorted = options.filter { !($0.inOrder && query.needed != nil) }.sorted { $0.estimatedRows < $1.estimatedRows }
        guard let first = sorted.first, first.estimatedRows <= records / indexFetchCost,
              var second = sorted.dropFirst().first(where: { $0.candidate != first.candidate && !$0.consumed.isSubset(of: first.consumed)
                                                            && !first.consumed.isSubset(of: $0.consumed) })
        else { return nil }
        // Both trees' keys are read: the pair loses once they hold more than the best cost so far.
        let cap = best - first.estimatedRows
        guard second.estimatedRows < cap else { return nil }
        // The second's count may have stopped where reading it alone lost to the full scan;
        // beside the first it may still pay, up to that cap.
        if second.estimatedRows > records / indexFetchCost, let source = second.source {
            second.estimatedRows = try statistics.countEntries(source, second.ranges, cap)
            guard second.estimatedRows < cap else { return nil }
        }
        var option = Option(candidate: nil, access: .intersection([first.access, second.access]), source: nil, ranges: [],
                            consumed: first.consumed.union(second.consumed), inOrder: false, reverse: false, score: 3 * 64)
        option.keySets = (.intersection, [first, second])
        // Independent conditions: each tree's share of the records, multiplied.
        let both = statistics.records == 0 ? 0 : max(1, first.estimatedRows * second.estimatedRows / statistics.records)
        let fetched = isResidual(option, query) || !query.keysDecide || !query.counting ? both * indexFetchCost : 0
        option.estimatedRows = both
        option.cost = first.estimatedRows + second.estimatedRows + fetched
        return option
    }

    /// Fills in an option's estimated rows read and its cost. `matches`: the records every
    /// condition selects, when a tree's keys answer them all (nil: unknown).
    private static func estimate<Field>(_ option: inout Option, _ query: PlanRequest<Field>, _ candidates: [AccessCandidate<Field>],
                                        statistics: PlannerStatistics?, matches: Int?) throws {
        let residual = isResidual(option, query)
        let records = statistics?.records ?? 0
        let limited = option.inOrder ? query.needed : nil
        // The rows of `total` a read checking conditions expects to pass before `needed` of
        // them match: by the matches' share when known, else one in four.
        func rowsUntil(_ needed: Int, of total: Int) -> Int {
            guard residual else { return min(total, needed) }
            guard let matches else { return min(total, needed * indexFetchCost) }
            return matches == 0 ? total : min(total, needed * max(1, total / matches))
        }
        // Unsorted and limited through an index: every key is read, but the records are
        // fetched in primary-key order only until the page is full.
        let fetchesUntilFull = !option.inOrder && query.sort.isEmpty && query.needed != nil && namesRecordsByKey(option.access)
        let entries: Int
        switch option.access {
        case .fullScan, .indexOrder:
            entries = records
        case .primaryKeyPoints(let count):
            entries = count
        case .indexPoints(_, let count) where option.candidate.map({ candidates[$0].isUnique && candidates[$0].fields.count == 1 }) ?? false:
            entries = count
        default:
            // Counting stops where the answer no longer matters: at the rows a limited
            // in-order read needs, or where a full scan would be cheaper.
            let cap = limited.map { rowsUntil($0, of: records) } ?? (records < smallCollection ? records + 1 : records / indexFetchCost + 1)
            if let statistics, let source = option.source {
                entries = try statistics.countEntries(source, option.ranges, max(1, cap))
            } else {
                entries = records
            }
        }
        option.entries = entries
        let rows = limited.map { rowsUntil($0, of: entries) } ?? entries
        option.estimatedRows = rows
        let isIndex = if case .index? = option.source { true } else { false }
        // A count whose access decides every condition reads keys only.
        let readsRecords = !query.counting || residual || !query.keysDecide
        if fetchesUntilFull, readsRecords, let needed = query.needed {
            let fetched = rowsUntil(needed, of: entries)
            option.estimatedRows = fetched
            option.cost = entries + fetched * indexFetchCost
            return
        }
        option.cost = rows * (isIndex && readsRecords ? indexFetchCost : 1)
    }

    /// How `candidate`'s fields meet `conditions`: nil when its first field has none; `.some(nil)`
    /// when they contradict each other (nothing matches).
    private static func shape<Field>(of candidate: AccessCandidate<Field>, _ conditions: [(Field, FieldBounds)]) -> Shape?? {
        var prefixes: [[UInt8]] = [[]]
        var shape = Shape(ranges: [], consumed: [], constant: [], allPoints: true, multiPoint: nil)
        var multiPoints = 0
        var rangeBounds: (lower: KeyRange.Bound, upper: KeyRange.Bound)?
        fields: for (position, field) in candidate.fields.enumerated() {
            let on = conditions.indices.filter { conditions[$0].0 == field }
            if on.isEmpty { break }
            guard let bounds = intersect(on.map { conditions[$0].1 }) else { return .some(nil) }
            switch bounds {
            case .points(let points):
                guard prefixes.count * points.count <= maxRanges else { break fields }
                prefixes = prefixes.flatMap { prefix in points.map { prefix + $0 } }
                if points.count == 1 {
                    shape.constant.insert(position)
                } else {
                    multiPoints += 1
                    shape.multiPoint = position
                }
                shape.consumed.formUnion(on)
            case .range(let lower, let upper):
                rangeBounds = (lower, upper)
                shape.consumed.formUnion(on)
                break fields
            }
        }
        guard !shape.consumed.isEmpty else { return nil }
        if multiPoints > 1 { shape.multiPoint = nil }
        if let (lower, upper) = rangeBounds {
            shape.allPoints = false
            shape.ranges = prefixes.map { KeyRange(lower: prefixed($0, lower, lower: true), upper: prefixed($0, upper, lower: false)) }
        } else {
            shape.ranges = prefixes.map { KeyRange.startingWith(elements: $0) }
        }
        return .some(shape)
    }

    /// A bound on one field's key, behind the keys of the fields before it.
    private static func prefixed(_ prefix: [UInt8], _ bound: KeyRange.Bound, lower: Bool) -> KeyRange.Bound {
        switch bound {
        case .unbounded: prefix.isEmpty ? .unbounded : lower ? .included(prefix) : .excluded(KeyRange.afterElements(prefix))
        case .included(let key): .included(prefix + key)
        case .excluded(let key): .excluded(prefix + key)
        }
    }

    /// Whether reading the candidate's tree (in `rangeCount` ranges) returns records in the
    /// sort's order, ties in primary-key order, and whether backwards.
    private static func order<Field>(_ sort: [(field: Field?, ascending: Bool)], _ candidate: AccessCandidate<Field>, constant: Set<Field>,
                                     rangeCount: Int, multiPoint: Field?) -> (inOrder: Bool, reverse: Bool) {
        // A sort key on a field the conditions fix changes nothing.
        let keys = sort.filter { key in key.field.map { !constant.contains($0) } ?? true }
        // Unsorted: the primary-key tree's ranges come in its order (several ranges too: they
        // are built in ascending order).
        guard !keys.isEmpty else { return (candidate.isPrimaryKey, false) }
        guard keys.allSatisfy({ $0.field != nil && $0.ascending == keys[0].ascending }) else { return (false, false) }
        let treeFields = candidate.fields.filter { !constant.contains($0) }
        guard keys.count <= treeFields.count, zip(keys, treeFields).allSatisfy({ $0.field == $1 }) else { return (false, false) }
        // Equal sort keys come in the order of the index's other fields, not the primary key's.
        if !candidate.isPrimaryKey, keys.count < treeFields.count { return (false, false) }
        // Several ranges are in order when they split on the first field sorted by.
        if rangeCount > 1, multiPoint == nil || multiPoint != keys[0].field { return (false, false) }
        return (true, !keys[0].ascending)
    }

    private static func plan<Field>(_ query: PlanRequest<Field>, _ access: QueryPlan.Access, _ range: String?, residual: Bool, inOrder: Bool) -> QueryPlan {
        let sorts = !query.sort.isEmpty && !inOrder
        var plan = QueryPlan(collection: query.collection, access: access, range: range, residualFilter: residual,
                             sortsInMemory: sorts, stopsAfter: sorts ? nil : query.needed)
        if sorts { plan.keepsTop = query.needed }
        // Unsorted results come in primary-key order on every backend: records other trees
        // name are fetched in that order (and a limit stops the fetches).
        plan.fetchesInPrimaryKeyOrder = !inOrder && namesRecordsByKey(access)
        return plan
    }

    /// Whether the access reads primary keys from other trees, then the records they name.
    private static func namesRecordsByKey(_ access: QueryPlan.Access) -> Bool {
        switch access {
        case .indexRange, .indexPoints, .union, .intersection: true
        case .fullScan, .primaryKeyRange, .primaryKeyPoints, .indexOrder: false
        }
    }

    /// The intersection of several conditions on one field, or nil when it is empty.
    package static func intersect(_ all: [FieldBounds]) -> FieldBounds? {
        var points: [[UInt8]]?
        var lower = KeyRange.Bound.unbounded, upper = KeyRange.Bound.unbounded
        for bounds in all {
            switch bounds {
            case .points(let p):
                let sorted = sortedUnique(p)
                points = points.map { common($0, sorted) } ?? sorted
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

    /// `keys` in byte order, each once, sorted as `PrimaryKeyList` sorts (by key heads).
    /// (Through a `Set` and `lexicographicallyPrecedes`, an `IN` list of 64 ids spent more
    /// on this than on looking its records up: W1 at 100k, strata-typed get.in, perf.)
    private static func sortedUnique(_ keys: [[UInt8]]) -> [[UInt8]] {
        var list = PrimaryKeyList()
        for key in keys { key.withUnsafeBytes { list.append($0) } }
        list.sortRemovingDuplicates()
        var sorted: [[UInt8]] = []
        sorted.reserveCapacity(list.count)
        list.forEach { sorted.append(Array($0)); return true }
        return sorted
    }

    /// The keys two sorted lists of unique keys share, sorted.
    private static func common(_ a: [[UInt8]], _ b: [[UInt8]]) -> [[UInt8]] {
        var (i, j) = (0, 0)
        var shared: [[UInt8]] = []
        while i < a.count, j < b.count {
            let order = a[i].withUnsafeBytes { x in b[j].withUnsafeBytes { y in compareBytes(x, y) } }
            if order == 0 { shared.append(a[i]) }
            if order <= 0 { i += 1 }
            if order >= 0 { j += 1 }
        }
        return shared
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

    /// The ranges read, as decoded keys (the first, and how many more).
    private static func describe(_ ranges: [KeyRange]) -> String? {
        guard let first = ranges.first else { return nil }
        return describe(first).map { ranges.count > 1 ? $0 + " and \(ranges.count - 1) more" : $0 }
    }

    private static func describe(_ range: KeyRange) -> String? {
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

extension PlannerStatistics {
    /// A collection's statistics as one snapshot of its trees has them: the record count is
    /// the records tree's (kept by the engine), ranges are counted on the keys.
    init(engine: any TreeReading, entry: CatalogEntry) throws {
        self.init(records: try engine.count(in: entry.recordsTree)) { source, ranges, limit in
            let tree = switch source {
            case .primaryKey: entry.recordsTree
            case .index(let name): entry.indexTree(name)
            }
            var entries = 0
            for range in ranges where entries < limit {
                try engine.scan(tree, in: range, reverse: false) { _, _ in
                    entries += 1
                    return entries < limit
                }
            }
            return entries
        }
    }
}
