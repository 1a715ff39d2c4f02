import NIOCore

/// A device that carries IP packets (a TUN device, or an in-memory fake).
public protocol PacketFlow: AnyObject {
    /// Delivers batches of up to 32 whole packets on `eventLoop`.
    func startReading(on eventLoop: EventLoop, _ deliver: @escaping ([ByteBuffer]) -> Void)
    /// One write per packet; callable from any thread.
    func writePackets(_ packets: [ByteBuffer])
    var name: String { get }
    var mtu: Int { get }
    func close()
}
