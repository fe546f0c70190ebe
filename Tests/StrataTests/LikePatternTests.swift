import Strata
import Testing

/// The one LIKE matcher: SQL and glob wildcards, case-sensitive by default.
@Suite("LIKE patterns")
struct LikePatternTests {
    @Test("% matches any run and _ exactly one character")
    func sqlWildcards() {
        #expect(LikePattern("A%").matches("Ada") && LikePattern("A%").matches("A"))
        #expect(LikePattern("%r_a%").matches("Barbara") && !LikePattern("%r_a%").matches("Ada"))
        #expect(LikePattern("_d_").matches("Ada") && !LikePattern("_d_").matches("Adam"))
        #expect(LikePattern("").matches("") && !LikePattern("").matches("a"))
        #expect(LikePattern("%").matches(""))
    }

    @Test("matching is case-sensitive by default; caseSensitive: false folds case")
    func caseSensitivity() {
        #expect(!LikePattern("a%").matches("Ada"))
        #expect(LikePattern("a%", caseSensitive: false).matches("Ada"))
        #expect(LikePattern("%@EXAMPLE.COM", caseSensitive: false).matches("ada@example.com"))
        #expect(LikePattern("ÉCOLE%", caseSensitive: false).matches("école normale"))
    }

    @Test("glob wildcards are * and ?, and % is then a literal")
    func globWildcards() {
        #expect(LikePattern("*@example.?om", wildcards: .glob).matches("ada@example.com"))
        #expect(LikePattern("100%", wildcards: .glob).matches("100%") && !LikePattern("100%", wildcards: .glob).matches("1000"))
    }

    @Test("a literal prefix and a final % is offered to an index, only when case-sensitive")
    func literalPrefix() {
        #expect(LikePattern("Ad%").literalPrefix == "Ad")
        #expect(LikePattern("A_%").literalPrefix == nil && LikePattern("%a").literalPrefix == nil)
        #expect(LikePattern("Ad%", caseSensitive: false).literalPrefix == nil)
    }

    @Test("many stars against a long text that does not match finish at once (no backtracking blow-up)")
    func noBlowUp() {
        let text = String(repeating: "a", count: 20_000)
        #expect(!LikePattern("%a%a%a%a%a%a%a%a%b").matches(text))
        #expect(LikePattern("%a%a%a%a%a%a%a%a%").matches(text))
    }
}
