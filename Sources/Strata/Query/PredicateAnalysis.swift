import Foundation
import StrataEngine

/// Reads the expression tree of a Foundation `#Predicate` to find conditions the planner
/// can answer from a B-tree: `==`, `<`, `<=`, `>`, `>=` between a key path of the model and
/// a constant, `[…].contains(key path)`, `key path.contains(constant)` on an array field (checked on
/// record bytes), `key path.starts(with: "…")`, `&&` of those, `||` of equalities on one
/// field (an IN), other `||` (a union of each branch's ranges, when a tree narrows every
/// branch), and `!=` (the ranges below and above the value). Everything else (`!`, arithmetic, captured non-constant values) is left to
/// evaluation on each record, which always happens: pushdown only narrows what is read.
enum PredicateAnalysis {
    static func plan<M>(_ predicate: Predicate<M>) -> PlanTerm {
        (predicate.expression as? PlannableExpression)?.planTerm ?? .opaque
    }
}

protocol PlannableExpression {
    var planTerm: PlanTerm { get }
}

/// A key path from the predicate's variable.
protocol KeyPathOperand {
    var modelKeyPath: AnyKeyPath? { get }
}

/// A constant.
protocol ValueOperand {
    var constant: Any { get }
}

extension PredicateExpressions.Variable: KeyPathOperand {
    var modelKeyPath: AnyKeyPath? { \Output.self }
}

extension PredicateExpressions.KeyPath: KeyPathOperand {
    var modelKeyPath: AnyKeyPath? {
        guard let base = (root as? KeyPathOperand)?.modelKeyPath else { return nil }
        return base.appending(path: keyPath)
    }
}

extension PredicateExpressions.Value: ValueOperand {
    var constant: Any { value }
}

/// `(key path, encoded constant)` when one side is a model key path and the other a
/// constant usable in a key; `flipped` when the constant is on the left.
private func operands(_ lhs: Any, _ rhs: Any) -> (path: AnyKeyPath, value: [UInt8], flipped: Bool)? {
    if let path = (lhs as? KeyPathOperand)?.modelKeyPath, let value = (rhs as? ValueOperand)?.constant as? KeyComponent {
        return (path, Key(value).bytes, false)
    }
    if let path = (rhs as? KeyPathOperand)?.modelKeyPath, let value = (lhs as? ValueOperand)?.constant as? KeyComponent {
        return (path, Key(value).bytes, true)
    }
    return nil
}

extension PredicateExpressions.Conjunction: PlannableExpression {
    var planTerm: PlanTerm {
        .and([(lhs as? PlannableExpression)?.planTerm ?? .opaque, (rhs as? PlannableExpression)?.planTerm ?? .opaque])
    }
}

extension PredicateExpressions.Disjunction: PlannableExpression {
    var planTerm: PlanTerm {
        .or((lhs as? PlannableExpression)?.planTerm ?? .opaque, (rhs as? PlannableExpression)?.planTerm ?? .opaque)
    }
}

extension PredicateExpressions.Equal: PlannableExpression {
    var planTerm: PlanTerm {
        guard let (path, value, _) = operands(lhs, rhs) else { return .opaque }
        return .field(path, .equal(toAnyOf: [value]))
    }
}

extension PredicateExpressions.NotEqual: PlannableExpression {
    var planTerm: PlanTerm {
        guard let (path, value, _) = operands(lhs, rhs) else { return .opaque }
        return .notEqual(path, value)
    }
}

extension PredicateExpressions.Comparison: PlannableExpression {
    var planTerm: PlanTerm {
        guard let (path, value, flipped) = operands(lhs, rhs) else { return .opaque }
        var op = self.op
        if flipped {
            switch op {
            case .lessThan: op = .greaterThan
            case .lessThanOrEqual: op = .greaterThanOrEqual
            case .greaterThan: op = .lessThan
            case .greaterThanOrEqual: op = .lessThanOrEqual
            @unknown default: return .opaque
            }
        }
        return .field(path, .comparison(op, value))
    }
}

extension PredicateExpressions.SequenceContains: PlannableExpression {
    var planTerm: PlanTerm {
        // `$0.tags.contains("swift")`: an array field holding a constant.
        if let path = (sequence as? KeyPathOperand)?.modelKeyPath, let value = (element as? ValueOperand)?.constant as? KeyComponent {
            return .element(path, .equal(toAnyOf: [Key(value).bytes]))
        }
        guard let path = (element as? KeyPathOperand)?.modelKeyPath,
              let values = (sequence as? ValueOperand)?.constant as? any Sequence
        else { return .opaque }
        var points: [[UInt8]] = []
        for value in values {
            guard let component = value as? KeyComponent else { return .opaque }
            points.append(Key(component).bytes)
        }
        return .field(path, .equal(toAnyOf: points))
    }
}

extension PredicateExpressions.SequenceStartsWith: PlannableExpression {
    var planTerm: PlanTerm {
        guard let path = (base as? KeyPathOperand)?.modelKeyPath,
              let prefix = (prefix as? ValueOperand)?.constant as? String
        else { return .opaque }
        return .field(path, .prefix(Key().appendingStringPrefix(prefix)))
    }
}
