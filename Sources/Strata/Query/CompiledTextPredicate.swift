import Foundation

/// A `TextPredicate` prepared for testing many records: field paths are split once, chains
/// of AND and OR become flat lists checked in a loop, LIKE patterns are compiled once. `CollectionInspector.find` compiles its predicate once per query.
///
/// ```swift
/// let check = CompiledTextPredicate(try TextPredicate.parse("age > 40 AND name LIKE 'A*'"))
/// let adults = records.filter { check.matches($0) }
/// ```
public struct CompiledTextPredicate: Sendable {
    private indirect enum Node: Sendable {
        case compare([String], TextPredicate.Comparison, TextPredicate.Literal)
        case oneOf([String], [TextPredicate.Literal], negated: Bool)
        case between([String], TextPredicate.Literal, TextPredicate.Literal)
        case beginsWith([String], String)
        case contains([String], String)
        case like([String], LikePattern, negated: Bool)
        case all([Node])
        case any([Node])
        case not(Node)
    }

    private let root: Node

    /// Compiles `predicate`.
    ///
    /// - Parameter predicate: A parsed predicate.
    public init(_ predicate: TextPredicate) {
        root = Self.compile(predicate)
    }

    private static func compile(_ predicate: TextPredicate) -> Node {
        func path(_ field: String) -> [String] { field.split(separator: ".").map(String.init) }
        switch predicate {
        case .compare(let field, let op, let literal): return .compare(path(field), op, literal)
        case .oneOf(let field, let literals, let negated): return .oneOf(path(field), literals, negated: negated)
        case .between(let field, let low, let high): return .between(path(field), low, high)
        case .beginsWith(let field, let prefix): return .beginsWith(path(field), prefix)
        case .contains(let field, let part): return .contains(path(field), part)
        case .like(let field, let pattern, let negated, let caseSensitive):
            return .like(path(field), LikePattern(pattern, wildcards: .glob, caseSensitive: caseSensitive), negated: negated)
        case .and: return .all(flatten(predicate, isAnd: true).map(compile))
        case .or: return .any(flatten(predicate, isAnd: false).map(compile))
        case .not(let inner): return .not(compile(inner))
        }
    }

    /// The operands of a chain of ANDs (or ORs), in order, without recursion.
    private static func flatten(_ predicate: TextPredicate, isAnd: Bool) -> [TextPredicate] {
        var result: [TextPredicate] = []
        var stack = [predicate]
        while let next = stack.popLast() {
            switch (next, isAnd) {
            case (.and(let a, let b), true), (.or(let a, let b), false): stack.append(contentsOf: [b, a])
            default: result.append(next)
            }
        }
        return result
    }

    /// Whether the record satisfies the predicate. A missing field is null.
    ///
    /// - Parameter record: A decoded record.
    /// - Returns: Whether it satisfies the predicate.
    public func matches(_ record: RecordValue) -> Bool { Self.matches(root, record) }

    private static func matches(_ node: Node, _ record: RecordValue) -> Bool {
        switch node {
        case .compare(let path, let op, let literal):
            let value = record.value(atPath: path) ?? .null
            if case .null = literal {
                let isNull = value == .null
                return op == .equal ? isNull : op == .notEqual ? !isNull : false
            }
            guard let order = TextPredicate.order(value, literal) else { return op == .notEqual }
            switch op {
            case .equal: return order == .orderedSame
            case .notEqual: return order != .orderedSame
            case .less: return order == .orderedAscending
            case .lessOrEqual: return order != .orderedDescending
            case .greater: return order == .orderedDescending
            case .greaterOrEqual: return order != .orderedAscending
            }
        case .oneOf(let path, let literals, let negated):
            let value = record.value(atPath: path) ?? .null
            return literals.contains { TextPredicate.order(value, $0) == .orderedSame || ($0 == .null && value == .null) } != negated
        case .between(let path, let low, let high):
            let value = record.value(atPath: path) ?? .null
            guard let a = TextPredicate.order(value, low), let b = TextPredicate.order(value, high) else { return false }
            return a != .orderedAscending && b != .orderedDescending
        case .beginsWith(let path, let prefix):
            guard case .string(let s)? = record.value(atPath: path) else { return false }
            return s.hasPrefix(prefix)
        case .contains(let path, let part):
            guard case .string(let s)? = record.value(atPath: path) else { return false }
            return s.contains(part)
        case .like(let path, let pattern, let negated):
            guard case .string(let s)? = record.value(atPath: path) else { return negated }
            return pattern.matches(s) != negated
        case .all(let nodes): return nodes.allSatisfy { matches($0, record) }
        case .any(let nodes): return nodes.contains { matches($0, record) }
        case .not(let inner): return !matches(inner, record)
        }
    }
}
