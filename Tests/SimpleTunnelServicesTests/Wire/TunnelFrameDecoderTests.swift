import NIOCore
import NIOEmbedded
import NIOTestUtils
import Testing
@testable import SimpleTunnelServices

@Suite("Frame decoder")
struct TunnelFrameDecoderTests {
    static func frame(_ payload: ByteBuffer) -> ByteBuffer {
        var frame = ByteBuffer()
        frame.writeInteger(UInt32(payload.readableBytes + 4), endianness: .little)
        frame.writeImmutableBuffer(payload)
        return frame
    }

    @Test func decodesByteByByteMessageByMessageAndAllAtOnce() throws {
        let payloads = [ByteBuffer(string: "a"), ByteBuffer(counter: 300), ByteBuffer(counter: 20_000)]
        try ByteToMessageDecoderVerifier.verifyDecoder(
            inputOutputPairs: payloads.map { (Self.frame($0), [$0]) },
            decoderFactory: { TunnelFrameDecoder() }
        )
    }

    @Test(arguments: [0, 1, 4])
    func refusesLengthsBelowFive(length: UInt32) throws {
        let channel = EmbeddedChannel(handler: ByteToMessageHandler(TunnelFrameDecoder()))
        var bytes = ByteBuffer()
        bytes.writeInteger(length, endianness: .little)
        #expect(throws: TunnelWireError.frame(.lengthTooSmall(Int(length)))) {
            try channel.writeInbound(bytes)
        }
    }

    @Test func refusesAnOversizedLengthFromTheHeaderAlone() throws {
        let channel = EmbeddedChannel(handler: ByteToMessageHandler(TunnelFrameDecoder()))
        var header = ByteBuffer()
        header.writeInteger(UInt32(TunnelWireLimits.maximumFrameLength + 1), endianness: .little)
        #expect(throws: TunnelWireError.frame(.lengthTooLarge(TunnelWireLimits.maximumFrameLength + 1))) {
            try channel.writeInbound(header)
        }
    }

    @Test func reportsAStreamThatEndsInsideAFrame() throws {
        let channel = EmbeddedChannel(handler: ByteToMessageHandler(TunnelFrameDecoder()))
        var partial = Self.frame(ByteBuffer(counter: 100))
        partial.moveWriterIndex(to: 50)
        try channel.writeInbound(partial)
        #expect(throws: TunnelWireError.frame(.truncated(expected: 104, received: 50))) {
            try channel.finish()
        }
    }

    @Test func messageCodecPassesMessagesRejectionsAndFatalErrors() throws {
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addTunnelMessageCodec()
        var frames = ByteBuffer()
        try TunnelFrame.encode(.suspend(identifier: 5), into: &frames)
        frames.writeImmutableBuffer(Self.frame(BinaryPropertyListWriter.bytes(.dictionary(["command": 6, "identifier": 8]))))
        try channel.writeInbound(frames)
        #expect(try channel.readInbound(as: TunnelInboundMessage.self) == .message(.suspend(identifier: 5)))
        let rejected = try channel.readInbound(as: TunnelInboundMessage.self)
        guard case .rejected(let error) = rejected else {
            Issue.record("expected a rejection, got \(String(describing: rejected))")
            return
        }
        #expect(error.disposition == .openFailure(identifier: 8))

        // A payload that is not a dictionary ends the tunnel; later frames are discarded.
        var fatal = Self.frame(BinaryPropertyListWriter.bytes(.array([])))
        try TunnelFrame.encode(.resume(identifier: 5), into: &fatal)
        #expect(throws: TunnelWireError.self) { try channel.writeInbound(fatal) }
        #expect(try channel.readInbound(as: TunnelInboundMessage.self) == nil)

        try channel.writeOutbound(TunnelMessage.resume(identifier: 5))
        var written = try #require(try channel.readOutbound(as: ByteBuffer.self))
        let payload = try #require(try TunnelFrameDecoder.nextPayload(from: &written))
        #expect(try TunnelFrame.decodeMessage(payload: payload) == .resume(identifier: 5))
    }
}
