import NIOCore
import PropertyBased
import Testing
@testable import SimpleTunnelServices
@testable import SimpleTunnelWire

/// The IP path's own codec for `packets` messages: the one-pass writer makes
/// the general writer's bytes, and the direct reader reads what the general
/// reader reads, or leaves the frame to it.
@Suite("Packets message codec")
struct PacketsFrameCodecTests {
    /// A `packets` message of `count` packets drawn from `words`; some large
    /// enough to be detached, or (`tiny`) all under 16 bytes, so that hundreds
    /// fit one frame and references take two bytes.
    static func message(count: Int, words: [UInt64], superPackets: Bool, tiny: Bool = false) -> TunnelMessage {
        let packets = (0..<count).map { index -> TunnelPacket in
            let word = words[index % words.count] &+ UInt64(index)
            let length = tiny ? Int(word % 16) : Int(word % 5 == 0 ? 2_048 + word % 3_000 : word % 1_500)
            let protocolNumber: Int64 = word % 11 == 0 ? Int64(bitPattern: word) : (word % 2 == 0 ? 2 : 30)
            let segmentSize = superPackets && word % 3 != 0 ? UInt16(truncatingIfNeeded: word >> 7) : 0
            return TunnelPacket(bytes: ByteBuffer(repeating: UInt8(truncatingIfNeeded: word), count: length), protocolNumber: protocolNumber, segmentSize: segmentSize)
        }
        return .packets(identifier: Int64(bitPattern: words[0] >> (words[0] % 64)), packets: packets)
    }

    /// The frame as one buffer, from the writer in use.
    static func frame(_ message: TunnelMessage) throws -> ByteBuffer {
        var frame = ByteBuffer()
        try TunnelFrame.encode(message, into: &frame)
        return frame
    }

    static func document(of frame: ByteBuffer) -> ByteBuffer {
        frame.getSlice(at: frame.readerIndex + TunnelWireLimits.lengthPrefixSize, length: frame.readableBytes - TunnelWireLimits.lengthPrefixSize) ?? ByteBuffer()
    }

    @Test func randomMessagesMakeTheGeneralWritersBytesAndReadBackDirectly() async {
        await propertyCheck(
            count: 400,
            input: Gen<Int>.int(in: 0...300), Gen<UInt64>.uint64().array(of: 1...6), Gen<Bool>.bool, Gen<Bool>.bool
        ) { count, words, superPackets, tiny in
            let message = Self.message(count: count, words: words, superPackets: superPackets, tiny: tiny)
            for minimumDetached in [Int.max, TunnelFrame.minimumDetachedPayload] {
                let expected = TunnelMessageScalarEncodingTests.generalFrame(message, detachingDataOf: minimumDetached)
                var frame = ByteBuffer(string: "ab")  // offsets count from the writer index, not from 0
                guard let detached = try? TunnelFrame.writeFrame(message, into: &frame, detachingDataOf: minimumDetached) as BinaryPropertyListWriter.Detached?? else {
                    let length = expected.frame.readableBytes + (expected.detached?.bytes.readableBytes ?? 0)
                    #expect(length > TunnelWireLimits.maximumFrameLength, "refused only over the limit")
                    #expect(frame == ByteBuffer(string: "ab"), "nothing written")
                    continue
                }
                frame.moveReaderIndex(forwardBy: 2)
                #expect(frame == expected.frame, "\(count) packets, detaching from \(minimumDetached)")
                #expect(detached?.offset == expected.detached.map { $0.offset + 2 })
                #expect(detached?.bytes == expected.detached?.bytes)
            }
            guard let whole = try? Self.frame(message) else {
                // Encoding may fail only where the writer refuses the frame's size; anything else must be read back.
                let general = TunnelMessageScalarEncodingTests.generalFrame(message, detachingDataOf: Int.max)
                #expect(general.frame.readableBytes > TunnelWireLimits.maximumFrameLength, "refused only over the limit")
                return
            }
            let document = Self.document(of: whole)
            let direct = PacketsFrameReader.read(document)
            #expect((direct != nil) == (count <= PacketsFrameReader.maximumPackets), "read directly up to the limit, \(count) packets")
            if let direct { #expect(direct == message) }
            #expect((try? TunnelFrame.decodeMessage(payload: document)) == message)
            #expect((try? TunnelFrame.decodeMessageThroughPropertyList(payload: document)) == message)
        }
    }

    /// Frames from the one-pass writer, as CoreFoundation and Python's plistlib
    /// read them: each understands the document as our general reader does.
    static let foreignReaderMessages = [
        message(count: 1, words: [7], superPackets: false),
        message(count: 3, words: [0x1234_5678_9ABC, 7, 40], superPackets: true),
        message(count: 200, words: [3, 9, 14], superPackets: false, tiny: true),
        message(count: 40, words: [5, 0xFFFF_0000_1111, 21], superPackets: true),
    ]

    @Test func coreFoundationReadsTheOnePassWritersFrames() throws {
        for message in Self.foreignReaderMessages {
            let document = Self.document(of: try Self.frame(message))
            let ours = try BinaryPropertyListReader.read(document)
            #expect(try ExternalPropertyListReaders.roundTripThroughCoreFoundation(document) == ours)
        }
    }

    @Test(.enabled(if: TestRequirements.met(ExternalProcess.isPythonAvailable, "python3")), .timeLimit(.minutes(3)))
    func plistlibReadsTheOnePassWritersFrames() async throws {
        for message in Self.foreignReaderMessages {
            let document = Self.document(of: try Self.frame(message))
            let ours = try BinaryPropertyListReader.read(document)
            #expect(try await ExternalPropertyListReaders.roundTripThroughPlistlib(document) == ours)
        }
    }

    /// Every single-byte change of a frame our writer made: whatever the
    /// direct reader still takes, the general reader takes as the same message.
    @Test(arguments: [false, true])
    func aChangedByteIsReadAsTheGeneralReaderReadsItOrLeftToIt(superPackets: Bool) throws {
        let message = Self.message(count: 3, words: [0x1234_5678_9ABC, 7, 40], superPackets: superPackets)
        let document = Self.document(of: try Self.frame(message))
        var directlyRead = 0
        for offset in 0..<document.readableBytes {
            for replacement: UInt8 in [0x00, 0x01, 0x0F, 0x10, 0x13, 0x4F, 0xA3, 0xD5, 0xFF] {
                var changed = ByteBuffer(buffer: document)
                changed.setInteger(replacement, at: changed.readerIndex + offset)
                guard let direct = PacketsFrameReader.read(changed) else { continue }
                directlyRead += 1
                #expect((try? TunnelFrame.decodeMessageThroughPropertyList(payload: changed)) == direct, "byte \(offset) set to \(replacement)")
            }
        }
        // Payload bytes and values change freely; the layout does not.
        #expect(directlyRead > 0)
    }

    @Test func moreThanTheDirectReadersLimitIsLeftToTheGeneralReaderAndTwoByteReferencesAreReadDirectly() throws {
        for (count, direct) in [(PacketsFrameReader.maximumPackets, true), (PacketsFrameReader.maximumPackets + 1, false)] {
            let message = Self.message(count: count, words: [11, 13], superPackets: true, tiny: true)
            let document = Self.document(of: try Self.frame(message))
            #expect(PacketsDocumentLayout(count: count, carriesSegmentSizes: true).referenceWidth == 2)
            #expect((PacketsFrameReader.read(document) != nil) == direct, "\(count) packets")
            #expect(try TunnelFrame.decodeMessage(payload: document) == message)
        }
    }

    @Test func anotherWritersLayoutIsLeftToTheGeneralReader() throws {
        let message = Self.message(count: 4, words: [3, 5, 8], superPackets: true)
        // Sorted keys ("command" first), as a general property-list writer would order them.
        let sorted = BinaryPropertyListWriter.bytes(message.propertyList)
        #expect(PacketsFrameReader.read(sorted) == nil)
        #expect(try TunnelFrame.decodeMessage(payload: sorted) == message)
    }

    @Test func otherMessagesAndRefusedValuesAreLeftToTheGeneralReader() throws {
        let open = Self.document(of: try Self.frame(.open(identifier: 9, request: .udp)))
        #expect(PacketsFrameReader.read(open) == nil)
        #expect(try TunnelFrame.decodeMessage(payload: open) == .open(identifier: 9, request: .udp))

        // A segment size outside 0-65535: the general reader names the error.
        var entries = TunnelMessage.packets(identifier: 1, packets: [TunnelPacket(bytes: ByteBuffer(string: "x"), protocolNumber: 2, segmentSize: 5)]).propertyListEntries
        entries[4].value = .array([.integer(70_000)])
        var document = ByteBuffer()
        BinaryPropertyListWriter.writeDictionary(entries, into: &document)
        #expect(PacketsFrameReader.read(document) == nil)
        #expect(throws: TunnelWireError.self) { try TunnelFrame.decodeMessage(payload: document) }
    }

    @Test func fixturesDecodeAlikeOnBothPaths() throws {
        for (folder, names) in [("valid", FixtureTests.valid), ("invalid", FixtureTests.invalid)] {
            for name in names {
                var frame = try FixtureTests.load(folder, name).frame
                guard let payload = try? TunnelFrameDecoder.nextPayload(from: &frame) else { continue }
                // Both decode to the same message, or both refuse.
                let direct = try? TunnelFrame.decodeMessage(payload: payload)
                let general = try? TunnelFrame.decodeMessageThroughPropertyList(payload: payload)
                #expect(direct == general, "\(folder)/\(name)")
            }
        }
    }
}
