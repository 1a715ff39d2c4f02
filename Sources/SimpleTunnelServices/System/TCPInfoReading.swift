import NIOCore

/// What the kernel says about one TCP connection's sending (TCP_INFO), the
/// fields the tunnel's pacing reads. Parsed by offset from the bytes
/// `getsockopt` fills (Linux's `struct tcp_info`, whose layout only grows),
/// as glibc's own declaration stops before the delivery rate.
struct TCPInfoReading: Sendable, Hashable {
    /// Bytes per second over the last sample (`tcpi_delivery_rate`); 0 when unknown.
    var deliveryRate: UInt64
    /// The congestion window, in segments (`tcpi_snd_cwnd`).
    var congestionWindow: UInt32
    /// Segments in flight, sent and not acknowledged (`tcpi_unacked`).
    var unacknowledged: UInt32
    /// Bytes per segment sent (`tcpi_snd_mss`).
    var segmentSize: UInt32
    /// The lowest round trip seen, in microseconds (`tcpi_min_rtt`); 0 when unknown.
    var minimumRoundTripMicroseconds: UInt32
    /// The smoothed round trip, in microseconds (`tcpi_rtt`).
    var roundTripMicroseconds: UInt32
    /// Bytes written and not yet sent (`tcpi_notsent_bytes`); nil from a kernel too old to say.
    var unsentBytes: UInt32?
    /// Bytes the peer acknowledged since the connection began (`tcpi_bytes_acked`); 0 when unknown.
    var bytesAcknowledged: UInt64 = 0

    /// Bytes in flight.
    var bytesInFlight: Int { Int(unacknowledged) * Int(segmentSize) }

    init(
        deliveryRate: UInt64, congestionWindow: UInt32, unacknowledged: UInt32, segmentSize: UInt32,
        minimumRoundTripMicroseconds: UInt32, roundTripMicroseconds: UInt32, unsentBytes: UInt32?
    ) {
        self.deliveryRate = deliveryRate
        self.congestionWindow = congestionWindow
        self.unacknowledged = unacknowledged
        self.segmentSize = segmentSize
        self.minimumRoundTripMicroseconds = minimumRoundTripMicroseconds
        self.roundTripMicroseconds = roundTripMicroseconds
        self.unsentBytes = unsentBytes
    }

    // Offsets in `struct tcp_info` (linux/tcp.h).
    private static let segmentSizeOffset = 16
    private static let unacknowledgedOffset = 24
    private static let roundTripOffset = 68
    private static let congestionWindowOffset = 80
    private static let bytesAcknowledgedOffset = 120
    private static let unsentOffset = 144
    private static let minimumRoundTripOffset = 148
    private static let deliveryRateOffset = 160
    /// Up to `tcpi_total_retrans`: every kernel since 2.6 fills this much.
    private static let oldestLength = 104

    /// Reads the fields from what `getsockopt(TCP_INFO)` wrote; nil if it is
    /// too short to be a `tcp_info`. Fields past what an older kernel fills
    /// read as unknown (`getsockopt` leaves them zero).
    init?(bytes: some Collection<UInt8>) {
        let bytes = Array(bytes)
        guard bytes.count >= Self.oldestLength else { return nil }
        func field<T: FixedWidthInteger>(_ offset: Int, as: T.Type) -> T? {
            guard offset + MemoryLayout<T>.size <= bytes.count else { return nil }
            var value = T.zero
            for index in (0..<MemoryLayout<T>.size).reversed() {
                value = value << 8 | T(bytes[offset + index])  // little-endian, as on every machine we run on
            }
            return value
        }
        self.init(
            deliveryRate: field(Self.deliveryRateOffset, as: UInt64.self) ?? 0,
            congestionWindow: field(Self.congestionWindowOffset, as: UInt32.self) ?? 0,
            unacknowledged: field(Self.unacknowledgedOffset, as: UInt32.self) ?? 0,
            segmentSize: field(Self.segmentSizeOffset, as: UInt32.self) ?? 0,
            minimumRoundTripMicroseconds: field(Self.minimumRoundTripOffset, as: UInt32.self) ?? 0,
            roundTripMicroseconds: field(Self.roundTripOffset, as: UInt32.self) ?? 0,
            unsentBytes: field(Self.unsentOffset, as: UInt32.self))
        self.bytesAcknowledged = field(Self.bytesAcknowledgedOffset, as: UInt64.self) ?? 0
    }
}

/// Room for `getsockopt(TCP_INFO)` to fill: Linux 6's `struct tcp_info` is
/// 232 bytes; a newer kernel's longer one is cut to this, an older one leaves
/// the rest zero.
struct RawTCPInfo: Sendable {
    var storage: (
        UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64,
        UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64,
        UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64
    ) = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)

    var reading: TCPInfoReading? {
        withUnsafeBytes(of: storage) { TCPInfoReading(bytes: $0) }
    }
}

extension TCPInfoReading {
    /// Reads TCP_INFO of a channel's socket; nil for a channel without one (an
    /// embedded channel in tests). Completes at once on the channel's loop.
    static func read(from channel: Channel) -> EventLoopFuture<RawTCPInfo>? {
        guard let provider = channel as? SocketOptionProvider else { return nil }
        return provider.unsafeGetSocketOption(level: .tcp, name: .tcp_info)
    }
}
