import NIOCore

/// Which destinations clients may reach through the tunnel (TCP flows, UDP
/// datagrams), from the `Server.Policy` `Allow` and `Deny` rule lists.
///
/// ## Semantics
/// A destination is a requested host (a name or an IP literal), the address
/// it resolves to, and a port. A rule matches it when its ports include the
/// port and its target matches: name rules (`db.internal`, `*.example.com`)
/// compare against the requested name, address rules (`10.0.0.0/8`,
/// `[fd00::/8]`) against the address, `*` against anything.
///
/// - If any `Deny` rule matches the name or the address, it is refused.
/// - Otherwise, if `Allow` is empty, it is allowed.
/// - Otherwise some `Allow` rule must match the name or the address.
///
/// So `Allow 10.0.0.0/8` lets `db.internal` through only if it resolves into
/// 10/8; `Allow db.internal` lets it through whatever it resolves to, unless
/// that address is denied (`Deny 10.0.0.0/8` refuses `db.internal` when it
/// resolves to 10.1.2.3). IPv4-mapped IPv6 addresses (`::ffff:10.1.2.3`) are
/// judged as the IPv4 address they carry; name rules never match an IP literal.
/// An address that reaches loopback (0.0.0.0/8, `::`) is judged both as
/// itself and as that loopback address (`IPAddress.loopbackAlias`).
///
/// ## Default denials
/// `defaultDenyRules` (on a public listener, `publicListenerDefaultDenials`)
/// are checked after `Deny` and before `Allow`: a destination they match is
/// refused unless an `Allow` *address* rule matches it too. Name rules and
/// `*` never open them, since a name can be made to point anywhere.
///
/// ## Two stages
/// Because a name can resolve to a forbidden address, callers ask twice:
/// 1. `decision(forHost:port:)` before resolving, to refuse early what the
///    name alone already settles (a denied name, or an allow list that no
///    name rule matches and no address rule could, for this port).
/// 2. `decision(forAddress:port:requestedHost:)` for every address actually
///    connected or sent to. This is the verdict that counts, and it must be
///    asked even for IP-literal hosts: the resolver also accepts forms such as
///    `127.1` that stage 1 cannot recognise as addresses.
public struct DestinationPolicy: Sendable, Hashable {
    public var allowRules: [DestinationRule]
    public var denyRules: [DestinationRule]
    /// Refused unless an Allow address rule opens them (see "Default denials").
    public var defaultDenyRules: [DestinationRule]

    /// No rules: everything is allowed.
    public static let allowAll = DestinationPolicy(allowRules: [], denyRules: [])

    public init(allowRules: [DestinationRule], denyRules: [DestinationRule], defaultDenyRules: [DestinationRule] = []) {
        self.allowRules = allowRules
        self.denyRules = denyRules
        self.defaultDenyRules = defaultDenyRules
    }

    /// Parses both lists; the first bad rule is reported.
    public init(allow: [String], deny: [String]) throws(DestinationRuleError) {
        var allowRules: [DestinationRule] = []
        for text in allow { allowRules.append(try DestinationRule(parsing: text)) }
        var denyRules: [DestinationRule] = []
        for text in deny { denyRules.append(try DestinationRule(parsing: text)) }
        self.init(allowRules: allowRules, denyRules: denyRules)
    }

    /// Stage 1, before resolution. A host that is an IP literal (IPv6 with or
    /// without brackets) is judged completely here, by address.
    public func decision(forHost host: String, port: Int) -> PolicyDecision {
        // The decoder already refuses these; a host that reaches here otherwise must not mean less to the resolver than to the rules.
        if let problem = TunnelHostSyntax.problem(with: host) {
            return .refused(reason: "\(PeerText.quoted(host, limit: 64)) is not a DNS name or an IP literal: \(problem)")
        }
        if let address = Self.literalAddress(host) {
            return decision(forAddress: address, port: port, requestedHost: host)
        }
        let name = HostName.normalised(host)
        let destination = "\(name) port \(port)"
        if let rule = denyRules.first(where: { $0.matches(hostName: name, port: port) }) {
            return .refused(reason: "Deny rule \(rule.text.debugDescription) matches \(destination)")
        }
        if allowRules.isEmpty || allowRules.contains(where: { $0.matches(hostName: name, port: port) }) {
            return .allowed
        }
        // An address rule may still allow it once we know where the name points.
        if allowRules.contains(where: { $0.isAddressRule && $0.ports.contains(port) }) {
            return .allowed
        }
        return .refused(reason: "no Allow rule matches \(destination)")
    }

    /// Stage 2, for each address `requestedHost` resolved to: the final verdict.
    public func decision(forAddress address: IPAddress, port: Int, requestedHost: String) -> PolicyDecision {
        if let problem = TunnelHostSyntax.problem(with: requestedHost) {
            return .refused(reason: "\(PeerText.quoted(requestedHost, limit: 64)) is not a DNS name or an IP literal: \(problem)")
        }
        let address = address.unmapped
        let alias = address.loopbackAlias
        let name = Self.literalAddress(requestedHost) == nil ? HostName.normalised(requestedHost) : nil
        func matchesAddress(_ rule: DestinationRule) -> Bool {
            rule.matches(address: address, port: port) || (alias.map { rule.matches(address: $0, port: port) } ?? false)
        }
        func matches(_ rule: DestinationRule) -> Bool {
            matchesAddress(rule) || (name.map { rule.matches(hostName: $0, port: port) } ?? false)
        }
        // Built only for a refusal: UDP asks once per datagram.
        func destination() -> String {
            let reached = alias.map { " (which reaches \($0))" } ?? ""
            return (name.map { "\(address) port \(port) (resolved from \($0))" } ?? "\(address) port \(port)") + reached
        }
        if let rule = denyRules.first(where: matches) {
            return .refused(reason: "Deny rule \(rule.text.debugDescription) matches \(destination())")
        }
        if let rule = defaultDenyRules.first(where: matchesAddress),
           !allowRules.contains(where: { $0.isAddressRule && matchesAddress($0) }) {
            let example = TunnelEndpoint(host: address.description, port: port)
            let keepOpen = allowRules.isEmpty ? " (with --allow '*' beside it, since any Allow rule makes the policy an allow list)" : ""
            return .refused(reason: "\(destination()) is in \(rule.text), refused by default on a public listener; "
                + "an Allow address rule such as --allow \(example) opens it\(keepOpen)")
        }
        if allowRules.isEmpty || allowRules.contains(where: matches) {
            return .allowed
        }
        return .refused(reason: "no Allow rule matches \(destination())")
    }

    /// Whether an Allow *address* rule names `address` on `port`: what opens
    /// a default denial (names and `*` never do).
    public func opens(address: IPAddress, port: Int) -> Bool {
        let address = address.unmapped
        return allowRules.contains { $0.isAddressRule && $0.matches(address: address, port: port) }
    }

    /// Stage 2 for a resolved socket address, whose port is the destination port.
    /// A Unix-domain address is never a tunnel destination and is refused.
    public func decision(for socketAddress: SocketAddress, requestedHost: String) -> PolicyDecision {
        guard let address = IPAddress(socketAddress), let port = socketAddress.port else {
            return .refused(reason: "\(socketAddress) is not an IP destination")
        }
        return decision(forAddress: address, port: port, requestedHost: requestedHost)
    }

    /// The address a host string spells literally (`10.1.2.3`, `::1`, `[::1]`), if any.
    private static func literalAddress(_ host: String) -> IPAddress? {
        let bare = TunnelEndpoint.unbracketed(host)
        // Only an IPv6 address may be written in brackets.
        return bare.utf8.count == host.utf8.count ? IPAddress(host) : IPv6Address(bare).map(IPAddress.v6)
    }
}
