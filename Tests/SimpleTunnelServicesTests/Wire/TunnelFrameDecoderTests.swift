import NIOCore
import NIOEmbedded
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

    /// Feeds `stream` in pieces of `pieceSize` bytes; returns the payloads that came out.
    static func decode(_ stream: ByteBuffer, pieceSize: Int) throws -> [ByteBuffer] {
        let channel = EmbeddedChannel(handler: TunnelFrameDecoder())
        var stream = stream
        while let piece = stream.readSlice(length: min(pieceSize, stream.readableBytes)), piece.readableBytes > 0 {
            try channel.writeInbound(piece)
        }
        var payloads: [ByteBuffer] = []
        while let payload = try channel.readInbound(as: ByteBuffer.self) {
            payloads.append(payload)
        }
        #expect(try channel.finish().isClean)
        return payloads
    }

    @Test func decodesByteByByteMessageByMessageAndAllAtOnce() throws {
        let payloads = [ByteBuffer(string: "a"), ByteBuffer(counter: 300), ByteBuffer(counter: 20_000), ByteBuffer(counter: 131_068)]
        var stream = ByteBuffer()
        for payload in payloads {
            stream.writeImmutableBuffer(Self.frame(payload))
        }
        // Every split point: inside headers, inside payloads, several frames per piece.
        for pieceSize in [1, 2, 3, 5, 7, 1000, 16_384, 65_536, stream.readableBytes] {
            #expect(try Self.decode(stream, pieceSize: pieceSize) == payloads, "pieces of \(pieceSize) bytes")
        }
        // Message by message.
        let channel = EmbeddedChannel(handler: TunnelFrameDecoder())
        for payload in payloads {
            try channel.writeInbound(Self.frame(payload))
            #expect(try channel.readInbound(as: ByteBuffer.self) == payload)
        }
        #expect(try channel.finish().isClean)
    }

    @Test func passesWholeFramesOnAsSlicesOfTheRead() throws {
        let channel = EmbeddedChannel(handler: TunnelFrameDecoder())
        var stream = Self.frame(ByteBuffer(counter: 1000))
        stream.writeImmutableBuffer(Self.frame(ByteBuffer(counter: 2000)))
        let storage = stream.withUnsafeReadableBytes { $0.baseAddress }
        try channel.writeInbound(stream)
        let first = try #require(try channel.readInbound(as: ByteBuffer.self))
        let second = try #require(try channel.readInbound(as: ByteBuffer.self))
        #expect(first.withUnsafeReadableBytes { $0.baseAddress } == storage.map { $0 + 4 })
        #expect(second.withUnsafeReadableBytes { $0.baseAddress } == storage.map { $0 + 1008 })
    }

    @Test func refusesAnOversizedLengthSplitAcrossReads() throws {
        let channel = EmbeddedChannel(handler: TunnelFrameDecoder())
        var header = ByteBuffer()
        header.writeInteger(UInt32(TunnelWireLimits.maximumFrameLength + 1), endianness: .little)
        try channel.writeInbound(header.getSlice(at: 0, length: 2)!)
        #expect(throws: TunnelWireError.frame(.lengthTooLarge(TunnelWireLimits.maximumFrameLength + 1))) {
            try channel.writeInbound(header.getSlice(at: 2, length: 2)!)
        }
    }

    @Test(arguments: [0, 1, 4])
    func refusesLengthsBelowFive(length: UInt32) throws {
        let channel = EmbeddedChannel(handler: TunnelFrameDecoder())
        var bytes = ByteBuffer()
        bytes.writeInteger(length, endianness: .little)
        #expect(throws: TunnelWireError.frame(.lengthTooSmall(Int(length)))) {
            try channel.writeInbound(bytes)
        }
    }

    @Test func refusesAnOversizedLengthFromTheHeaderAlone() throws {
        let channel = EmbeddedChannel(handler: TunnelFrameDecoder())
        var header = ByteBuffer()
        header.writeInteger(UInt32(TunnelWireLimits.maximumFrameLength + 1), endianness: .little)
        #expect(throws: TunnelWireError.frame(.lengthTooLarge(TunnelWireLimits.maximumFrameLength + 1))) {
            try channel.writeInbound(header)
        }
    }

    @Test func reportsAStreamThatEndsInsideAFrame() throws {
        let channel = EmbeddedChannel(handler: TunnelFrameDecoder())
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
