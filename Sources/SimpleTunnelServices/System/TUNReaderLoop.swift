import CTUNShims
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Logging
import NIOCore

/// The body of a TUN device's reader thread, for a device that several
/// tunnels share (the server's): wait with `poll()` for a packet or the
/// wake-up signal, read every packet that is immediately available (up to a
/// batch, `TUNPacketReads`), and route the batch right here, which hops to
/// each owning event loop once per wake-up. A device that one event loop
/// reads alone (the client's) needs no thread: `TUNLoopReader`.
struct TUNReaderLoop: Sendable {
    let reads: TUNPacketReads
    let wakeFD: CInt
    let route: @Sendable ([TunnelPacket], PacketHandOff) -> Void
    let isClosed: @Sendable () -> Bool
    let record: @Sendable (TUNReadTally) -> Void

    /// How long `poll()` sleeps before re-checking for close (the wake-up fd normally ends it sooner).
    static let pollTimeoutMilliseconds: CInt = 500
    func run() {
        let allocator = ByteBufferAllocator()
        var scratch = allocator.buffer(capacity: TUNPacketReads.readBufferSize)
        let handOff = PacketHandOff.bounded(isClosed: isClosed)
        var malformedLog = LineRateLimiter()
        let logger = reads.logger, name = reads.name
        while !isClosed() {
            var error: CInt = 0
            switch st_poll_readable(reads.deviceFD, wakeFD, Self.pollTimeoutMilliseconds, &error) {
            case 0:
                continue
            case 1:
                break
            case 2:
                return
            case 3:
                // Read once anyway: the errno says why (EBADFD once the interface is deleted).
                var batch = TUNPacketReads.Batch()
                let failure = reads.readAvailable(into: &batch, scratch: &scratch, allocator: allocator, malformedLog: &malformedLog)
                logger.error("TUN reader stopped: the device reported an error", metadata: ["device": "\(name)", "error": "\(failure ?? "no data")"])
                return
            default:
                if error == EINTR { continue }
                logger.error("TUN reader stopped: poll failed", metadata: ["device": "\(name)", "error": "\(errnoText(error))"])
                return
            }
            var batch = TUNPacketReads.Batch()
            let failure = reads.readAvailable(into: &batch, scratch: &scratch, allocator: allocator, malformedLog: &malformedLog)
            record(batch.tally)
            if !batch.packets.isEmpty { route(batch.packets, handOff) }
            if let failure {
                logger.error("TUN reader stopped: read failed", metadata: ["device": "\(name)", "error": "\(failure)"])
                return
            }
        }
    }
}
