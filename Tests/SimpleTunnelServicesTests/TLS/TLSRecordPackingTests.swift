import NIOCore
import NIOEmbedded
import Testing
@testable import SimpleTunnelServices

/// Our client and server handlers on embedded channels, bytes shuttled by
/// hand, so the records on the wire can be inspected and reads cut at will.
@Suite("TLS: records on embedded channels")
struct TLSRecordPackingTests {
    /// TLS 1.3 application data: 5-byte header, plaintext, content type, 16-byte tag.
    static let fullRecordLength = 16_384 + 1 + 16

    @Test func piecesOfEverySizeArriveInOrderInFullRecordsWithTheirPromises() throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        let (client, server) = try Self.connectedPair(pki)
        try Self.shuttle(client, server)

        let sizes = [40, 65_536, 30, 1, 16_383, 16_385, 0, 100_000, 7, 300_000, 45]
        // More than `TLSHandler.batchSize` in all: part is encrypted before the flush.
        var expected = ByteBuffer()
        var completions: [Int] = []
        for (number, size) in sizes.enumerated() {
            var bytes = ByteBuffer(bytes: (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ number) })
            client.write(bytes).assumeIsolated().whenSuccess { completions.append(number) }
            expected.writeBuffer(&bytes)
        }
        client.flush()

        var ciphertext = ByteBuffer()
        while var chunk = try client.readOutbound(as: ByteBuffer.self) {
            ciphertext.writeBuffer(&chunk)
        }
        let records = Self.recordLengths(ciphertext)
        #expect(records.dropLast().allSatisfy { $0 == Self.fullRecordLength }, "\(records)")
        #expect(records.count == (expected.readableBytes + 16_383) / 16_384)
        #expect(completions == Array(sizes.indices), "every promise, in write order")

        try server.writeInbound(ciphertext)
        #expect(try Self.drainInbound(server) == expected)
        _ = try? client.finish()
        _ = try? server.finish()
    }

    /// Our client and server handlers on two embedded channels, connected but not yet shaken hands.
    static func connectedPair(_ pki: TestPKI) throws -> (client: EmbeddedChannel, server: EmbeddedChannel) {
        let client = EmbeddedChannel()
        let server = EmbeddedChannel()
        try client.pipeline.syncOperations.addHandler(
            TLSHandler(context: TLSContext(configuration: .client(trust: .caFile(pki.caFile), serverName: "localhost"))))
        try server.pipeline.syncOperations.addHandler(TLSHandler(context: TLSContext(configuration: pki.serverConfiguration())))
        let address = try SocketAddress(ipAddress: "127.0.0.1", port: 1)
        try server.connect(to: address).wait()
        try client.connect(to: address).wait()
        return (client, server)
    }

    /// Moves bytes both ways until neither side has more to say, each
    /// buffer cut into reads of at most `pieceSize` bytes.
    static func shuttle(_ a: EmbeddedChannel, _ b: EmbeddedChannel, pieceSize: Int = .max) throws {
        var moved = true
        while moved {
            moved = false
            for (from, to) in [(a, b), (b, a)] {
                while var bytes = try from.readOutbound(as: ByteBuffer.self) {
                    while let piece = bytes.readSlice(length: min(pieceSize, bytes.readableBytes)), piece.readableBytes > 0 {
                        to.pipeline.fireChannelRead(piece)
                    }
                    to.pipeline.fireChannelReadComplete()
                    moved = true
                }
            }
        }
    }

    /// Ciphertext arriving in odd pieces, records split across reads, is
    /// lent to OpenSSL buffer by buffer and loses nothing, handshake included.
    @Test(arguments: [1, 7, 5_000])
    func ciphertextInSmallPiecesArrivesIntact(pieceSize: Int) throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        let (client, server) = try Self.connectedPair(pki)
        let upstream = ByteBuffer(bytes: (0..<70_000).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        let downstream = ByteBuffer(bytes: (0..<40_000).map { UInt8(truncatingIfNeeded: $0 &* 13) })
        client.writeAndFlush(upstream, promise: nil)  // queued until the handshake completes
        try Self.shuttle(client, server, pieceSize: pieceSize)
        server.writeAndFlush(downstream, promise: nil)
        try Self.shuttle(client, server, pieceSize: pieceSize)
        #expect(try Self.drainInbound(server) == upstream)
        #expect(try Self.drainInbound(client) == downstream)
        _ = try? client.finish()
        _ = try? server.finish()
    }

    static func drainInbound(_ channel: EmbeddedChannel) throws -> ByteBuffer {
        var received = ByteBuffer()
        while var chunk = try channel.readInbound(as: ByteBuffer.self) {
            received.writeBuffer(&chunk)
        }
        return received
    }

    /// The length field of each TLS record in `bytes`.
    static func recordLengths(_ bytes: ByteBuffer) -> [Int] {
        var bytes = bytes
        var lengths: [Int] = []
        while bytes.readableBytes >= 5, let length = bytes.getInteger(at: bytes.readerIndex + 3, as: UInt16.self) {
            lengths.append(Int(length))
            bytes.moveReaderIndex(forwardBy: min(bytes.readableBytes, 5 + Int(length)))
        }
        return lengths
    }
}
