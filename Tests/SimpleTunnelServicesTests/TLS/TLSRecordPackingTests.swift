import NIOCore
import NIOEmbedded
import Testing
@testable import SimpleTunnelServices

/// Our client and server handlers on embedded channels, bytes shuttled by
/// hand, so the records on the wire can be inspected.
@Suite("TLS: writes packed into records")
struct TLSRecordPackingTests {
    /// TLS 1.3 application data: 5-byte header, plaintext, content type, 16-byte tag.
    static let fullRecordLength = 16_384 + 1 + 16

    @Test func piecesOfEverySizeArriveInOrderInFullRecordsWithTheirPromises() throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        let client = EmbeddedChannel()
        let server = EmbeddedChannel()
        try client.pipeline.syncOperations.addHandler(
            TLSHandler(context: TLSContext(configuration: .client(trust: .caFile(pki.caFile), serverName: "localhost"))))
        try server.pipeline.syncOperations.addHandler(TLSHandler(context: TLSContext(configuration: pki.serverConfiguration())))
        let address = try SocketAddress(ipAddress: "127.0.0.1", port: 1)
        try server.connect(to: address).wait()
        try client.connect(to: address).wait()
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
        var received = ByteBuffer()
        while var chunk = try server.readInbound(as: ByteBuffer.self) {
            received.writeBuffer(&chunk)
        }
        #expect(received == expected)
        _ = try? client.finish()
        _ = try? server.finish()
    }

    /// Moves bytes both ways until neither side has more to say.
    static func shuttle(_ a: EmbeddedChannel, _ b: EmbeddedChannel) throws {
        var moved = true
        while moved {
            moved = false
            for (from, to) in [(a, b), (b, a)] {
                while let bytes = try from.readOutbound(as: ByteBuffer.self) {
                    try to.writeInbound(bytes)
                    moved = true
                }
            }
        }
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
