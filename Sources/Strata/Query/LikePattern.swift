/// A LIKE pattern, compiled once and matched in time linear in the text for each star (no
/// backtracking blow-up on patterns such as `%a%a%a%b`): the one matcher behind
/// `Filter.like`, ActiveRecord's `.like` and storedump's `LIKE`/`ILIKE`.
///
/// **Case**: matching is case-sensitive by default, like Swift's `==` and `hasPrefix` and
/// like PostgreSQL's `LIKE`; SQLite's `LIKE` folds ASCII case instead. Pass
/// `caseSensitive: false` for that (here every letter folds, through `lowercased()`).
///
/// ```swift
/// LikePattern("A%").matches("Ada")                          // true
/// LikePattern("a%", caseSensitive: false).matches("Ada")    // true
/// LikePattern("*.swift", wildcards: .glob).matches("main.swift")  // true
/// ```
public struct LikePattern: Sendable, Hashable {
    /// Which characters are wildcards.
    public enum Wildcards: Sendable, Hashable {
        /// SQL's: `%` matches any run of characters, `_` exactly one.
        case sql
        /// storedump's: `*` matches any run of characters, `?` exactly one.
        case glob
    }

    private enum Token: Sendable, Hashable { case literal(Character), any, one }

    private let tokens: [Token]
    /// Whether case matters.
    public let caseSensitive: Bool

    /// Compiles `pattern` with the given wildcards.
    ///
    /// - Parameters:
    ///   - pattern: The pattern; characters other than the wildcards match themselves.
    ///   - wildcards: `.sql` (`%` and `_`, the default) or `.glob` (`*` and `?`).
    ///   - caseSensitive: Whether letters must match in case (`true` by default).
    public init(_ pattern: String, wildcards: Wildcards = .sql, caseSensitive: Bool = true) {
        let (any, one): (Character, Character) = wildcards == .sql ? ("%", "_") : ("*", "?")
        self.caseSensitive = caseSensitive
        tokens = (caseSensitive ? pattern : pattern.lowercased()).map { $0 == any ? .any : $0 == one ? .one : .literal($0) }
    }

    /// The text before the pattern's only wildcard, when the pattern is a literal prefix
    /// followed by "any run" and matching is case-sensitive: an index on the field answers it.
    public var literalPrefix: String? {
        guard caseSensitive, tokens.last == .any else { return nil }
        var prefix = ""
        for token in tokens.dropLast() {
            guard case .literal(let c) = token else { return nil }
            prefix.append(c)
        }
        return prefix
    }

    /// Whether all of `text` matches the pattern.
    ///
    /// - Parameter text: The text to test.
    /// - Returns: True when the pattern matches the whole text.
    public func matches(_ text: String) -> Bool {
        let characters = Array(caseSensitive ? text : text.lowercased())
        // Greedy with one remembered star: on a mismatch, let the last star absorb one more
        // character. A later star never needs an earlier one to take back characters, so
        // this is exact.
        var t = 0, p = 0, star = -1, resume = 0
        while t < characters.count {
            if p < tokens.count, tokens[p] == .one || tokens[p] == .literal(characters[t]) {
                t += 1
                p += 1
            } else if p < tokens.count, tokens[p] == .any {
                star = p
                resume = t
                p += 1
            } else if star >= 0 {
                p = star + 1
                resume += 1
                t = resume
            } else {
                return false
            }
        }
        while p < tokens.count, tokens[p] == .any { p += 1 }
        return p == tokens.count
    }
}
