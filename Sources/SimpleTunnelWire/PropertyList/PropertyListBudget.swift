/// What reading one document may cost, mostly in proportion to its length, so that a
/// hostile peer's frame (read before the login gate) cannot make a reader hold
/// much memory or spend much time (PROTOCOL.md B5). Every charge beyond a limit
/// is `PropertyListError.tooComplex`, which ends the tunnel.
///
/// For a document of `n` bytes:
/// - **values** produced, counting every reference (a shared object counts at
///   each use): `n + 16`. Walking the result (comparing, hashing, turning it into
///   a message) is then linear in `n` however objects are shared.
/// - **content bytes**, the encoded bytes of the string and data objects read,
///   each object once: `n`. Objects that do not overlap always fit; only offsets
///   that alias one another's bytes could exceed it. A string's storage is at most
///   1.5 times its encoded bytes (a 2-byte UTF-16 unit becomes at most 3 UTF-8 bytes).
/// - **heap bytes**, an estimate of the storage of the arrays, dictionaries and
///   heap strings built: 768 KiB for any document a frame can carry (larger ones,
///   only configuration files, get 8 bytes more per byte). This is what keeps a
///   frame's decoding under 1 MiB: a value is 32 bytes, so one array of 128 Ki
///   one-byte references to one object would take 4 MiB. It is not proportional to
///   the length because honest documents full of small dictionaries (a list of
///   routes) build about 12 bytes per byte; what a tunnel may hold is what matters.
/// - **key bytes** hashed into dictionaries: `8n + 64 KiB`, so one long key used
///   by thousands of entries cannot cost quadratic time.
struct PropertyListBudget {
    // 32-bit, so that the binary reader's parser stays small enough to be
    // copied without a call to memcpy (it is, several times per object).
    private(set) var values: Int32
    private(set) var contentBytes: Int32
    private(set) var heapBytes: Int32
    private(set) var keyBytes: Int32
    private let documentLength: Int32

    static let heapBytesForAFrame = 768 * 1024

    init(documentLength: Int) {
        self.documentLength = Int32(clamping: documentLength)
        values = Int32(clamping: documentLength + 16)
        contentBytes = Int32(clamping: documentLength)
        heapBytes = Int32(clamping: Self.heapBytesForAFrame + 8 * max(0, documentLength - TunnelWireLimits.maximumFrameLength))
        keyBytes = Int32(clamping: 8 * documentLength + 64 * 1024)
    }

    @inline(__always)
    mutating func chargeValue() throws {
        values -= 1
        guard values >= 0 else {
            throw PropertyListError.tooComplex("more values than the \(documentLength)-byte document has bytes (shared references count at each use)")
        }
    }

    @inline(__always)
    mutating func chargeContent(_ count: Int) throws {
        guard count <= contentBytes else {
            throw PropertyListError.tooComplex("its strings and data add up to more bytes than the \(documentLength)-byte document (objects overlap)")
        }
        contentBytes -= Int32(count)
    }

    @inline(__always)
    mutating func chargeHeap(_ count: Int) throws {
        guard count <= heapBytes else {
            throw PropertyListError.tooComplex("its arrays, dictionaries and strings would take more than the \(Self(documentLength: Int(documentLength)).heapBytes) bytes allowed")
        }
        heapBytes -= Int32(count)
    }

    @inline(__always)
    mutating func chargeKey(_ count: Int) throws {
        guard count <= keyBytes else {
            throw PropertyListError.tooComplex("its dictionary keys add up to more than the \(Self(documentLength: Int(documentLength)).keyBytes) bytes allowed")
        }
        keyBytes -= Int32(count)
    }
}

/// Estimates of what Swift's storage for decoded values takes on the heap,
/// including the allocator's header; charged to `PropertyListBudget.heapBytes`.
enum PropertyListHeapCost {
    static let valueStride = MemoryLayout<PropertyListValue>.stride
    /// Allocator header plus the object and count fields of a native buffer.
    static let bufferHeader = 48

    /// One entry of a reader's table of shared values, with the table's slack.
    static let sharedEntry = 64

    static func array(count: Int) -> Int {
        count == 0 ? 0 : bufferHeader + count * valueStride
    }

    /// A native dictionary keeps at most 3/4 of its power-of-two buckets full;
    /// each bucket holds a key and a value and a bit of the occupancy map.
    static func dictionary(count: Int) -> Int {
        guard count > 0 else { return 0 }
        var buckets = 1
        while buckets * 3 < count * 4 { buckets *= 2 }
        return bufferHeader + 32 + buckets * (MemoryLayout<String>.stride + valueStride) + buckets / 8
    }

    /// One entry added to a growing dictionary: a key and a value per bucket,
    /// buckets at most 3/4 full, and up to twice the buckets needed after a doubling.
    static let growingDictionaryEntry = 2 * (MemoryLayout<String>.stride + valueStride) * 4 / 3

    /// Strings of up to 15 UTF-8 bytes live inside the `String` value itself.
    static func string(utf8Count: Int) -> Int {
        utf8Count <= 15 ? 0 : bufferHeader + utf8Count + 1
    }
}
