import NIOCore
@testable import SimpleTunnelServices

/// A sink that hears nothing: for an endpoint whose reports a test does not read.
final class SilentFlowSink: FlowEventSink, Sendable {
    static let shared = SilentFlowSink()
    func flow(_ identifier: TunnelConnectionIdentifier, didRead data: ByteBuffer, from source: TunnelEndpoint?) {}
    func flowDidReadEndOfFile(_ identifier: TunnelConnectionIdentifier) {}
    func flow(_ identifier: TunnelConnectionIdentifier, writabilityChanged isWritable: Bool) {}
    func flowDidClose(_ identifier: TunnelConnectionIdentifier) {}
    func flow(_ identifier: TunnelConnectionIdentifier, didReadPackets packets: [TunnelPacket]) {}
}

extension FlowReporter {
    /// For an endpoint whose reports no test reads.
    static var unheard: FlowReporter { FlowReporter(identifier: 0, sink: SilentFlowSink.shared) }
}
