import NIOCore
import NIOEmbedded
import Testing
@testable import SimpleTunnelServices

@Suite("TLS: pending write queue")
struct TLSPendingWritesTests {
    @Test func onlyFlushedWritesComeOutInOrderAndBytesAreCounted() {
        var queue = PendingWrites()
        queue.append(ByteBuffer(string: "one"), promise: nil)
        queue.append(ByteBuffer(string: "two!"), promise: nil)
        #expect(queue.byteCount == 7)
        #expect(queue.popFlushed() == nil, "nothing is flushed yet")
        queue.markAllFlushed()
        queue.append(ByteBuffer(string: "later"), promise: nil)
        #expect(queue.popFlushed()?.buffer == ByteBuffer(string: "one"))
        #expect(queue.popFlushed()?.buffer == ByteBuffer(string: "two!"))
        #expect(queue.popFlushed() == nil, "\"later\" was written after the flush")
        #expect(queue.byteCount == 5)
        queue.pushBackFlushed(ByteBuffer(string: "again"), promise: nil)
        #expect(queue.popFlushed()?.buffer == ByteBuffer(string: "again"))
    }

    @Test func failAllFailsEveryPromiseAndEmptiesTheQueue() throws {
        let loop = EmbeddedEventLoop()
        var queue = PendingWrites()
        let first = loop.makePromise(of: Void.self)
        let second = loop.makePromise(of: Void.self)
        queue.append(ByteBuffer(string: "a"), promise: first)
        queue.markAllFlushed()
        queue.append(ByteBuffer(string: "b"), promise: second)
        queue.failAll(TLSError.uncleanShutdown)
        #expect(queue.isEmpty)
        #expect(queue.byteCount == 0)
        #expect(throws: TLSError.uncleanShutdown) { try first.futureResult.wait() }
        #expect(throws: TLSError.uncleanShutdown) { try second.futureResult.wait() }
    }
}
