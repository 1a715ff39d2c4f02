import CTUNShims
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Logging
import NIOCore

/// The body of a TUN device's reader thread: wait with `poll()` for a packet
/// or the wake-up signal, read every packet that is immediately available
/// (one `read()` each, up to a batch), and hop to the event loop once per batch.
struct TUNReaderLoop: Sendable {
    let deviceFD: CInt
    let wakeFD: CInt
    let name: String
    let eventLoop: EventLoop
    let deliver: @Sendable ([ByteBuffer]) -> Void
    let isClosed: @Sendable () -> Bool
    let record: @Sendable ([ByteBuffer]) -> Void
    let logger: Logger

    /// Larger than any IPv4/IPv6 packet without jumbo options, so no MTU truncates a read.
    static let readBufferSize = 65_535
    /// How long `poll()` sleeps before re-checking for close (the wake-up fd normally ends it sooner).
    static let pollTimeoutMilliseconds: CInt = 500
    /// Batches handed to the event loop but not yet delivered. Beyond this the
    /// reader stops reading and lets the kernel's queue (and then its drops) take over.
    static let maximumBatchesInFlight = 64

    func run() {
        var scratch = [UInt8](repeating: 0, count: Self.readBufferSize)
        let allocator = ByteBufferAllocator()
        let inFlight = DispatchSemaphore(value: Self.maximumBatchesInFlight)
        while !isClosed() {
            var error: CInt = 0
            switch st_poll_readable(deviceFD, wakeFD, Self.pollTimeoutMilliseconds, &error) {
            case 0:
                continue
            case 1:
                break
            case 2:
                return
            case 3:
                // Read once anyway: the errno says why (EBADFD once the interface is deleted).
                let (_, failure) = readAvailable(into: &scratch, allocator: allocator)
                logger.error("TUN reader stopped: the device reported an error", metadata: ["device": "\(name)", "error": "\(failure ?? "no data")"])
                return
            default:
                if error == EINTR { continue }
                logger.error("TUN reader stopped: poll failed", metadata: ["device": "\(name)", "error": "\(errnoText(error))"])
                return
            }
            let (batch, failure) = readAvailable(into: &scratch, allocator: allocator)
            if !batch.isEmpty {
                guard waitForRoom(inFlight) else { return }
                record(batch)
                let deliver = self.deliver
                eventLoop.execute {
                    deliver(batch)
                    inFlight.signal()
                }
            }
            if let failure {
                logger.error("TUN reader stopped: read failed", metadata: ["device": "\(name)", "error": "\(failure)"])
                return
            }
        }
    }

    /// Reads packets until none is waiting or the batch is full. A read error
    /// other than "nothing to read" (the interface was deleted, say) ends the reader.
    private func readAvailable(into scratch: inout [UInt8], allocator: ByteBufferAllocator) -> ([ByteBuffer], String?) {
        var batch: [ByteBuffer] = []
        while batch.count < PacketFlowLimits.maximumBatchSize {
            let count = scratch.withUnsafeMutableBytes { Glibc.read(deviceFD, $0.baseAddress, $0.count) }
            if count > 0 {
                batch.append(allocator.buffer(bytes: scratch[0..<count]))
                continue
            }
            if count == 0 { return (batch, "end of file") }
            let code = errno
            switch code {
            case EINTR: continue
            case EAGAIN: return (batch, nil)
            default: return (batch, errnoText(code))
            }
        }
        return (batch, nil)
    }

    /// Waits for the event loop to catch up, giving up when the device closes.
    private func waitForRoom(_ inFlight: DispatchSemaphore) -> Bool {
        while inFlight.wait(timeout: .now() + .milliseconds(100)) == .timedOut {
            if isClosed() { return false }
        }
        return true
    }
}
