import Foundation

/// The server's control socket (`ControlSocketServer`): a request names its
/// `type` (`status`, `kick` with a `login`, `reload`, `usage` with an optional
/// `since` day); the answer says `ok` and carries the status, how many tunnels
/// were ended, what a reload did, each login's usage, or an `error`.
public enum ServerControlProtocol {
    public struct Request: Codable, Sendable, Equatable {
        public var type: String
        public var login: String?
        /// `usage`: the first day counted, `YYYY-MM-DD` (UTC).
        public var since: String?

        public init(type: String, login: String? = nil, since: String? = nil) {
            self.type = type
            self.login = login
            self.since = since
        }
    }

    public struct Response: Codable, Sendable, Equatable {
        public var ok: Bool
        public var status: TunnelServerStatus?
        /// Tunnels a `kick` ended.
        public var ended: Int?
        /// What a `reload` did, part by part.
        public var reload: ServerReloadReport?
        /// Each login's bytes and last-seen time (`usage`).
        public var usage: LoginUsageReport?
        public var error: String?

        public init(
            ok: Bool, status: TunnelServerStatus? = nil, ended: Int? = nil, reload: ServerReloadReport? = nil, usage: LoginUsageReport? = nil,
            error: String? = nil
        ) {
            self.ok = ok
            self.usage = usage
            self.status = status
            self.ended = ended
            self.reload = reload
            self.error = error
        }
    }

    /// Where a running server listens unless told otherwise: /run/simpletunnel
    /// for root (a system service), else the user's runtime folder.
    public static func defaultPath(
        environment: [String: String] = ProcessInfo.processInfo.environment, isRoot: Bool = geteuid() == 0
    ) -> String {
        (isRoot ? "/run/simpletunnel" : ControlFraming.userRuntimeFolder(environment: environment)) + "/server.sock"
    }
}
