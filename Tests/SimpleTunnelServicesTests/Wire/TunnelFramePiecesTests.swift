import NIOCore
import Testing
@testable import SimpleTunnelServices

@Suite("Tunnel frames in pieces")
struct TunnelFramePiecesTests {
    static let messages: [TunnelMessage] =
        TunnelMessageTests.everyMessage + [
            .data(identifier: 2, payload: ByteBuffer(counter: TunnelFrame.minimumDetachedPayload - 1)),
            .data(identifier: 2, payload: ByteBuffer(counter: TunnelFrame.minimumDetachedPayload)),
            .data(identifier: 1 << 40, payload: ByteBuffer(counter: 65_536)),
            .data(identifier: 8, payload: ByteBuffer(counter: 100_000), endpoint: TunnelEndpoint(host: "::1", port: 53)),
            .data(identifier: 9, payload: ByteBuffer(counter: 4096).getSlice(at: 1000, length: 3000) ?? ByteBuffer()),
            // Super-packets (PROTOCOL.md B8): the first large one is sent beside the frame.
            .packets(identifier: 4, packets: [
                TunnelPacket(bytes: ByteBuffer(counter: 60), protocolNumber: 2),
                TunnelPacket(bytes: ByteBuffer(counter: 65_535), protocolNumber: 2, segmentSize: 1348),
                TunnelPacket(bytes: ByteBuffer(counter: 30_000), protocolNumber: 30, segmentSize: 1328),
            ]),
        ]

    @Test func piecesJoinToTheSameBytesAsTheOneBufferEncoder() throws {
        for message in Self.messages {
            var expected = ByteBuffer()
            try TunnelFrame.encode(message, into: &expected)
            let pieces = try TunnelFrame.encodePieces(message, allocator: ByteBufferAllocator())
            #expect(pieces.joined == expected, "\(message.command)")
            var frame = pieces.joined
            let payload = try #require(try TunnelFrameDecoder.nextPayload(from: &frame))
            #expect(try TunnelFrame.decodeMessage(payload: payload) == message)
        }
    }

    @Test func aSuperPacketIsSentBesideTheFrameNotCopied() throws {
        let superPacket = ByteBuffer(counter: 65_535)
        let message = TunnelMessage.packets(identifier: 4, packets: [TunnelPacket(bytes: superPacket, protocolNumber: 2, segmentSize: 1348)])
        let pieces = try TunnelFrame.encodePieces(message, allocator: ByteBufferAllocator())
        let detached = try #require(pieces.payload)
        detached.withUnsafeReadableBytes { piece in
            superPacket.withUnsafeReadableBytes { original in
                #expect(piece.baseAddress == original.baseAddress, "the packet's own storage")
            }
        }
        #expect(pieces.head.readableBytes + (pieces.tail?.readableBytes ?? 0) < 256)
    }

    @Test func largePayloadIsSentBesideTheFrameNotCopied() throws {
        let payload = ByteBuffer(counter: 65_536)
        let message = TunnelMessage.data(identifier: 3, payload: payload, endpoint: TunnelEndpoint(host: "10.0.0.1", port: 9))
        let pieces = try TunnelFrame.encodePieces(message, allocator: ByteBufferAllocator())
        let detached = try #require(pieces.payload)
        #expect(detached == payload)
        detached.withUnsafeReadableBytes { piece in
            payload.withUnsafeReadableBytes { original in
                #expect(piece.baseAddress == original.baseAddress, "the payload's own storage")
            }
        }
        #expect(pieces.head.readableBytes < 96, "length, header, keys and references")
        #expect(try #require(pieces.tail).readableBytes < 128, "host, port, offset table and trailer")
    }

    @Test func smallPayloadsAndOtherMessagesStayOneBuffer() throws {
        for message in TunnelMessageTests.everyMessage where message.command != .data {
            let pieces = try TunnelFrame.encodePieces(message, allocator: ByteBufferAllocator())
            #expect(pieces.payload == nil && pieces.tail == nil)
        }
        let small = TunnelMessage.data(identifier: 1, payload: ByteBuffer(counter: 100))
        #expect(try TunnelFrame.encodePieces(small, allocator: ByteBufferAllocator()).payload == nil)
    }

    @Test func oversizedFrameFailsLikeTheOneBufferEncoder() {
        let message = TunnelMessage.data(identifier: 1, payload: ByteBuffer(counter: TunnelWireLimits.maximumFrameLength))
        #expect(throws: TunnelFrameError.self) {
            _ = try TunnelFrame.encodePieces(message, allocator: ByteBufferAllocator())
        }
    }
}
