/// What a client may send after its login and before the answer, held
/// until the answer: our client pipelines one `fetchConfiguration`; a few
/// small messages are allowed for others, and more means the peer is not
/// waiting for the answer (the tunnel closes), so an unauthenticated peer
/// cannot make the server hold much while its password is checked.
struct PendingLoginMessages {
    static let maximumCount = 4
    /// Counted as `estimatedSize` does.
    static let maximumBytes = 16 * 1024
    /// What any message costs beyond its variable parts.
    static let baseSize = 64

    private(set) var messages: [TunnelInboundMessage] = []
    private(set) var bytes = 0

    /// Holds `message`; false, holding nothing more, when that would exceed the budget.
    mutating func hold(_ message: TunnelInboundMessage) -> Bool {
        let size = Self.estimatedSize(of: message)
        guard messages.count < Self.maximumCount, size <= Self.maximumBytes - bytes else { return false }
        messages.append(message)
        bytes += size
        return true
    }

    /// Bytes the message's variable parts hold, plus `baseSize`. A configuration
    /// dictionary is never something a client needs to send before its login is answered,
    /// and its decoded size is hard to bound, so it counts as over budget.
    static func estimatedSize(of inbound: TunnelInboundMessage) -> Int {
        guard case .message(let message) = inbound else { return baseSize }
        switch message {
        case .data(_, let payload, let endpoint):
            return baseSize + payload.readableBytes + (endpoint?.host.utf8.count ?? 0)
        case .dns(_, let packet, let source):
            return baseSize + packet.readableBytes + (source?.utf8.count ?? 0)
        case .packets(_, let packets):
            return baseSize + packets.reduce(0) { $0 + baseSize + $1.bytes.readableBytes }
        case .open(_, .tcp(let endpoint)):
            return baseSize + endpoint.host.utf8.count
        case .authenticate(let login, let password, _):
            return baseSize + login.utf8.count + password.utf8.count
        case .openResult(_, _, .some, _), .fetchConfiguration(_, .some):
            return maximumBytes + 1
        case .open, .openResult, .fetchConfiguration, .suspend, .resume, .close, .authenticateResult:
            return baseSize
        }
    }
}
