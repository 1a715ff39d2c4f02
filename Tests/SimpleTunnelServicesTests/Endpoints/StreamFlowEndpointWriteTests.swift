import NIOCore
import NIOEmbedded
import Testing
@testable import SimpleTunnelServices

@Suite("A TCP flow's socket: what waits for a slow destination")
struct StreamFlowEndpointWriteTests {
    /// Data arrives as slices of the buffer a whole frame (or several) was
    /// decrypted into. Budgets count the slice's bytes; a slice left waiting
    /// in the socket's queue would keep its whole parent buffer resident.
    @Test func bytesThatWaitNoLongerHoldTheBufferTheyCameIn() throws {
        let channel = EmbeddedChannel()
        let endpoint = StreamFlowEndpoint(reporter: .unheard)
        try channel.pipeline.syncOperations.addHandler(endpoint)
        let received = ByteBuffer(repeating: 7, count: 128 * 1024)
        let data = try #require(received.getSlice(at: 1000, length: 1000))

        endpoint.write(data, to: nil)  // the destination keeps up: passed on as it is
        channel.isWritable = false
        endpoint.write(data, to: nil)  // it does not: this will wait
        endpoint.flush()

        let passed = try #require(try channel.readOutbound(as: ByteBuffer.self))
        let waited = try #require(try channel.readOutbound(as: ByteBuffer.self))
        #expect(passed == data && waited == data)
        #expect(passed.storageCapacity == received.storageCapacity)
        #expect(waited.storageCapacity < 2 * data.readableBytes)
        _ = try channel.finish(acceptAlreadyClosed: true)
    }
}
