import Foundation
import NIOCore

/// The client's control socket speaks length-prefixed JSON: a 4-byte
/// big-endian length, then one JSON object. A request names its `type`
/// (`status`, `stats`, `stop`); the answer says `ok` and carries the status
/// or an `error`.
public enum ControlProtocol {
    /// Largest request or response accepted.
    public static var maximumMessageLength: Int { ControlFraming.maximumMessageLength }

    public struct Request: Codable, Sendable, Equatable {
        public var type: String

        public init(type: String) {
            self.type = type
        }
    }

    public struct Response: Codable, Sendable, Equatable {
        public var ok: Bool
        public var status: TunnelClientStatus?
        public var error: String?

        public init(ok: Bool, status: TunnelClientStatus? = nil, error: String? = nil) {
            self.ok = ok
            self.status = status
            self.error = error
        }
    }

    /// Where the running client listens unless told otherwise: under
    /// `$XDG_RUNTIME_DIR`, else, for root (sudo drops that variable), in
    /// /run, which only root may write to: /tmp/simpletunnel-0 could be made
    /// first by anyone. Not /run/simpletunnel: that is the server unit's
    /// RuntimeDirectory=, given to its user and removed when it stops.
    /// Other users get a folder of their own in /tmp.
    public static func defaultPath(environment: [String: String] = ProcessInfo.processInfo.environment, userID: uid_t = getuid()) -> String {
        if environment["XDG_RUNTIME_DIR"] == nil, userID == 0 { return rootFolder + "/client.sock" }
        return ControlFraming.userRuntimeFolder(environment: environment, userID: userID) + "/client.sock"
    }

    /// Root's client's folder when `$XDG_RUNTIME_DIR` is not set.
    public static let rootFolder = "/run/simpletunnel-client"

    static func frame(_ payload: Data) -> ByteBuffer {
        ControlFraming.frame(payload)
    }
}

/// A client's request that got no answer, with why and what to do.
public enum ControlClientError: Error, CustomStringConvertible {
    case unreachable(ControlSocketDiagnosis)

    public var description: String {
        switch self {
        case .unreachable(let diagnosis): return diagnosis.description
        }
    }
}
