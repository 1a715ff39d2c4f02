import NIOCore
import PropertyBased
import Testing
@testable import SimpleTunnelServices
@testable import SimpleTunnelWire

/// Random messages of every scalar shape: the one-pass writer and the general
/// writer must agree byte for byte, whole and with the payload detached.
@Suite("Scalar message encoding: random messages")
struct TunnelMessageScalarEncodingPropertyTests {
    /// A message of the shape `choice` picks, its fields drawn from `words` and `text`.
    static func message(choice: Int, words: [UInt64], text: [UInt8], payloadLength: Int) -> TunnelMessage {
        let identifier = Int64(bitPattern: words[0] >> (words[1] % 64))
        let port = Int(words[2] % 65_536)
        // Mostly ASCII hosts; a high byte now and then makes a UTF-16 string (the general writer's case).
        let host = String(decoding: text.map { words[3] % 7 == 0 ? $0 : 0x21 + $0 % 0x5E }, as: UTF8.self)
        let payload = ByteBuffer(repeating: UInt8(truncatingIfNeeded: words[3]), count: payloadLength)
        let endpoint = TunnelEndpoint(host: host, port: port)
        switch choice {
        case 0: return .open(identifier: identifier, request: .tcp(endpoint))
        case 1: return .open(identifier: identifier, request: words[2] % 2 == 0 ? .udp : .plainIP)
        case 2: return .openResult(identifier: identifier, result: TunnelConnectionOpenResult.allCases[Int(words[2] % 6)])
        case 3: return .close(identifier: identifier, direction: [.none, .read, .write, .all][Int(words[2] % 4)])
        case 4: return words[2] % 2 == 0 ? .suspend(identifier: identifier) : .resume(identifier: identifier)
        case 5: return .data(identifier: identifier, payload: payload)
        case 6: return .data(identifier: identifier, payload: payload, endpoint: endpoint)
        case 7: return .dns(identifier: identifier, packet: payload, source: words[2] % 2 == 0 ? nil : host)
        default: return .authenticate(login: host, password: String(repeating: "p", count: Int(words[2] % 40)))
        }
    }

    @Test func randomMessagesMakeTheGeneralWritersBytes() async {
        await propertyCheck(
            count: 3000,
            input: Gen<Int>.int(in: 0...8), Gen<UInt64>.uint64().array(of: 4...4), Gen<UInt8>.uint8().array(of: 0...300),
            Gen<Int>.int(in: 0...70_000)
        ) { choice, words, text, payloadLength in
            let message = Self.message(choice: choice, words: words, text: text, payloadLength: payloadLength)
            for minimumDetached in [Int.max, TunnelFrame.minimumDetachedPayload] {
                let expected = TunnelMessageScalarEncodingTests.generalFrame(message, detachingDataOf: minimumDetached)
                var frame = ByteBuffer(string: "ab")
                do {
                    let detached = try TunnelFrame.writeFrame(message, into: &frame, detachingDataOf: minimumDetached)
                    frame.moveReaderIndex(forwardBy: 2)
                    #expect(frame == expected.frame, "\(message.command), detaching from \(minimumDetached)")
                    #expect(detached?.offset == expected.detached.map { $0.offset + 2 })
                    #expect(detached?.bytes == expected.detached?.bytes)
                } catch {
                    // Only a frame over the limit may be refused, and then the general writer's is over it too.
                    let length = expected.frame.readableBytes + (expected.detached?.bytes.readableBytes ?? 0)
                    #expect(length > TunnelWireLimits.maximumFrameLength, "\(error)")
                    #expect(frame == ByteBuffer(string: "ab"), "nothing written")
                }
            }
        }
    }
}
