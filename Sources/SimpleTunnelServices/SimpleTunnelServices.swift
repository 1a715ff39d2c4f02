// SimpleTunnelServices: the SimpleTunnel protocol and tunnel engine.
// See ARCHITECTURE.md for the layers (Wire, TLS, Multiplexer, Endpoints, Config).

// The wire layer is its own module; the executables and other users of this
// library see it through here.
@_exported import SimpleTunnelWire
