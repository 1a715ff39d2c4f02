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

    @Test func flushedWritesArePackedIntoFullRecordsInOrder() throws {
        let loop = EmbeddedEventLoop()
        var queue = PendingWrites()
        let sizes = [10, 20_000, 30, 40_000, 0, 5]
        var promises: [EventLoopPromise<Void>] = []
        var expected = ByteBuffer()
        for (number, size) in sizes.enumerated() {
            var bytes = ByteBuffer(repeating: UInt8(number + 1), count: size)
            promises.append(loop.makePromise(of: Void.self))
            queue.append(bytes, promise: promises.last)
            expected.writeBuffer(&bytes)
        }
        queue.markAllFlushed()
        queue.append(ByteBuffer(string: "unflushed"), promise: nil)
        var chunks: [(size: Int, promises: Int)] = []
        var joined = ByteBuffer()
        var finished: [EventLoopPromise<Void>] = []
        while var chunk = queue.nextFlushedChunk(recordSize: 16_384, maximum: 32_768) {
            chunks.append((chunk.plaintext.readableBytes, chunk.promises.count))
            joined.writeBuffer(&chunk.plaintext)
            finished += chunk.promises
        }
        #expect(joined == expected)
        // 10 + 16_374 gathered; 3_626 + 30 + 12_728 gathered; 27_272 left: one direct record, then the rest gathered.
        #expect(chunks.map(\.size) == [16_384, 16_384, 16_384, 10_888 + 5])
        #expect(chunks.map(\.promises) == [1, 2, 0, 3])
        #expect(finished.map { $0.futureResult } == promises.map { $0.futureResult }, "in write order")
        #expect(queue.byteCount == 9, "only the unflushed write is left")
        for promise in promises { promise.succeed() }
    }
}

