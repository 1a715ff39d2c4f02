import FuzzDriver
import NIOCore
import SimpleTunnelServices

/// Bytes from a peer's tunnel: frames, their property lists, their messages.
/// A message that decodes must encode and decode back to itself.
func fuzzFrameDecoder(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    var stream = ByteBuffer(bytes: UnsafeBufferPointer(start: data, count: size))
    while true {
        let payload: ByteBuffer
        do {
            guard let next = try TunnelFrameDecoder.nextPayload(from: &stream) else { return 0 }
            payload = next
        } catch {
            return 0  // a bad length ends the tunnel
        }
        guard let message = try? TunnelFrame.decodeMessage(payload: payload) else { continue }
        var frame = ByteBuffer()
        // Too large to send back (e.g. a short key grew into a long one) is allowed.
        guard (try? TunnelFrame.encode(message, into: &frame)) != nil else { continue }
        guard let again = try? TunnelFrameDecoder.nextPayload(from: &frame),
              let decoded = try? TunnelFrame.decodeMessage(payload: again),
              decoded == message || message.propertyListEntries.contains(where: { $0.value.containsNaN })
        else {
            fatalError("\(message) does not survive encoding and decoding")
        }
    }
}
