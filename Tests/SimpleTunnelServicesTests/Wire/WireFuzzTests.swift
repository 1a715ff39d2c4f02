import Foundation
import NIOCore
import NIOEmbedded
import PropertyBased
import Testing
@testable import SimpleTunnelServices

/// Hostile frames: the decoder may reject them, in the ways PROTOCOL.md B5
/// allows, but never crashes, and never holds more than one frame's worth.
@Suite("Wire decoder: random and mutated frames")
struct WireFuzzTests {
    /// Valid frames of every command, from the golden fixtures.
    static let seeds: [[UInt8]] = FixtureTests.valid.compactMap { name in
        (try? FixtureTests.load("valid", name)).map { Array($0.frame.readableBytesView) }
    }

    /// Runs bytes through the codec pipeline; only the outcomes B5 allows may come out.
    static func expectBoundedOutcome(_ bytes: [UInt8]) {
        do {
            let (inbound, error) = try FixtureTests.decode(ByteBuffer(bytes: bytes))
            if let error, !(error is TunnelWireError) {
                Issue.record("unexpected error \(error)")
            }
            for case .message(let message) in inbound {
                expectWithinFrame(message, frameBytes: bytes.count)
            }
        } catch {
            Issue.record("pipeline failed: \(error)")
        }
    }

    /// A decoded message never holds more bytes than the frame carried.
    static func expectWithinFrame(_ message: TunnelMessage, frameBytes: Int) {
        let carried: Int
        switch message {
        case .data(_, let payload, _): carried = payload.readableBytes
        case .dns(_, let packet, _): carried = packet.readableBytes
        case .packets(_, let packets): carried = packets.reduce(0) { $0 + $1.bytes.readableBytes }
        default: carried = 0
        }
        #expect(carried <= frameBytes)
    }

    @Test func randomBytes() async {
        await propertyCheck(count: 500, input: Gen<UInt8>.uint8().array(of: 0...600)) { bytes in
            Self.expectBoundedOutcome(bytes)
        }
    }

    @Test func randomPayloadsBehindAValidLength() async {
        await propertyCheck(count: 500, input: Gen<UInt8>.uint8().array(of: 1...600)) { payload in
            var frame = withUnsafeBytes(of: UInt32(payload.count + 4).littleEndian, Array.init)
            frame += Array("bplist00".utf8) + payload
            frame.replaceSubrange(0..<4, with: withUnsafeBytes(of: UInt32(frame.count).littleEndian, Array.init))
            Self.expectBoundedOutcome(frame)
        }
    }

    /// Each UInt64 is one edit of a seed frame: its low bits pick the kind of edit.
    @Test func mutationsOfValidFrames() async {
        #expect(Self.seeds.count >= 60)
        await propertyCheck(count: 2000, input: Gen<Int>.int(in: 0...10_000), Gen<UInt64>.uint64().array(of: 1...4)) { seed, edits in
            var bytes = Self.seeds[seed % Self.seeds.count]
            for edit in edits where bytes.count > 4 {
                // Leave the length prefix alone half the time so the plist gets exercised.
                let lowest = edit & 0x10 == 0 ? 4 : 0
                let position = lowest + Int((edit >> 8) % UInt64(bytes.count - lowest))
                let byte = UInt8(truncatingIfNeeded: edit >> 40)
                switch edit % 5 {
                case 0: bytes[position] = byte
                case 1: bytes[position] ^= 1 << (byte % 8)
                case 2: bytes.removeSubrange(position...)
                case 3: bytes.insert(byte, at: position)
                default: bytes[position] = [0x00, 0x0F, 0x7F, 0x80, 0xFF][Int(byte) % 5]
                }
            }
            Self.expectBoundedOutcome(bytes)
        }
    }

    /// Any 32-bit length is judged from the header alone: in range waits for
    /// the payload, out of range is refused before any payload is buffered.
    @Test func lengthIsJudgedFromTheHeaderAlone() async {
        await propertyCheck(count: 1000, input: Gen<UInt32>.uint32()) { length in
            var header = ByteBuffer()
            header.writeInteger(length, endianness: .little)
            let inRange = (UInt32(TunnelWireLimits.minimumFrameLength)...UInt32(TunnelWireLimits.maximumFrameLength)).contains(length)
            do {
                let payload = try TunnelFrameDecoder.nextPayload(from: &header)
                #expect(inRange && payload == nil)
                #expect(header.readableBytes == 4)
            } catch {
                #expect(!inRange)
            }
        }
    }
}
