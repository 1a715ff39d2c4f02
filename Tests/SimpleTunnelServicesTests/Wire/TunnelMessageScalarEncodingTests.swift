import NIOCore
import Testing
@testable import SimpleTunnelServices
@testable import SimpleTunnelWire

/// The one-pass writer of the per-flow messages must make exactly the bytes of
/// the general writer fed `propertyListEntries`.
@Suite("Scalar message encoding")
struct TunnelMessageScalarEncodingTests {
    static let longHost = String(repeating: "a", count: 63) + "." + String(repeating: "b", count: 63) + ".example"

    static let messages: [TunnelMessage] =
        TunnelFramePiecesTests.messages + [
            // Every integer width of the identifier, negative ones in 8 bytes.
            .close(identifier: 0, direction: .all),
            .close(identifier: 0xFF, direction: .read),
            .close(identifier: 0x100, direction: .write),
            .close(identifier: 0xFFFF, direction: .none),
            .close(identifier: 0x1_0000, direction: .all),
            .close(identifier: 0xFFFF_FFFF, direction: .all),
            .close(identifier: 0x1_0000_0000, direction: .all),
            .close(identifier: -1, direction: .all),
            .suspend(identifier: 17),
            .resume(identifier: -4_611_686_018_427_387_904),
            .open(identifier: -42, request: .tcp(TunnelEndpoint(host: "example.com", port: 443))),
            .open(identifier: 1, request: .tcp(TunnelEndpoint(host: "192.0.2.1", port: 1))),
            .open(identifier: 1, request: .tcp(TunnelEndpoint(host: longHost, port: 65_535))),
            .open(identifier: 1, request: .tcp(TunnelEndpoint(host: "abcdefghijklmn", port: 80))),  // 14 and 15 bytes:
            .open(identifier: 1, request: .tcp(TunnelEndpoint(host: "abcdefghijklmno", port: 80))),  // the count leaves the marker
            .open(identifier: Int64.min, request: .udp),
            .open(identifier: Int64.max, request: .plainIP),
            .openResult(identifier: 3, result: .timeout, configuration: [:]),
            .authenticate(login: "bob", password: "a password longer than fifteen bytes"),
            .authenticate(login: "", password: ""),
            .authenticate(login: "carol", password: "pw", offersRetryLater: true),
            .dns(identifier: 0, packet: ByteBuffer(counter: 512), source: "[2001:db8::53]:53"),
            .data(identifier: 5, payload: ByteBuffer(counter: 14)),
            .data(identifier: 5, payload: ByteBuffer(counter: 15)),
            .data(identifier: 5, payload: ByteBuffer(counter: 255), endpoint: TunnelEndpoint(host: "192.0.2.7", port: 65_535)),
            .data(identifier: 5, payload: ByteBuffer(counter: 256), endpoint: TunnelEndpoint(host: longHost, port: 256)),
            .data(identifier: 5, payload: ByteBuffer(counter: 65_535)),
            .data(identifier: 5, payload: ByteBuffer(counter: 65_536), endpoint: TunnelEndpoint(host: "::1", port: 53)),
        ]
        + TunnelConnectionOpenResult.allCases.map { .openResult(identifier: 7, result: $0) }
        + [.authenticateResult(.success), .authenticateResult(.refused), .authenticateResult(.timeout)]

    /// The frame the general writer makes: today's bytes.
    static func generalFrame(
        _ message: TunnelMessage, detachingDataOf minimumDetached: Int
    ) -> (frame: ByteBuffer, detached: BinaryPropertyListWriter.Detached?) {
        var frame = ByteBuffer()
        frame.writeInteger(UInt32(0))
        let detached = BinaryPropertyListWriter.writeDictionary(message.propertyListEntries, into: &frame, detachingDataOf: minimumDetached)
        let length = frame.readableBytes + (detached?.bytes.readableBytes ?? 0)
        frame.setInteger(UInt32(length), at: 0, endianness: .little)
        return (frame, detached)
    }

    @Test func sameBytesAsTheGeneralWriterWholeOrDetached() throws {
        for message in Self.messages {
            for minimumDetached in [Int.max, TunnelFrame.minimumDetachedPayload] {
                let expected = Self.generalFrame(message, detachingDataOf: minimumDetached)
                var frame = ByteBuffer(string: "xyz")  // offsets count from the writer index, not from 0
                let detached = try TunnelFrame.writeFrame(message, into: &frame, detachingDataOf: minimumDetached)
                frame.moveReaderIndex(forwardBy: 3)
                #expect(frame == expected.frame, "\(message.command) \(minimumDetached)")
                #expect(detached?.offset == expected.detached.map { $0.offset + 3 })
                #expect(detached?.bytes == expected.detached?.bytes)
            }
        }
    }

    @Test func everyMessageSurvivesAFrameRoundTrip() throws {
        for message in Self.messages {
            var frame = try TunnelFrame.encodePieces(message, allocator: ByteBufferAllocator()).joined
            let payload = try #require(try TunnelFrameDecoder.nextPayload(from: &frame))
            #expect(try TunnelFrame.decodeMessage(payload: payload) == message)
        }
    }

    @Test func perFlowMessagesTakeTheOnePassWriter() {
        func takesIt(_ message: TunnelMessage) -> Bool {
            var size = ScalarDictionarySize(detachingDataOf: .max)
            return message.offerScalarValues(to: &size) != nil && size.isWritable
        }
        let scalar: [TunnelMessage] = [
            .open(identifier: 1, request: .tcp(TunnelEndpoint(host: "example.com", port: 443))),
            .open(identifier: 1, request: .udp),
            .open(identifier: 1, request: .plainIP),
            .openResult(identifier: 1, result: .success),
            .close(identifier: 1, direction: .all),
            .suspend(identifier: 1),
            .resume(identifier: 1),
            .data(identifier: 1, payload: ByteBuffer(counter: 100)),
            .data(identifier: 1, payload: ByteBuffer(counter: 100), endpoint: TunnelEndpoint(host: "192.0.2.1", port: 53)),
            .dns(identifier: 0, packet: ByteBuffer(counter: 40), source: "127.0.0.53:53"),
            .fetchConfiguration(identifier: 0),
            .authenticate(login: "alice", password: "secret"),
            .authenticateResult(.success),
        ]
        for message in scalar {
            #expect(takesIt(message), "\(message.command)")
        }
        let general: [TunnelMessage] = [
            .packets(identifier: 1, packets: [TunnelPacket(bytes: ByteBuffer(hex: "4500"))]),
            .openResult(identifier: 1, result: .success, configuration: TunnelMessageTests.configuration),
            .fetchConfiguration(identifier: 0, configuration: [:]),
            .open(identifier: 1, request: .tcp(TunnelEndpoint(host: "bücher.example", port: 443))),  // UTF-16
        ]
        for message in general {
            #expect(!takesIt(message), "\(message.command)")
        }
    }

    @Test func closeIsTheExpectedBytes() throws {
        var frame = ByteBuffer()
        try TunnelFrame.encode(.close(identifier: 9, direction: .all), into: &frame)
        let expected = ByteBuffer(
            hex: """
                5e000000 62706c6973743030 d3 010203040506
                5a 6964656e746966696572 57 636f6d6d616e64 5a 636c6f73652d74797065
                1009 1004 1004
                080f1a222d2f31
                000000000000 01 01 0000000000000007 0000000000000000 0000000000000033
                """
        )
        #expect(frame == expected)
    }

    @Test func frameAtTheLimitIsWrittenAndOneByteMoreIsNot() throws {
        let overhead = Self.generalFrame(.data(identifier: 1, payload: ByteBuffer(counter: 70_000)), detachingDataOf: .max).frame
            .readableBytes - 70_000
        for payloadLength in [TunnelWireLimits.maximumFrameLength - overhead, TunnelWireLimits.maximumFrameLength - overhead + 1] {
            let message = TunnelMessage.data(identifier: 1, payload: ByteBuffer(counter: payloadLength))
            let expected = Self.generalFrame(message, detachingDataOf: .max).frame
            var frame = ByteBuffer(string: "xyz")
            if expected.readableBytes <= TunnelWireLimits.maximumFrameLength {
                _ = try TunnelFrame.writeFrame(message, into: &frame, detachingDataOf: .max)
                frame.moveReaderIndex(forwardBy: 3)
                #expect(frame == expected)
            } else {
                #expect(throws: TunnelFrameError.lengthTooLarge(expected.readableBytes)) {
                    _ = try TunnelFrame.writeFrame(message, into: &frame, detachingDataOf: .max)
                }
                #expect(frame == ByteBuffer(string: "xyz"), "nothing written")
            }
        }
    }
}
