/// The verdict on one destination. A refusal becomes `openResult` 3
/// (PROTOCOL.md A4); its reason, which names the deciding rule, goes to the log.
public enum PolicyDecision: Sendable, Hashable {
    case allowed
    case refused(reason: String)

    public var isAllowed: Bool {
        if case .allowed = self { return true }
        return false
    }

    /// Why the destination is refused; nil when it is allowed.
    public var refusalReason: String? {
        if case .refused(let reason) = self { return reason }
        return nil
    }
}
