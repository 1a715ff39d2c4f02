/// REP of a SOCKS5 reply (RFC 1928 §6).
public enum SOCKS5ReplyCode: UInt8, Sendable, Hashable, CaseIterable {
    case succeeded = 0x00
    case generalFailure = 0x01
    case connectionNotAllowed = 0x02
    case networkUnreachable = 0x03
    case hostUnreachable = 0x04
    case connectionRefused = 0x05
    case ttlExpired = 0x06
    case commandNotSupported = 0x07
    case addressTypeNotSupported = 0x08
}

extension SOCKS5ReplyCode {
    /// The reply that tells a SOCKS client how the tunnel server's attempt to
    /// open its connection ended. SOCKS5 has no "timed out", so a timeout is
    /// reported as TTL expired, which clients show as a timeout-like failure.
    public init(_ result: TunnelConnectionOpenResult) {
        switch result {
        case .success: self = .succeeded
        case .invalidParameter: self = .generalFailure
        case .noSuchHost: self = .hostUnreachable
        case .refused: self = .connectionRefused
        case .timeout: self = .ttlExpired
        case .internalError: self = .generalFailure
        }
    }

    /// As above, refined by our server's `result-detail` (PROTOCOL.md B6):
    /// refused by policy is 2, not 5; an unreachable network or host is 3 or 4.
    public init(_ result: TunnelConnectionOpenResult, detail: TunnelOpenResultDetail?) {
        switch detail {
        case .notAllowedByPolicy: self = .connectionNotAllowed
        case .networkUnreachable: self = .networkUnreachable
        case .hostUnreachable: self = .hostUnreachable
        case nil: self.init(result)
        }
    }
}
