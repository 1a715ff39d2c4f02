import NIOCore
import NIOEmbedded
import Testing
@testable import SimpleTunnelServices

/// The room between the multiplexer's schedule and the wire follows the rate
/// TCP_INFO reports: a few milliseconds of it, within a floor and a ceiling.
@Suite("Link pace")
struct LinkPaceTests {
    /// `struct tcp_info` as a kernel fills it, with the fields pacing reads
    /// set (offsets of linux/tcp.h) and every other byte left as noise.
    static func tcpInfoBytes(
        deliveryRate: UInt64, cwnd: UInt32, unacked: UInt32, mss: UInt32, minRTT: UInt32, rtt: UInt32, notsent: UInt32, acked: UInt64 = 0,
        length: Int = 232
    ) -> [UInt8] {
        var bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) }
        func put<T: FixedWidthInteger>(_ value: T, at offset: Int) {
            guard offset + MemoryLayout<T>.size <= length else { return }
            for index in 0..<MemoryLayout<T>.size {
                bytes[offset + index] = UInt8(truncatingIfNeeded: value >> (8 * index))
            }
        }
        put(mss, at: 16)
        put(unacked, at: 24)
        put(rtt, at: 68)
        put(cwnd, at: 80)
        put(notsent, at: 144)
        put(minRTT, at: 148)
        put(deliveryRate, at: 160)
        put(acked, at: 120)
        return bytes
    }

    /// A BBR sender mid-download on a 10 Mbit/s link, as `ss -ti` showed one.
    static let tenMegabit = tcpInfoBytes(deliveryRate: 1_250_000, cwnd: 14, unacked: 10, mss: 1448, minRTT: 10_000, rtt: 13_100, notsent: 4_200)
    /// The same at 40 Mbit/s and 200 Mbit/s.
    static let fortyMegabit = tcpInfoBytes(deliveryRate: 5_000_000, cwnd: 36, unacked: 29, mss: 1448, minRTT: 5_000, rtt: 6_600, notsent: 8_000)
    static let twoHundredMegabit = tcpInfoBytes(deliveryRate: 25_000_000, cwnd: 120, unacked: 90, mss: 1448, minRTT: 2_000, rtt: 3_000, notsent: 16_000)
    /// A loopback: 64 KiB segments, gigabytes a second.
    static let loopback = tcpInfoBytes(deliveryRate: 3_000_000_000, cwnd: 10, unacked: 2, mss: 65_483, minRTT: 12, rtt: 40, notsent: 12_000)

    @Test func readsTheFieldsAtTheirOffsets() throws {
        let reading = try #require(TCPInfoReading(bytes: Self.tenMegabit))
        #expect(
            reading
                == TCPInfoReading(
                    deliveryRate: 1_250_000, congestionWindow: 14, unacknowledged: 10, segmentSize: 1448,
                    minimumRoundTripMicroseconds: 10_000, roundTripMicroseconds: 13_100, unsentBytes: 4_200))
        #expect(reading.bytesInFlight == 14_480)
    }

    @Test func anOlderKernelsShorterInfoLeavesTheNewerFieldsUnknown() throws {
        // Up to tcpi_total_retrans only (104 bytes): no delivery rate, no unsent count.
        let reading = try #require(TCPInfoReading(bytes: Self.tcpInfoBytes(
            deliveryRate: 1_250_000, cwnd: 20, unacked: 10, mss: 1000, minRTT: 0, rtt: 16_000, notsent: 1, length: 104)))
        #expect(reading.deliveryRate == 0)
        #expect(reading.unsentBytes == nil)
        #expect(reading.minimumRoundTripMicroseconds == 0)
        // A window per smoothed round trip instead: 20 × 1000 B per 16 ms.
        #expect(LinkPace.rate(of: reading) == 1_250_000)
        #expect(TCPInfoReading(bytes: [UInt8](repeating: 0, count: 100)) == nil)
    }

    @Test func theRoomIsAFewMillisecondsOfTheRateWithinItsFloorAndCeiling() throws {
        let start = NIODeadline.uptimeNanoseconds(1_000_000_000)
        func sizes(_ bytes: [UInt8]) throws -> LinkPace.Sizes {
            var pace = LinkPace()
            pace.update(try #require(TCPInfoReading(bytes: bytes)), at: start)
            return pace.sizes
        }
        // 10 Mbit/s: 2 ms is 2500 B, under the floor of 4 KiB; the kernel keeps two segments.
        let slow = try sizes(Self.tenMegabit)
        #expect(slow.room == 4 * 1024)
        #expect(slow.turn == 4 * 1024)
        #expect(slow.tlsBatch == 4 * 1024)
        #expect(slow.channelWaterMark.low == 2 * 1024)
        #expect(slow.channelWaterMark.high == 4 * 1024)
        #expect(slow.unsentLowWatermark == 2 * 1448)
        // 40 Mbit/s: 10 000 B, up to the next 2 KiB step; two segments unsent (more than a quarter).
        let middle = try sizes(Self.fortyMegabit)
        #expect(middle.room == 10 * 1024)
        #expect(middle.unsentLowWatermark == 2 * 1448)
        // 200 Mbit/s: 50 000 B, 50 KiB; a quarter of it unsent.
        let twoHundred = try sizes(Self.twoHundredMegabit)
        #expect(twoHundred.room == 50 * 1024)
        #expect(twoHundred.unsentLowWatermark == 50 * 1024 / 4)
        // A loopback: the ceiling, the fixed sizes its throughput was measured with, whatever the segment size.
        let loopback = try sizes(Self.loopback)
        #expect(loopback == LinkPace.Sizes.fastest)
        #expect(LinkPace.Sizes.fastest.room == 64 * 1024)
        #expect(LinkPace.Sizes.fastest.unsentLowWatermark == 16 * 1024)
        #expect(LinkPace.Sizes.fastest.channelWaterMark.low == 32 * 1024)
        #expect(LinkPace.Sizes.fastest.channelWaterMark.high == 64 * 1024)
        // A crawl: the floor of a few KiB.
        let crawlBytes = Self.tcpInfoBytes(deliveryRate: 10_000, cwnd: 2, unacked: 1, mss: 1448, minRTT: 300_000, rtt: 400_000, notsent: 0)
        let crawl = try sizes(crawlBytes)
        #expect(crawl.room == 4 * 1024)
        #expect(crawl.unsentLowWatermark == 2 * 1448)
    }

    @Test func theRateIsWhatWasAcknowledgedBetweenReadingsNotASpikyAckSample() throws {
        let start = NIODeadline.uptimeNanoseconds(1_000_000_000)
        // Compressed acks put one sample at 90 Mbit/s on a 10 Mbit/s link.
        func reading(acked: UInt64) throws -> TCPInfoReading {
            try #require(TCPInfoReading(bytes: Self.tcpInfoBytes(
                deliveryRate: 11_250_000, cwnd: 14, unacked: 10, mss: 1448, minRTT: 10_000, rtt: 13_100, notsent: 2_000, acked: acked)))
        }
        var pace = LinkPace()
        pace.update(try reading(acked: 1_000_000), at: start)
        #expect(pace.rate == nil)
        // Too soon after the last reading to say anything.
        pace.update(try reading(acked: 1_002_000), at: start + .milliseconds(2))
        #expect(pace.rate == nil)
        pace.update(try reading(acked: 1_060_000), at: start + .milliseconds(50))
        #expect(pace.rate == nil)
        // 125 000 bytes acknowledged in 100 ms: 1.25 MB/s.
        pace.update(try reading(acked: 1_125_000), at: start + .milliseconds(100))
        #expect(pace.rate == 1_250_000)
        #expect(pace.sizes.room == 4 * 1024)
    }

    @Test func beforeAnyReadingTheSizesAreAFastLinksAsTheSocketStarts() {
        #expect(LinkPace().rate == nil)
        #expect(LinkPace().sizes == .fastest)
        #expect(TunnelSocketOptions.unsentLowWatermark == LinkPace.Sizes.fastest.unsentLowWatermark)
        #expect(TunnelSocketOptions.writeBufferWaterMark.low == LinkPace.Sizes.fastest.channelWaterMark.low)
        #expect(TunnelSocketOptions.writeBufferWaterMark.high == LinkPace.Sizes.fastest.channelWaterMark.high)
    }

    @Test func aPauseDoesNotShrinkTheRoomButASlowerLinkDoesWithinTwoWindows() throws {
        let start = NIODeadline.uptimeNanoseconds(1_000_000_000)
        let fast = try #require(TCPInfoReading(bytes: Self.fortyMegabit))
        let pause = try #require(TCPInfoReading(bytes: Self.tcpInfoBytes(
            deliveryRate: 50_000, cwnd: 36, unacked: 0, mss: 1448, minRTT: 5_000, rtt: 6_600, notsent: 0)))
        var pace = LinkPace()
        pace.update(fast, at: start)
        // App-limited samples (the download paused) within the window keep the rate...
        pace.update(pause, at: start + .milliseconds(300))
        pace.update(pause, at: start + .milliseconds(1_200))
        #expect(pace.rate == 5_000_000)
        #expect(pace.sizes.room == 10 * 1024)
        // ...and only a link slow for a whole window and more brings it down.
        pace.update(pause, at: start + .milliseconds(2_300))
        #expect(pace.rate == 50_000)
        #expect(pace.sizes.room == 4 * 1024)
        // A faster reading raises it at once.
        pace.update(fast, at: start + .milliseconds(2_320))
        #expect(pace.rate == 5_000_000)
    }

    @Test func theMultiplexersTurnFollowsThePaceWithinTheLargestChunk() throws {
        let output = RecordingTunnelOutputForPace()
        let multiplexer = TunnelMultiplexer(
            role: .client, output: output, eventLoop: EmbeddedEventLoop(), logger: .init(label: "test"))
        #expect(multiplexer.turnBytes == multiplexer.limits.maximumDataChunk)
        multiplexer.turnBytes = 6 * 1024
        #expect(multiplexer.turnBytes == 6 * 1024)
        multiplexer.turnBytes = 1 << 30
        #expect(multiplexer.turnBytes == multiplexer.limits.maximumDataChunk)
    }
}

/// A tunnel that takes every write, for the multiplexer's own settings.
private final class RecordingTunnelOutputForPace: TunnelOutput {
    var isWritable: Bool { true }
    func write(_ message: TunnelMessage) {}
    func flush() {}
    func peerReadingChanged(_ reading: Bool) {}
}
