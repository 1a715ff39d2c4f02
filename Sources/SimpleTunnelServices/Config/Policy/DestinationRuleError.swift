/// A policy rule that cannot be parsed: the rule as written and what is wrong with it.
public struct DestinationRuleError: Error, Hashable, CustomStringConvertible {
    public let rule: String
    public let problem: String

    public init(rule: String, problem: String) {
        self.rule = rule
        self.problem = problem
    }

    public var description: String {
        "policy rule \(rule.debugDescription): \(problem)"
    }
}
