import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing
@testable import SimpleTunnelServices

// Alone it takes 4 s; in a full parallel run on two cores 75 s, and past 2 minutes on a busier machine:
// the limit is a safety net against a hang, not a timing.
@Suite("Flow control end to end", .timeLimit(.minutes(5)))
struct FlowControlEndToEndTests {
    /// The real client obeys the server's `suspend` and `resume`: 32 MiB (more
    /// than every buffer on the way and the suspend allowance together) reach a
    /// destination that starts reading only after two seconds, intact, and the
    /// tunnel carries on.
    @Test func aLateReadingDestinationGetsEveryByteAndTheTunnelStays() async throws {
        // 32 MiB is twice the default suspend allowance: a client that ignored
        // `suspend` would be held back by the server. (A smaller allowance is no
        // stricter test: what both kernels buffer on loopback after `suspend`
        // can pass 4 MiB.)
        let fixture = try await TunnelFixture.start()
        let received = fixture.group.next().makePromise(of: ByteBuffer.self)
        let started = NIOLockedValueBox(false)
        let destination = try await LateReader.listen(delay: .seconds(2), received: received, started: started, group: fixture.group)
        let forwarder = try await fixture.forward(to: destination.localAddress?.port)

        let payload = LoopbackPeers.payload(32 * 1024 * 1024)
        let application = try await ClientBootstrap(group: fixture.group)
            .channelOption(.allowRemoteHalfClosure, value: true)
            .connect(host: "127.0.0.1", port: forwarder.localAddress.port ?? 0)
            .get()
        try await application.writeAndFlush(payload)
        #expect(started.withLockedValue { $0 }, "32 MiB were taken before the destination read a byte: nothing held the sender back")
        try await application.close(mode: CloseMode.output)
        let delivered = try await received.futureResult.get()
        #expect(delivered.readableBytes == payload.readableBytes)
        #expect(delivered == payload)

        // The tunnel was not closed for abuse: another flow still works.
        let echoForwarder = try await fixture.forward()
        let echoed = try await LoopbackPeers.exchange(ByteBuffer(string: "still here"), port: echoForwarder.localAddress.port ?? 0, group: fixture.group)
        #expect(echoed == ByteBuffer(string: "still here"))
        try? await application.close()
        try? await destination.close()
        await fixture.stop()
    }
}
