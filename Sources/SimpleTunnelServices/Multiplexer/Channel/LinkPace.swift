import NIOCore

/// How much may wait between the multiplexer's schedule and the wire, sized
/// to the tunnel's measured rate, as a value: fed TCP_INFO readings of the
/// tunnel's socket, it says the sizes the handlers apply.
///
/// What the schedule has handed down (a flow's turn, TLS records not yet in
/// the channel, the channel's buffer, the kernel's unsent bytes) is what a
/// keystroke waits behind. Fixed sizes that suit a loopback at gigabits are,
/// on a 10 Mbit/s link, a standing queue of a tenth of a second. So the room
/// is a few milliseconds of the rate the connection delivers (as Tor's KIST
/// sizes its writes from TCP_INFO), never less than a few segments (so the
/// kernel always has the next one ready), and never more than the fixed
/// sizes that give a loopback its throughput.
struct LinkPace: Sendable {
    struct Policy: Sendable, Hashable {
        /// The time of link the room holds: enough for the event loop to
        /// refill the socket before it runs dry, small beside a round trip.
        /// 4 ms left an echo 4-9 ms behind direct TCP's at 40 Mbit/s; at
        /// 2 ms downloads still kept 96-100% of the link
        /// (Benchmarks/latency-under-load.sh at 10, 40 and 200 Mbit/s).
        var horizon: TimeAmount = .milliseconds(2)
        /// The least room, for the slowest links: a few segments.
        var minimumBytes = 4 * 1024
        /// The most room: the sizes a loopback's throughput was measured
        /// with (Benchmarks/app-layer.sh), reached from about 260 Mbit/s up.
        var maximumBytes = 64 * 1024
        /// Sizes move in steps of this much, so a rate that wobbles does not
        /// reset socket options at every reading.
        var step = 2 * 1024
        /// The rate is the highest delivery rate seen over the last one to two
        /// of these: an app-limited sample (a pause in the download) does
        /// not shrink the room, a link that got slower does within this.
        var window: TimeAmount = .seconds(1)
    }

    /// The sizes that follow from a rate.
    struct Sizes: Sendable, Hashable {
        /// The room in all: bytes between the schedule and the wire.
        var room: Int
        /// Payload one flow sends per turn; at most `TunnelMultiplexer.Limits.maximumDataChunk`.
        var turn: Int { room }
        /// Plaintext TLS encrypts and hands to the channel at once, flushed or not.
        var tlsBatch: Int { room }
        /// The channel's outbound buffer: full at `room`, writable again below half.
        var channelWaterMark: ChannelOptions.Types.WriteBufferWaterMark { .init(low: room / 2, high: room) }
        /// TCP_NOTSENT_LOWAT: a quarter of the room, so that three quarters
        /// of it are bytes the schedule still orders; but at least two
        /// segments, so the kernel has the next one ready when an ack opens
        /// the window; and never more than a quarter of the largest room
        /// (a loopback's segment is 64 KiB: its mark stays the 16 KiB measured).
        let unsentLowWatermark: Int

        init(room: Int, segmentSize: Int, maximumRoom: Int) {
            self.room = room
            self.unsentLowWatermark = min(max(room / 4, 2 * segmentSize), maximumRoom / 4)
        }

        /// A fast link's sizes, those a tunnel starts with: 64 KiB of room,
        /// 16 KiB unsent in the kernel, the channel full at 64 KiB and
        /// writable again below 32 KiB.
        static let fastest = LinkPace(policy: Policy()).sizes
    }

    let policy: Policy
    /// The highest rate of the current window and of the one before (bytes per second).
    private var currentMaximum: UInt64 = 0
    private var previousMaximum: UInt64 = 0
    private var windowStart: NIODeadline?
    /// Ethernet's, until a reading says.
    private var segmentSize = 1448

    init(policy: Policy = Policy()) {
        self.policy = policy
    }

    /// The rate estimate, bytes per second; nil before any reading gave one.
    var rate: UInt64? {
        let rate = max(currentMaximum, previousMaximum)
        return rate > 0 ? rate : nil
    }

    /// Before any reading: the largest sizes, those of a fast link.
    var sizes: Sizes {
        guard let rate else { return Sizes(room: policy.maximumBytes, segmentSize: segmentSize, maximumRoom: policy.maximumBytes) }
        let horizonBytes = Double(rate) * Double(policy.horizon.nanoseconds) / 1e9
        let stepped = (Int(min(horizonBytes, Double(policy.maximumBytes))) + policy.step - 1) / policy.step * policy.step
        let floor = max(policy.minimumBytes, 2 * segmentSize)
        return Sizes(room: min(policy.maximumBytes, max(floor, stepped)), segmentSize: segmentSize, maximumRoom: policy.maximumBytes)
    }

    /// Takes one reading made at `now`.
    ///
    /// The rate is what the peer acknowledged between two readings at least
    /// `minimumInterval` apart: over that long the kernel's per-ack samples
    /// (`tcpi_delivery_rate`), which a burst of compressed acks can put at
    /// several times the link, average out. A kernel that does not count
    /// acknowledged bytes gives its delivery rate instead.
    mutating func update(_ reading: TCPInfoReading, at now: NIODeadline) {
        if reading.segmentSize > 0 {
            segmentSize = Int(reading.segmentSize)
        }
        guard reading.bytesAcknowledged > 0 else {
            add(Self.rate(of: reading), at: now)
            return
        }
        guard let last = lastAcknowledged, reading.bytesAcknowledged >= last.bytes else {
            lastAcknowledged = (reading.bytesAcknowledged, now)
            return
        }
        let elapsed = now - last.at
        guard elapsed >= Self.minimumInterval else { return }
        lastAcknowledged = (reading.bytesAcknowledged, now)
        add((reading.bytesAcknowledged - last.bytes) * 1_000_000_000 / UInt64(elapsed.nanoseconds), at: now)
    }

    /// Long enough that acknowledgements bunched by a busy machine (the
    /// peer's, or a shaper's burst) average out: over 10 ms a full parallel
    /// test run measured a 10 Mbit/s link at over ten times its rate.
    static let minimumInterval: TimeAmount = .milliseconds(100)
    private var lastAcknowledged: (bytes: UInt64, at: NIODeadline)?

    private mutating func add(_ sample: UInt64, at now: NIODeadline) {
        if let start = windowStart, now - start < policy.window {
            currentMaximum = max(currentMaximum, sample)
        } else {
            // A new window: one sample into it, the old one still counts.
            let sinceStart = windowStart.map { now - $0 } ?? .zero
            previousMaximum = sinceStart < policy.window * 2 ? currentMaximum : 0
            currentMaximum = sample
            windowStart = now
        }
    }

    /// One reading's rate, from a kernel that does not count acknowledged
    /// bytes: the delivery rate it measured, or a window per round trip.
    static func rate(of reading: TCPInfoReading) -> UInt64 {
        if reading.deliveryRate > 0 { return reading.deliveryRate }
        let roundTrip = reading.minimumRoundTripMicroseconds > 0 ? reading.minimumRoundTripMicroseconds : reading.roundTripMicroseconds
        guard roundTrip > 0 else { return 0 }
        return UInt64(reading.congestionWindow) * UInt64(reading.segmentSize) * 1_000_000 / UInt64(roundTrip)
    }
}

/// One look at what waits in front of a tunnel's link: for logs, status and
/// the tests that hold the queue to its room.
public struct TunnelQueueReading: Sendable, Hashable {
    /// The rate estimate then, bytes per second.
    public var rate: UInt64?
    /// The room in force then (`LinkPace.Sizes.room`) and the kernel's unsent mark.
    public var room: Int
    public var unsentLowWatermark: Int
    /// Payload one flow may send per turn (what an echo may wait behind in
    /// the schedule), and plaintext the tunnel's TLS holds, not yet sealed into
    /// records: read live when asked (`TunnelChannelHandler.queueNow`), not at
    /// each pace reading.
    public var turnBytes = 0
    /// Bytes waiting in the flows' queues for a turn, read live as the turn is.
    public var flowQueueBytes = 0
    public var tlsPlaintextBytes = 0
    /// Ciphertext in the channel's outbound buffer, not yet taken by the kernel.
    public var channelBytes: Int
    /// Bytes the kernel held unsent; nil from a kernel too old to say.
    public var unsentBytes: Int?
    /// Bytes sent and not yet acknowledged.
    public var bytesInFlight: Int
}
