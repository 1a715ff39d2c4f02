// SimpleTunnelServices: the SimpleTunnel protocol and tunnel engine.
// See ARCHITECTURE.md for the layers (Wire, TLS, Multiplexer, Endpoints, Config).
