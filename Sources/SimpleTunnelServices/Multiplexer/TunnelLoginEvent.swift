/// A user inbound event saying who logged in on this tunnel, sent by whatever
/// checks logins (the server's gate). `TunnelChannelHandler` counts it as the
/// first message and names the login on every later log line.
public protocol TunnelLoginEvent {
    var login: String { get }
}
