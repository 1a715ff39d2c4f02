/// The gate's event is the login the tunnel's handler waits for.
extension TunnelAuthenticatedEvent: TunnelLoginEvent {}
