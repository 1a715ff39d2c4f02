import NIOCore

/// Plaintext writes not yet encrypted, in order, with how many of them the
/// user has flushed. Writes wait here during the handshake.
struct PendingWrites {
    private var writes = CircularBuffer<(buffer: ByteBuffer, promise: EventLoopPromise<Void>?)>()
    /// The first `flushedCount` writes are flushed.
    private var flushedCount = 0
    /// Plaintext bytes held, flushed or not.
    private(set) var byteCount = 0

    var isEmpty: Bool { writes.isEmpty }
    var hasFlushed: Bool { flushedCount > 0 }

    mutating func append(_ buffer: ByteBuffer, promise: EventLoopPromise<Void>?) {
        writes.append((buffer, promise))
        byteCount += buffer.readableBytes
    }

    /// Everything held becomes ready to encrypt: on flush, or early when
    /// enough has piled up (see `TLSHandler.batchSize`).
    mutating func markAllFlushed() {
        flushedCount = writes.count
    }

    mutating func popFlushed() -> (buffer: ByteBuffer, promise: EventLoopPromise<Void>?)? {
        guard flushedCount > 0 else { return nil }
        flushedCount -= 1
        let write = writes.removeFirst()
        byteCount -= write.buffer.readableBytes
        return write
    }

    /// Puts back a flushed write that could not be encrypted yet.
    mutating func pushBackFlushed(_ buffer: ByteBuffer, promise: EventLoopPromise<Void>?) {
        writes.prepend((buffer, promise))
        flushedCount += 1
        byteCount += buffer.readableBytes
    }

    mutating func failAll(_ error: Error) {
        let failed = writes
        writes.removeAll()
        flushedCount = 0
        byteCount = 0
        for write in failed {
            write.promise?.fail(error)
        }
    }
}
