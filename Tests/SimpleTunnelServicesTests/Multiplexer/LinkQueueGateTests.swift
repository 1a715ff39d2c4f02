import Logging
import NIOCore
import NIOEmbedded
import Testing
@testable import SimpleTunnelServices

/// On a slow link the tunnel hands down no more than its room and waits for
/// the queue in front of the link to drain before it hands down more; a fast
/// link is not gated.
@Suite("Link queue gate")
struct LinkQueueGateTests {
    static let maximumRoom = LinkPace.Policy().maximumBytes

    /// The sizes and rate a reading of the fixture gives.
    static func pace(_ bytes: [UInt8]) throws -> (LinkPace.Sizes, UInt64) {
        var pace = LinkPace()
        pace.update(try #require(TCPInfoReading(bytes: bytes)), at: .uptimeNanoseconds(1_000_000_000))
        return (pace.sizes, try #require(pace.rate))
    }

    /// A room of `room` bytes on a link of `rate` bytes a second (the gate's
    /// arithmetic, apart from the horizon `LinkPace` sizes rooms with).
    static func sized(room: Int, rate: UInt64) -> (LinkPace.Sizes, UInt64) {
        (LinkPace.Sizes(room: room, segmentSize: 1448, maximumRoom: maximumRoom), rate)
    }

    @Test func aSlowLinksGateLetsTheRoomLessWhatWaitsThenWaitsForTheLinkToDrainHalfOfIt() throws {
        let (sizes, rate) = Self.sized(room: 6 * 1024, rate: 1_250_000)
        var gate = LinkQueueGate()
        #expect(gate.isOpen)
        // Sized to a slow link, it starts closed: the first write looks first.
        gate.resized(to: sizes, maximumRoom: Self.maximumRoom)
        #expect(!gate.isOpen)
        // 1000 bytes wait: the rest of the room may go.
        #expect(gate.looked(queued: 1_000, sizes: sizes, maximumRoom: Self.maximumRoom, rate: rate) == .write(6 * 1024 - 1_000))
        #expect(gate.allowance == 6 * 1024 - 1_000)
        gate.handedDown(3_000)
        #expect(gate.isOpen)
        gate.handedDown(2_144)
        #expect(!gate.isOpen)
        // 5000 bytes wait, 1928 over half the room: 1.54 ms of 1.25 MB/s.
        let decision = gate.looked(queued: 5_000, sizes: sizes, maximumRoom: Self.maximumRoom, rate: rate)
        #expect(decision == .wait(.nanoseconds(1_542_400)))
        #expect(!gate.isOpen)
        // Just over half: no sooner than a timer fires reliably; far over: a look at least every 20 ms.
        #expect(gate.looked(queued: 3_100, sizes: sizes, maximumRoom: Self.maximumRoom, rate: rate) == .wait(LinkQueueGate.shortestWait))
        #expect(gate.looked(queued: 200_000, sizes: sizes, maximumRoom: Self.maximumRoom, rate: rate) == .wait(LinkQueueGate.longestWait))
        // Drained to half the room: half of it may go.
        #expect(gate.looked(queued: 3_072, sizes: sizes, maximumRoom: Self.maximumRoom, rate: rate) == .write(3_072))
    }

    @Test func aFastLinkOrAnUnknownRateIsNotGated() throws {
        let (fast, fastRate) = try Self.pace(LinkPaceTests.loopback)
        var gate = LinkQueueGate()
        gate.resized(to: fast, maximumRoom: Self.maximumRoom)
        #expect(gate.isOpen)
        gate.handedDown(10 * 1024 * 1024)
        #expect(gate.isOpen)
        #expect(gate.looked(queued: 1 << 20, sizes: fast, maximumRoom: Self.maximumRoom, rate: fastRate) == .write(.max))
        let (slow, _) = try Self.pace(LinkPaceTests.tenMegabit)
        #expect(gate.looked(queued: 1 << 20, sizes: slow, maximumRoom: Self.maximumRoom, rate: nil) == .write(.max))
        #expect(gate.isOpen)
    }

    /// A stream's data spends the room; IP packets do not (their queue has
    /// CoDel, and gated too they waited 5-10 ms longer at 10 Mbit/s).
    @Test func dataSpendsTheRoomAndIPPacketsPassUngated() {
        let data = TunnelMessage.data(identifier: 1, payload: ByteBuffer(repeating: 1, count: 4_000))
        let packets = TunnelMessage.packets(identifier: 2, packets: [TunnelPacket(bytes: ByteBuffer(repeating: 0x45, count: 4_000))])
        #expect(TunnelChannelHandler.gatedSize(of: data) == 4_064)
        #expect(TunnelChannelHandler.gatedSize(of: packets) == 0)
        #expect(TunnelChannelHandler.gatedSize(of: .fetchConfiguration(identifier: 0)) == 64)
    }

    @Test func aRoomFollowsItsRateAt40Megabit() throws {
        let (sizes, rate) = Self.sized(room: 20 * 1024, rate: 5_000_000)
        var gate = LinkQueueGate()
        gate.resized(to: sizes, maximumRoom: Self.maximumRoom)
        #expect(!gate.isOpen)
        // 20 KiB of room: with nothing waiting, all of it; with 15 000 bytes, a wait of 1 ms.
        #expect(gate.looked(queued: 0, sizes: sizes, maximumRoom: Self.maximumRoom, rate: rate) == .write(20 * 1024))
        #expect(gate.looked(queued: 15_000, sizes: sizes, maximumRoom: Self.maximumRoom, rate: rate) == .wait(.milliseconds(1)))
    }

    @Test func theMultiplexerCutsAChunkToTheRoomTheTunnelHasLeft() throws {
        let loop = EmbeddedEventLoop()
        let output = GatedOutput()
        let multiplexer = TunnelMultiplexer(role: .client, output: output, eventLoop: loop, logger: Logger(label: "test"))
        multiplexer.turnBytes = 6 * 1024
        let endpoint = RecordingEndpoint()
        let identifier = try #require(multiplexer.openFlow(.tcp(TunnelEndpoint(host: "h", port: 1)), endpoint: { _ in .tcp(endpoint) }) { _ in })
        multiplexer.receive(.message(.openResult(identifier: identifier, result: .success)))
        loop.run()
        output.payloads.removeAll()
        output.allowance = 5_000
        multiplexer.flow(identifier, didRead: ByteBuffer(repeating: 1, count: 64 * 1024), from: nil)
        loop.run()
        // One chunk of what the room had left, not a whole turn past it.
        #expect(output.payloads == [5_000])
        // Room again for 300 bytes: a chunk is never smaller than a kilobyte (a frame's cost).
        output.allowance = 300
        multiplexer.tunnelWritabilityChanged(true)
        #expect(output.payloads == [5_000, TunnelMultiplexer.smallestPacedChunk])
        // Ungated: whole turns.
        output.allowance = .max
        output.limit = 2
        multiplexer.tunnelWritabilityChanged(true)
        #expect(output.payloads.suffix(2) == [6 * 1024, 6 * 1024])
    }
}

/// A tunnel whose gate allows `allowance` payload bytes, as `TunnelChannelHandler`'s does.
private final class GatedOutput: TunnelOutput {
    var allowance = Int.max
    /// Data messages taken before it stops being writable.
    var limit = Int.max
    var payloads: [Int] = []

    var isWritable: Bool { allowance > 0 && limit > 0 }
    var writableBytes: Int { allowance }
    func write(_ message: TunnelMessage) {
        guard case .data(_, let payload, _) = message else { return }
        payloads.append(payload.readableBytes)
        if allowance != .max { allowance -= payload.readableBytes }
        if limit != .max { limit -= 1 }
    }
    func flush() {}
    func peerReadingChanged(_ reading: Bool) {}
}
