import NIOCore

/// Plaintext writes not yet encrypted, in order, with how many of them the
/// user has flushed. Writes wait here during the handshake.
struct PendingWrites {
    private var writes = CircularBuffer<(buffer: ByteBuffer, promise: EventLoopPromise<Void>?)>()
    /// The first `flushedCount` writes are flushed.
    private var flushedCount = 0
    /// Plaintext bytes held, flushed or not.
    private(set) var byteCount = 0
    /// Of those, flushed.
    private var flushedByteCount = 0
    /// Scratch for `nextFlushedChunk`: one record gathered from small pieces.
    private var gather = ByteBuffer()

    var isEmpty: Bool { writes.isEmpty }
    var hasFlushed: Bool { flushedCount > 0 }

    mutating func append(_ buffer: ByteBuffer, promise: EventLoopPromise<Void>?) {
        writes.append((buffer, promise))
        byteCount += buffer.readableBytes
    }

    /// Everything held becomes ready to encrypt: on flush, or early when
    /// enough has piled up (see `TLSHandler.batchSize`, which the tunnel sets to its link's pace).
    mutating func markAllFlushed() {
        flushedCount = writes.count
        flushedByteCount = byteCount
    }

    mutating func popFlushed() -> (buffer: ByteBuffer, promise: EventLoopPromise<Void>?)? {
        guard flushedCount > 0 else { return nil }
        flushedCount -= 1
        let write = writes.removeFirst()
        byteCount -= write.buffer.readableBytes
        flushedByteCount -= write.buffer.readableBytes
        return write
    }

    /// The next plaintext to encrypt, taken from the front of the flushed
    /// writes, with the promises of the writes it finishes. Whole records come
    /// straight from a write (up to `maximum` bytes, no copy); smaller
    /// remainders and small writes are gathered into one record's worth, so a
    /// frame sent as header, payload and trailer makes full records and no
    /// small record per piece. With `wholeRecordsOnly`, a last part smaller
    /// than a record stays queued (for writes the user has not flushed yet).
    mutating func nextFlushedChunk(
        recordSize: Int, maximum: Int, wholeRecordsOnly: Bool = false
    ) -> (plaintext: ByteBuffer, promises: [EventLoopPromise<Void>])? {
        guard flushedCount > 0, !wholeRecordsOnly || flushedByteCount >= recordSize else { return nil }
        let front = writes[writes.startIndex].buffer.readableBytes
        if front >= recordSize {
            let records = max(1, min(front, maximum) / recordSize)
            let (slice, promise) = takeFromFront(records * recordSize)
            return (slice, promise.map { [$0] } ?? [])
        }
        // Reuses the scratch's storage when the last gathered record has been released.
        gather.clear(minimumCapacity: recordSize)
        var promises: [EventLoopPromise<Void>] = []
        while flushedCount > 0, gather.readableBytes < recordSize {
            let available = writes[writes.startIndex].buffer.readableBytes
            var (slice, promise) = takeFromFront(min(available, recordSize - gather.readableBytes))
            gather.writeBuffer(&slice)
            if let promise { promises.append(promise) }
        }
        return (gather, promises)
    }

    /// The first `length` bytes of the first flushed write, and its promise
    /// if that empties (and pops) it.
    private mutating func takeFromFront(_ length: Int) -> (ByteBuffer, EventLoopPromise<Void>?) {
        let index = writes.startIndex
        let slice = writes[index].buffer.readSlice(length: length) ?? ByteBuffer()
        byteCount -= slice.readableBytes
        flushedByteCount -= slice.readableBytes
        guard writes[index].buffer.readableBytes == 0 else { return (slice, nil) }
        flushedCount -= 1
        return (slice, writes.removeFirst().promise)
    }

    /// Puts back a flushed write that could not be encrypted yet.
    mutating func pushBackFlushed(_ buffer: ByteBuffer, promise: EventLoopPromise<Void>?) {
        writes.prepend((buffer, promise))
        flushedCount += 1
        byteCount += buffer.readableBytes
        flushedByteCount += buffer.readableBytes
    }

    mutating func failAll(_ error: Error) {
        let failed = writes
        writes.removeAll()
        flushedCount = 0
        byteCount = 0
        flushedByteCount = 0
        gather = ByteBuffer()
        for write in failed {
            write.promise?.fail(error)
        }
    }
}
