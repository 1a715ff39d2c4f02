import NIOCore

/// Where a flow's local end reports, and as which flow. The multiplexer makes
/// it when it enters the flow, before the endpoint exists, and the endpoint
/// is made with it: no endpoint is ever without its identifier or its sink.
/// The sink is held weakly: a tunnel that is gone hears nothing.
public struct FlowReporter {
    public let identifier: TunnelConnectionIdentifier
    public private(set) weak var sink: FlowEventSink?

    public init(identifier: TunnelConnectionIdentifier, sink: FlowEventSink) {
        self.identifier = identifier
        self.sink = sink
    }

    public func didRead(_ data: ByteBuffer, from source: TunnelEndpoint?) {
        sink?.flow(identifier, didRead: data, from: source)
    }

    public func didReadPackets(_ packets: [TunnelPacket]) {
        sink?.flow(identifier, didReadPackets: packets)
    }

    public func didReadEndOfFile() {
        sink?.flowDidReadEndOfFile(identifier)
    }

    public func writabilityChanged(_ isWritable: Bool) {
        sink?.flow(identifier, writabilityChanged: isWritable)
    }

    public func didClose() {
        sink?.flowDidClose(identifier)
    }
}
