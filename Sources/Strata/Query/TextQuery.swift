import Foundation
import StrataEngine

/// A query written as text, for tools without the Swift model types (`storedump find`):
///
/// ```text
/// expression := or
/// or         := and ("OR" and)*
/// and        := not ("AND" not)*
/// not        := "NOT" not | "(" expression ")" | condition
/// condition  := field ("=" | "==" | "!=" | "<" | "<=" | ">" | ">=") literal
///             | field ["NOT"] "IN" "(" literal ("," literal)* ")"
///             | field "BETWEEN" literal "AND" literal
///             | field ("BEGINSWITH" | "CONTAINS") string
///             | field ["NOT"] "LIKE" string            -- * any run, ? one character
/// field      := name ("." name)*                       -- a property path
/// literal    := number | string | true | false | null  -- strings in '…' or "…"
/// ```
///
/// Keywords are case-insensitive. Conditions on the primary key or an index's first field
/// are answered from the B-tree, as for typed queries.
public indirect enum TextPredicate: Equatable, Sendable {
    /// A comparison operator.
    public enum Comparison: String, Sendable { case equal = "=", notEqual = "!=", less = "<", lessOrEqual = "<=", greater = ">", greaterOrEqual = ">=" }

    /// A value written in a predicate.
    public enum Literal: Equatable, Sendable {
        case null
        case bool(Bool)
        case number(Double, text: String)
        case string(String)
    }

    case compare(String, Comparison, Literal)
    case oneOf(String, [Literal], negated: Bool)
    case between(String, Literal, Literal)
    case beginsWith(String, String)
    case contains(String, String)
    /// `LIKE` (case-sensitive) and `ILIKE` (case-insensitive): `*` any run, `?` one character.
    case like(String, String, negated: Bool, caseSensitive: Bool)
    case and(TextPredicate, TextPredicate)
    case or(TextPredicate, TextPredicate)
    case not(TextPredicate)

    /// How deeply parentheses and `NOT` may nest. Deeper input is refused with a
    /// `TextQueryError` rather than risking the stack (as SQLite's `SQLITE_MAX_EXPR_DEPTH`).
    /// Long `AND`/`OR` chains do not nest: they are built as balanced trees.
    public static let maxNestingDepth = 100

    /// Parses `text`.
    ///
    /// ```swift
    /// let predicate = try TextPredicate.parse("age > 40 AND city != 'Boston'")
    /// ```
    /// - Throws: `TextQueryError` naming the 1-based column where parsing failed, also when
    ///   parentheses and `NOT` nest deeper than `maxNestingDepth`.
    /// - Parameter text: Comparisons (`=`, `!=`, `<`, `<=`, `>`, `>=`, `LIKE`, `ILIKE`, `IS NULL`,
    ///   `IN`) joined by `AND`, `OR`, `NOT` and parentheses.
    /// - Returns: The parsed predicate.
    public static func parse(_ text: String) throws -> TextPredicate {
        var parser = TextQueryParser(text)
        let predicate = try parser.expression()
        guard parser.atEnd else { throw parser.error("unexpected \(parser.describeNext()) after the end of the expression") }
        return predicate
    }

    // MARK: Evaluation

    /// Whether the record satisfies the predicate. A missing field is null. To test many
    /// records, compile once with `CompiledTextPredicate(_:)`.
    ///
    /// - Parameter record: A decoded record.
    /// - Returns: Whether it satisfies the predicate.
    public func matches(_ record: RecordValue) -> Bool {
        CompiledTextPredicate(self).matches(record)
    }

    /// How a stored value compares with a literal, or nil when they cannot be compared.
    static func order(_ value: RecordValue, _ literal: Literal) -> ComparisonResult? {
        func compare<T: Comparable>(_ a: T, _ b: T) -> ComparisonResult? {
            a < b ? .orderedAscending : a == b ? .orderedSame : b < a ? .orderedDescending : nil  // nil: NaN
        }
        switch (value, literal) {
        case (.int(let v), .number(let n, _)): return compare(Double(v), n)
        case (.uint(let v), .number(let n, _)): return compare(Double(v), n)
        case (.double(let v), .number(let n, _)): return compare(v, n)
        case (.string(let v), .string(let s)), (.url(let v), .string(let s)): return compare(v, s)
        case (.decimal(let v), .number(let n, _)): return Double(v).flatMap { compare($0, n) }
        case (.bool(let v), .bool(let b)): return v == b ? .orderedSame : (v ? .orderedDescending : .orderedAscending)
        case (.uuid(let v), .string(let s)): return UUID(uuidString: s).flatMap { compare(v.uuidString, $0.uuidString) }
        case (.date(let v), .string(let s)): return InstantText.parse(s).flatMap { compare(v, $0) }
        case (.date(let v), .number(let n, _)): return compare(v.timeIntervalSince1970, n)
        default: return nil
        }
    }

    // MARK: Planning

    /// The AND-ed single-field conditions the planner may answer from a tree, given how
    /// each candidate field's keys are typed (`int`, `double`, `string`, …); and whether
    /// other conditions remain.
    func conjuncts(keyTypes: [String: String]) -> (conditions: [(String, FieldBounds)], hasOpaque: Bool) {
        switch self {
        case .and(let a, let b):
            let (x, ox) = a.conjuncts(keyTypes: keyTypes), (y, oy) = b.conjuncts(keyTypes: keyTypes)
            return (x + y, ox || oy)
        case .compare(let field, let op, let literal):
            guard op != .notEqual, let type = keyTypes[field], let key = Self.keyBytes(literal, as: type) else { return ([], true) }
            switch op {
            case .equal: return ([(field, .equal(toAnyOf: [key]))], false)
            case .less: return ([(field, .comparison(.lessThan, key))], false)
            case .lessOrEqual: return ([(field, .comparison(.lessThanOrEqual, key))], false)
            case .greater: return ([(field, .comparison(.greaterThan, key))], false)
            case .greaterOrEqual: return ([(field, .comparison(.greaterThanOrEqual, key))], false)
            case .notEqual: return ([], true)
            }
        case .oneOf(let field, let literals, false):
            guard let type = keyTypes[field] else { return ([], true) }
            let keys = literals.compactMap { Self.keyBytes($0, as: type) }
            guard keys.count == literals.count else { return ([], true) }
            return ([(field, .equal(toAnyOf: keys))], false)
        case .between(let field, let low, let high):
            guard let type = keyTypes[field], let l = Self.keyBytes(low, as: type), let h = Self.keyBytes(high, as: type) else { return ([], true) }
            return ([(field, .range(lower: .included(l), upper: .excluded(KeyRange.afterElements(h))))], false)
        case .beginsWith(let field, let prefix) where keyTypes[field] == "string":
            return ([(field, .prefix(Key().appendingStringPrefix(prefix)))], false)
        default:
            return ([], true)
        }
    }

    /// The ORs AND-ed into the predicate, each as its branches' AND-ed single-field
    /// conditions (see `PlanRequest.disjunctions`).
    func disjunctions(keyTypes: [String: String]) -> [[[(String, FieldBounds)]]] {
        func branches(_ predicate: TextPredicate) -> [TextPredicate] {
            if case .or(let a, let b) = predicate { return branches(a) + branches(b) }
            return [predicate]
        }
        switch self {
        case .and(let a, let b): return a.disjunctions(keyTypes: keyTypes) + b.disjunctions(keyTypes: keyTypes)
        case .or: return [branches(self).map { $0.conjuncts(keyTypes: keyTypes).conditions }]
        default: return []
        }
    }

    /// The key encoding of a literal as a value of the stored key type, when exact.
    static func keyBytes(_ literal: Literal, as type: String) -> [UInt8]? {
        switch (literal, type) {
        case (.number(let n, let text), "int"): return Int64(text).map { Key($0).bytes } ?? (n == n.rounded() && abs(n) < 9e15 ? Key(Int64(n)).bytes : nil)
        case (.number(_, let text), "uint"): return UInt64(text).map { Key($0).bytes }
        case (.number(let n, _), "double"): return Key(n).bytes
        case (.string(let s), "string"): return Key(s).bytes
        case (.string(let s), "uuid"): return UUID(uuidString: s).map { Key($0).bytes }
        case (.string(let s), "date"): return InstantText.parse(s).map { Key($0).bytes }
        case (.bool(let b), "bool"): return Key(b).bytes
        default: return nil
        }
    }
}

/// A query that did not parse, with the 1-based column where parsing stopped.
public struct TextQueryError: Error, Equatable, DescribedError {
    /// What is wrong.
    public var message: String
    /// Where, 1-based.
    public var column: Int
    public var description: String { "column \(column): \(message)" }
}

/// Recursive-descent parser for `TextPredicate`.
struct TextQueryParser {
    enum Token: Equatable {
        case word(String)          // identifiers, field paths and keywords
        case string(String)
        case number(String)
        case symbol(String)        // ( ) , = == != < <= > >=
        case end
    }

    private var tokens: [(token: Token, column: Int)] = []
    private var index = 0
    private var depth = 0
    private var lexError: TextQueryError?

    init(_ text: String) {
        let chars = Array(text)
        var i = 0
        while i < chars.count {
            let c = chars[i], column = i + 1
            if c.isWhitespace { i += 1; continue }
            if c == "'" || c == "\"" {
                var value = "", j = i + 1, closed = false
                while j < chars.count {
                    if chars[j] == c {
                        if j + 1 < chars.count, chars[j + 1] == c { value.append(c); j += 2; continue }  // doubled quote
                        closed = true
                        break
                    }
                    value.append(chars[j]); j += 1
                }
                guard closed else { lexError = TextQueryError(message: "unterminated string", column: column); return }
                tokens.append((.string(value), column)); i = j + 1
            } else if c.isNumber || (c == "-" && i + 1 < chars.count && chars[i + 1].isNumber) {
                var j = i + 1
                while j < chars.count, chars[j].isNumber || chars[j] == "." || chars[j] == "e" || chars[j] == "E" || ((chars[j] == "-" || chars[j] == "+") && (chars[j - 1] == "e" || chars[j - 1] == "E")) { j += 1 }
                tokens.append((.number(String(chars[i ..< j])), column)); i = j
            } else if c.isLetter || c == "_" {
                var j = i + 1
                while j < chars.count, chars[j].isLetter || chars[j].isNumber || chars[j] == "_" || chars[j] == "." { j += 1 }
                tokens.append((.word(String(chars[i ..< j])), column)); i = j
            } else if "(),".contains(c) {
                tokens.append((.symbol(String(c)), column)); i += 1
            } else if "=!<>".contains(c) {
                var op = String(c)
                if i + 1 < chars.count, chars[i + 1] == "=" { op.append("="); i += 1 }
                guard op != "!" else { lexError = TextQueryError(message: "'!' must be followed by '='", column: column); return }
                tokens.append((.symbol(op), column)); i += 1
            } else {
                lexError = TextQueryError(message: "unexpected character '\(c)'", column: column)
                return
            }
        }
        tokens.append((.end, chars.count + 1))
    }

    var atEnd: Bool { lexError == nil && tokens[index].token == .end }

    func error(_ message: String) -> TextQueryError {
        lexError ?? TextQueryError(message: message, column: tokens[min(index, tokens.count - 1)].column)
    }

    func describeNext() -> String {
        switch tokens[index].token {
        case .word(let w): "'\(w)'"
        case .string(let s): "string '\(s)'"
        case .number(let n): "number \(n)"
        case .symbol(let s): "'\(s)'"
        case .end: "end of input"
        }
    }

    private func isKeyword(_ keyword: String, at offset: Int = 0) -> Bool {
        guard index + offset < tokens.count, case .word(let w) = tokens[index + offset].token else { return false }
        return w.uppercased() == keyword
    }

    private mutating func take(_ keyword: String) -> Bool {
        guard isKeyword(keyword) else { return false }
        index += 1
        return true
    }

    private mutating func expect(symbol: String) throws {
        guard tokens[index].token == .symbol(symbol) else { throw error("expected '\(symbol)', found \(describeNext())") }
        index += 1
    }

    mutating func expression() throws -> TextPredicate {
        if let lexError { throw lexError }
        var terms = [try conjunction()]
        while take("OR") { terms.append(try conjunction()) }
        return Self.balanced(terms[...], TextPredicate.or)
    }

    private mutating func conjunction() throws -> TextPredicate {
        var terms = [try negation()]
        while take("AND") { terms.append(try negation()) }
        return Self.balanced(terms[...], TextPredicate.and)
    }

    /// Joins terms, in order, into a tree of depth log2(count): AND and OR are
    /// associative, and a left-deep tree of 10,000 terms would recurse 10,000 deep.
    private static func balanced(_ terms: ArraySlice<TextPredicate>, _ join: (TextPredicate, TextPredicate) -> TextPredicate) -> TextPredicate {
        if terms.count == 1 { return terms.first! }
        let middle = terms.startIndex + terms.count / 2
        return join(balanced(terms[..<middle], join), balanced(terms[middle...], join))
    }

    private mutating func negation() throws -> TextPredicate {
        let opensLevel = isKeyword("NOT") || tokens[index].token == .symbol("(")
        if opensLevel {
            guard depth < TextPredicate.maxNestingDepth else {
                throw error("parentheses and NOT nest deeper than \(TextPredicate.maxNestingDepth) levels")
            }
            depth += 1
        }
        defer { if opensLevel { depth -= 1 } }
        if take("NOT") { return .not(try negation()) }
        if tokens[index].token == .symbol("(") {
            index += 1
            let inner = try expression()
            try expect(symbol: ")")
            return inner
        }
        return try condition()
    }

    static let keywords: Set<String> = ["AND", "OR", "NOT", "IN", "BETWEEN", "BEGINSWITH", "CONTAINS", "LIKE", "TRUE", "FALSE", "NULL"]

    private mutating func condition() throws -> TextPredicate {
        guard case .word(let field) = tokens[index].token, !Self.keywords.contains(field.uppercased()) else {
            throw error("expected a field name, found \(describeNext())")
        }
        index += 1
        if case .symbol(let op) = tokens[index].token, let comparison = TextPredicate.Comparison(rawValue: op == "==" ? "=" : op) {
            index += 1
            return .compare(field, comparison, try literal())
        }
        let negated = take("NOT")
        if take("IN") {
            try expect(symbol: "(")
            var values = [try literal()]
            while tokens[index].token == .symbol(",") {
                index += 1
                values.append(try literal())
            }
            try expect(symbol: ")")
            return .oneOf(field, values, negated: negated)
        }
        if take("LIKE") { return .like(field, try string(), negated: negated, caseSensitive: true) }
        if take("ILIKE") { return .like(field, try string(), negated: negated, caseSensitive: false) }
        if negated { throw error("expected IN, LIKE or ILIKE after NOT, found \(describeNext())") }
        if take("BETWEEN") {
            let low = try literal()
            guard take("AND") else { throw error("expected AND in BETWEEN, found \(describeNext())") }
            return .between(field, low, try literal())
        }
        if take("BEGINSWITH") { return .beginsWith(field, try string()) }
        if take("CONTAINS") { return .contains(field, try string()) }
        throw error("expected an operator after '\(field)', found \(describeNext())")
    }

    private mutating func string() throws -> String {
        guard case .string(let s) = tokens[index].token else { throw error("expected a string, found \(describeNext())") }
        index += 1
        return s
    }

    private mutating func literal() throws -> TextPredicate.Literal {
        switch tokens[index].token {
        case .string(let s): index += 1; return .string(s)
        case .number(let text):
            guard let value = Double(text) else { throw error("'\(text)' is not a number") }
            index += 1
            return .number(value, text: text)
        case .word(let w) where ["TRUE", "FALSE", "NULL"].contains(w.uppercased()):
            index += 1
            return w.uppercased() == "NULL" ? .null : .bool(w.uppercased() == "TRUE")
        default:
            throw error("expected a value, found \(describeNext())")
        }
    }
}

extension CollectionInspector {
    /// The records of `collection` matching `predicate`, sorted by the given fields
    /// (primary-key order otherwise), after `offset`, up to `limit`; with the plan used.
    ///
    /// - Throws: `StorageError.collectionNotFound` for an unknown collection, `StrataError` when
    ///   the file cannot be read.
    /// - Parameters:
    ///   - name: The collection's name.
    ///   - predicate: The condition, or nil for every record.
    ///   - sort: Fields to sort by, in order of precedence.
    ///   - limit: The most records to return.
    ///   - offset: How many matches to skip.
    /// - Returns: The plan and the records.
    public func find(in name: String, where predicate: TextPredicate?, sortedBy sort: [(field: String, ascending: Bool)] = [],
                     limit: Int? = nil, offset: Int = 0) throws -> (plan: QueryPlan, records: [Record]) {
        var records: [Record] = []
        let plan = try find(in: name, where: predicate, sortedBy: sort, limit: limit, offset: offset) { record in
            records.append(record)
            return true
        }
        return (plan, records)
    }

    /// Streams the records of `collection` matching `predicate` to `body` (which returns
    /// false to stop), sorted by the given fields (primary-key order otherwise), after
    /// `offset`, up to `limit`. Memory stays bounded when there is no sort, or a sort with a
    /// limit (a bounded top-k).
    ///
    /// ```swift
    /// let adults = try TextPredicate.parse("age >= 18")
    /// var count = 0
    /// let plan = try inspector.find(in: "users", where: adults, timeLimit: .seconds(2)) { _ in count += 1; return true }
    /// ```
    ///
    /// - Parameters:
    ///   - name: the collection.
    ///   - predicate: the condition, or nil for every record.
    ///   - sort: fields and directions; primary-key order when empty.
    ///   - limit: at most this many records.
    ///   - offset: skip this many matches first.
    ///   - timeLimit: stop with `QueryTimeLimitExceeded` once the query has run this long
    ///     (checked as records are examined); records already passed to `body` stay
    ///     delivered.
    ///   - body: receives each record; returns false to stop.
    /// - Returns: the plan used.
    /// - Throws: `QueryTimeLimitExceeded`, `StorageError.collectionNotFound` for an unknown
    ///   collection, `StrataError` when the file cannot be read.
    @discardableResult
    public func find(in name: String, where predicate: TextPredicate?, sortedBy sort: [(field: String, ascending: Bool)] = [],
                     limit: Int? = nil, offset: Int = 0, timeLimit: Duration? = nil, _ body: (Record) throws -> Bool) throws -> QueryPlan {
        let entry = try entry(name)
        let fields = FieldTable(names: entry.fields)
        // Key types per candidate field, read from each tree's first key.
        var keyTypes: [String: String] = [:]
        var candidates: [AccessCandidate<String>] = []
        if let first = entry.primaryKey.first, let type = try firstKeyType(entry.recordsTree) {
            keyTypes[first] = type
            // The first field only: literals are typed by the first key of each tree, which
            // shows the first field's type alone.
            candidates.append(AccessCandidate(kind: .primaryKey, fields: [first]))
        }
        for index in entry.indexes where snapshot.hasTree(entry.indexTree(index.name)) {
            guard let first = index.fields.first else { continue }
            if let type = try firstKeyType(entry.indexTree(index.name)) { keyTypes[first] = keyTypes[first] ?? type }
            candidates.append(AccessCandidate(kind: .index(name: index.name, unique: index.unique), fields: [first]))
        }
        let (conditions, hasOpaque) = predicate?.conjuncts(keyTypes: keyTypes) ?? ([], false)
        let request = PlanRequest(collection: name, conditions: conditions, hasOpaque: hasOpaque,
                                  disjunctions: predicate?.disjunctions(keyTypes: keyTypes) ?? [], hasConditions: predicate != nil,
                                  sort: sort.map { (Optional($0.field), $0.ascending) }, limit: limit, offset: offset)
        let access = try Planner.choose(request, candidates: candidates, statistics: try PlannerStatistics(engine: snapshot, entry: entry))
        let compiled = predicate.map(CompiledTextPredicate.init)
        let deadline = timeLimit.map { QueryDeadline(limit: $0) }
        let execution = QueryExecution<RecordValue>(
            engine: snapshot, entry: entry, uniqueIndexes: Set(entry.indexes.filter(\.unique).map(\.name)),
            decode: { try RecordValue.decode(Array($0), fields: fields, collection: name) }, bytesCheck: nil,
            matches: { record in
                try deadline?.check()
                return compiled?.matches(record) ?? true
            },
            order: sort.isEmpty ? nil : { a, b in
                for key in sort {
                    let order = RecordValue.order(a.value(at: key.field) ?? .null, b.value(at: key.field) ?? .null)
                    if order != .orderedSame { return key.ascending ? order : order == .orderedAscending ? .orderedDescending : .orderedAscending }
                }
                return .orderedSame
            },
            offset: offset, limit: limit)
        try execution.run(access) { key, value in
            try body(Record(key: Key(bytes: Array(key)), value: value))
        }
        return access.plan
    }

    private func firstKeyType(_ tree: String) throws -> String? {
        let cursor = try snapshot.cursor(tree)
        guard try cursor.first() else { return nil }
        return try Key(bytes: cursor.key).elements().first?.typeName
    }
}

extension RecordValue {
    /// A total order for sorting: nil first, then numbers, strings, and the rest by JSON.
    static func order(_ a: RecordValue, _ b: RecordValue) -> ComparisonResult {
        func rank(_ v: RecordValue) -> Int {
            switch v {
            case .null: 0
            case .bool: 1
            case .int, .uint, .double, .decimal: 2
            case .date: 3
            case .string, .url: 4
            default: 5
            }
        }
        func number(_ v: RecordValue) -> Double? {
            switch v {
            case .int(let x): Double(x)
            case .uint(let x): Double(x)
            case .double(let x): x
            case .decimal(let x): Double(x)
            default: nil
            }
        }
        func compare<T: Comparable>(_ x: T, _ y: T) -> ComparisonResult { x < y ? .orderedAscending : x == y ? .orderedSame : .orderedDescending }
        let (ra, rb) = (rank(a), rank(b))
        if ra != rb { return compare(ra, rb) }
        if let x = number(a), let y = number(b) { return compare(x, y) }
        switch (a, b) {
        case (.bool(let x), .bool(let y)): return compare(x ? 1 : 0, y ? 1 : 0)
        case (.date(let x), .date(let y)): return compare(x, y)
        case (.string(let x), .string(let y)), (.url(let x), .url(let y)), (.string(let x), .url(let y)), (.url(let x), .string(let y)): return compare(x, y)
        default: return compare(a.json, b.json)
        }
    }
}
