import NIOCore
import PropertyBased
import Testing
@testable import SimpleTunnelServices
@testable import SimpleTunnelWire

/// The direct reader of the per-flow messages reads what the general reader
/// reads, as the same message, or leaves the frame to it.
@Suite("Scalar message direct reader")
struct ScalarFrameReaderTests {
    static func document(_ message: TunnelMessage) throws -> ByteBuffer {
        PacketsFrameCodecTests.document(of: try PacketsFrameCodecTests.frame(message))
    }

    /// Whether the direct reader is meant to read `message` when our writer wrote it.
    static func isReadDirectly(_ message: TunnelMessage) -> Bool {
        switch message {
        case .data, .suspend, .resume, .close, .open(_, .tcp), .openResult(_, _, .none, _): return true
        default: return false
        }
    }

    @Test func randomMessagesReadDirectlyAsTheGeneralReaderReadsThem() async {
        // Short hosts and payloads: the layout, not the size, is what differs from message to message.
        await propertyCheck(count: 1500, input: Gen<Int>.int(in: 0...8), Gen<UInt64>.uint64().array(of: 4...4), Gen<UInt8>.uint8().array(of: 0...40)) {
            choice, words, text in
            let payloadLength = Int(words[1] % 3_000)
            var message = TunnelMessageScalarEncodingPropertyTests.message(choice: choice, words: words, text: text, payloadLength: payloadLength)
            if choice == 2, words[1] % 2 == 0 {
                // With a detail, known or not.
                guard case .openResult(let identifier, let result, _, _) = message else { return }
                message = .openResult(identifier: identifier, result: result, detail: TunnelOpenResultDetail.allCases.randomElement())
            }
            guard let document = try? Self.document(message) else { return }
            let general = try? TunnelFrame.decodeMessageThroughPropertyList(payload: document)
            let direct = ScalarFrameReader.read(document)
            if let direct {
                #expect(direct == general, "\(message)")
            } else if general == message {
                // What the general reader takes as written (a valid host and port), the direct reader takes too.
                #expect(!Self.isReadDirectly(message) || Self.hasNonASCIIHost(message), "left to the general reader: \(message)")
            }
            #expect((try? TunnelFrame.decodeMessage(payload: document)) == general)
        }
    }

    /// The general writer sends a non-ASCII host as UTF-16, which the direct reader leaves alone.
    static func hasNonASCIIHost(_ message: TunnelMessage) -> Bool {
        switch message {
        case .open(_, .tcp(let endpoint)), .data(_, _, let endpoint?): return endpoint.host.utf8.contains { $0 >= 0x80 }
        default: return false
        }
    }

    static let mutated: [TunnelMessage] = [
        .open(identifier: 7, request: .tcp(TunnelEndpoint(host: "example.test", port: 8080))),
        .data(identifier: 7, payload: ByteBuffer(string: "0123456789abcdefghij")),
        .data(identifier: 300, payload: ByteBuffer(string: "dgram"), endpoint: TunnelEndpoint(host: "10.0.0.1", port: 53)),
        .openResult(identifier: 7, result: .success),
        .openResult(identifier: 70_000, result: .refused, detail: .notAllowedByPolicy),
        .close(identifier: 7, direction: .write),
        .suspend(identifier: 1),
        .resume(identifier: -5),
    ]

    /// Every single-byte change of a frame our writer made: whatever the
    /// direct reader still takes, the general reader takes as the same message.
    @Test(arguments: mutated)
    func aChangedByteIsReadAsTheGeneralReaderReadsItOrLeftToIt(message: TunnelMessage) throws {
        let document = try Self.document(message)
        #expect(ScalarFrameReader.read(document) == message)
        var mismatches: [String] = []
        var directlyRead = 0
        for offset in 0..<document.readableBytes {
            for replacement: UInt8 in [0x00, 0x01, 0x02, 0x03, 0x04, 0x06, 0x0F, 0x10, 0x11, 0x13, 0x14, 0x1F, 0x41, 0x4F, 0x5F, 0x61, 0x80, 0xD3, 0xFF] {
                var changed = ByteBuffer(buffer: document)
                changed.setInteger(replacement, at: changed.readerIndex + offset)
                guard let direct = ScalarFrameReader.read(changed) else { continue }
                directlyRead += 1
                if (try? TunnelFrame.decodeMessageThroughPropertyList(payload: changed)) != direct {
                    mismatches.append("byte \(offset) set to \(replacement)")
                }
            }
        }
        #expect(mismatches == [])
        // Values change freely; the layout does not.
        #expect(directlyRead > 0)
    }

    /// Several bytes changed at once, and frames cut short or grown.
    @Test func randomlyChangedFramesAreReadAsTheGeneralReaderReadsThemOrLeftToIt() async throws {
        let documents = try Self.mutated.map(Self.document)
        await propertyCheck(
            count: 3000,
            input: Gen<Int>.int(in: 0...(documents.count - 1)), Gen<UInt64>.uint64().array(of: 1...4), Gen<Int>.int(in: -2...2)
        ) { which, changes, lengthChange in
            var changed = documents[which]
            for change in changes {
                let offset = Int(change % UInt64(changed.readableBytes))
                changed.setInteger(UInt8(truncatingIfNeeded: change >> 32), at: changed.readerIndex + offset)
            }
            if lengthChange < 0 {
                changed.moveWriterIndex(to: changed.writerIndex + lengthChange)
            } else if lengthChange > 0 {
                changed.writeRepeatingByte(0, count: lengthChange)
            }
            guard let direct = ScalarFrameReader.read(changed) else { return }
            #expect((try? TunnelFrame.decodeMessageThroughPropertyList(payload: changed)) == direct)
        }
    }

    @Test func anotherWritersLayoutIsLeftToTheGeneralReader() throws {
        for message in Self.mutated {
            // Sorted keys ("command" first), as a general property-list writer would order them.
            let sorted = BinaryPropertyListWriter.bytes(message.propertyList)
            #expect(ScalarFrameReader.read(sorted) == nil)
            #expect(try TunnelFrame.decodeMessage(payload: sorted) == message)
        }
    }

    @Test func refusedValuesAndOtherCommandsAreLeftToTheGeneralReader() throws {
        // Our layout of `open` with identifier 0, a port out of range, a host the syntax refuses.
        for message: TunnelMessage in [
            .open(identifier: 0, request: .tcp(TunnelEndpoint(host: "example.test", port: 80))),
            .open(identifier: 3, request: .tcp(TunnelEndpoint(host: "example.test", port: 0))),
            .open(identifier: 3, request: .tcp(TunnelEndpoint(host: "bad host", port: 80))),
        ] {
            let document = try Self.document(message)
            #expect(ScalarFrameReader.read(document) == nil)
            #expect(throws: TunnelWireError.self) { try TunnelFrame.decodeMessage(payload: document) }
        }
        // The result shape under authenticateResult, the bare shape under fetchConfiguration: not read directly.
        for message: TunnelMessage in [.authenticateResult(.success), .fetchConfiguration(identifier: 0), .open(identifier: 4, request: .udp)] {
            let document = try Self.document(message)
            #expect(ScalarFrameReader.read(document) == nil)
            #expect(try TunnelFrame.decodeMessage(payload: document) == message)
        }
    }
}
