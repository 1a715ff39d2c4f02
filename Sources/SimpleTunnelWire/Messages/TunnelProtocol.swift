// The protocol's vocabulary, named as in Apple's SimpleTunnel sample so that
// iOS developers recognise it (PROTOCOL.md A2, A3, B2).

/// The `command` of a message.
public enum TunnelCommand: Int, Sendable, Hashable, CaseIterable {
    case data = 1
    case suspend = 2
    case resume = 3
    case close = 4
    case dns = 5
    case open = 6
    case openResult = 7
    case packets = 8
    case fetchConfiguration = 9
    case authenticate = 10
    case authenticateResult = 11
}

/// The keys of a message dictionary.
public enum TunnelMessageKey: String, Sendable, Hashable, CaseIterable {
    case identifier = "identifier"
    case command = "command"
    case data = "data"
    case closeDirection = "close-type"
    case dnsPacket = "dns-packet"
    case dnsPacketSource = "dns-packet-source"
    case resultCode = "result-code"
    case tunnelType = "tunnel-type"
    case host = "host"
    case port = "port"
    case configuration = "configuration"
    case packets = "packets"
    case protocols = "protocols"
    case appProxyFlowType = "app-proxy-flow-type"
    case login = "login"
    case password = "password"
    /// Ours (PROTOCOL.md B6): why an `open` failed, beside a non-zero `result-code`.
    case resultDetail = "result-detail"
    /// Ours (PROTOCOL.md B8): an IP `open` offering TCP super-packets.
    case superPackets = "super-packets"
    /// Ours (PROTOCOL.md B8): beside `packets`, each one's segment size (0: an ordinary packet).
    case segmentSizes = "segment-sizes"
    /// Ours (PROTOCOL.md B2): an `authenticate` whose sender takes `authenticateResult` 4 as "try again later".
    case retryLater = "retry-later"
}

/// `tunnel-type`: whether a logical connection carries app flows or IP packets.
public enum TunnelLayer: Int, Sendable, Hashable, CaseIterable {
    case app = 0
    case ip = 1
}

/// `app-proxy-flow-type` of an app-layer connection.
public enum AppProxyFlowKind: Int, Sendable, Hashable, CaseIterable {
    case tcp = 1
    case udp = 3
}

/// `close-type`: which direction of a logical connection to close.
public enum TunnelConnectionCloseDirection: Int, Sendable, Hashable, CaseIterable {
    case none = 1
    case read = 2
    case write = 3
    case all = 4
}

/// `result-code` of `openResult` and `authenticateResult`.
public enum TunnelConnectionOpenResult: Int, Sendable, Hashable, CaseIterable {
    case success = 0
    case invalidParameter = 1
    case noSuchHost = 2
    case refused = 3
    case timeout = 4
    case internalError = 5
}

/// `result-detail` (PROTOCOL.md B6): what a non-zero `openResult` means more
/// precisely, for a SOCKS client's reply. Apple's peers neither send nor read it.
public enum TunnelOpenResultDetail: Int, Sendable, Hashable, CaseIterable {
    case notAllowedByPolicy = 1
    case networkUnreachable = 2
    case hostUnreachable = 3
}

/// `result-detail` in an `authenticateResult` 3 (PROTOCOL.md B2): why the
/// login was refused when its password was right. Only our peers send it.
public enum TunnelLoginRefusalDetail: Int, Sendable, Hashable, CaseIterable {
    case expired = 1
    case disabled = 2
}

/// A logical connection's identifier, chosen by the client. Apple's app proxy
/// uses a hash, so any signed 64-bit value occurs, negative ones included.
public typealias TunnelConnectionIdentifier = Int64

/// Sizes fixed by the protocol.
public enum TunnelWireLimits {
    /// Largest frame, length prefix included (PROTOCOL.md A1).
    public static let maximumFrameLength = 131_072
    /// Smallest frame: the prefix and at least one payload byte.
    public static let minimumFrameLength = 5
    /// Bytes of the length prefix, which counts itself.
    public static let lengthPrefixSize = 4
    /// Packets a sender puts in one `packets` message (PROTOCOL.md A4).
    public static let maximumPacketsPerMessage = 32
    /// Longest host name accepted in `host`.
    public static let maximumHostLength = 253
    /// Longest super-packet (PROTOCOL.md B8): what an IPv4 total length can say.
    public static let maximumSuperPacketLength = 65_535
}
