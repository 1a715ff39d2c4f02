import FuzzDriver
import Glibc
import NIOCore
import SimpleTunnelServices

/// What decoding a frame may make the server hold, the frame's bytes included.
let decodingLimit = 1024 * 1024

/// FUZZ_REPORT_HEAP=1 prints what each frame held (run the binary on chosen files).
let reportsHeap = getenv("FUZZ_REPORT_HEAP") != nil

/// Bytes from a peer's tunnel: frames, their property lists, their messages.
/// Decoding a frame may not make the process hold more than a mebibyte with
/// the bytes read (PROTOCOL.md B5), a message that decodes must encode and
/// decode back to itself, and the direct `packets` reader must agree with the
/// general one.
func fuzzFrameDecoder(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    var stream = ByteBuffer(bytes: UnsafeBufferPointer(start: data, count: size))
    while true {
        let frameLength = stream.readableBytes
        var payload: ByteBuffer?
        let (decoded, held) = HeapMeter.measure { () -> TunnelMessage?? in
            do {
                payload = try TunnelFrameDecoder.nextPayload(from: &stream)
                guard let payload else { return nil }
                return .some(try? TunnelFrame.decodeMessage(payload: payload))
            } catch {
                return nil  // a bad length ends the tunnel
            }
        }
        // The direct `packets` reader reads nothing the general reader would refuse or read otherwise.
        if let payload, let outcome = decoded, !agree(outcome, try? TunnelFrame.decodeMessageThroughPropertyList(payload: payload)) {
            fatalError("the direct and the general reader disagree on \(String(describing: outcome))")
        }
        if reportsHeap, let outcome = decoded {
            print("frame of \(frameLength) bytes: decoding held \(held) bytes more (\(outcome == nil ? "refused" : "decoded"))")
        }
        if frameLength + held > decodingLimit {
            fatalError("decoding a frame held \(held) bytes beyond the \(frameLength) read")
        }
        guard let outcome = decoded else { return 0 }
        guard let message = outcome else { continue }
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

/// Whether two decodings of one frame agree (a NaN, never equal to itself, aside).
func agree(_ first: TunnelMessage?, _ second: TunnelMessage?) -> Bool {
    switch (first, second) {
    case (nil, nil): return true
    case let (first?, second?): return first == second || first.propertyListEntries.contains { $0.value.containsNaN }
    default: return false
    }
}
