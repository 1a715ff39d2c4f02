import SimpleTunnelServices

/// An error as this program's user reads it: where the library speaks of what
/// the server wanted, name the options that give it.
func userFacing(_ error: Error) -> String {
    guard error is TunnelClosedError else { return "\(error)" }
    return "the server closed the tunnel before replying (a server with --users needs --user; one with --client-ca needs --cert and --key)"
}
