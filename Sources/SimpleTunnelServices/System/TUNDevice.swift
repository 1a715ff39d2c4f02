import CTUNShims
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Synchronization

/// A Linux TUN interface (`IFF_TUN | IFF_NO_PI`) read by its own reader
/// thread when several tunnels share it (`startRouting`, the server), or on
/// the one event loop that uses it (`startReading`, the client), and written
/// with plain `write()` calls.
///
/// Not written through a NIO channel on purpose: NIO's pipe channel gathers
/// queued writes into one `writev`, which glues packets together on a TUN
/// device. Here every read and every write is exactly one packet, read into a
/// 64 KiB buffer so that no MTU can truncate one.
///
/// With offloads (`offloads`, on unless `SIMPLETUNNEL_TUN_OFFLOAD=off` or
/// the kernel lacks them) each read and write carries a virtio_net_hdr: a read
/// may be a TCP super-packet of up to 64 KiB, delivered whole with its
/// segment size; a super-packet written goes to the kernel whole, and the
/// TCP segments of one flow in a batch of writes go as one super-packet.
///
/// Addresses, routes and the link state belong to `LinuxNetworkConfigurator`.
public final class TUNDevice: PacketFlow, @unchecked Sendable {
    // @unchecked: `state`, `countersStorage` and `lastKnownMTU` are guarded by `lock` (the reader's counts by their own box); the
    // descriptors are immutable and closed only after the reader has stopped
    // and no write can start (state `.closed`).
    public let name: String
    private let deviceFD: CInt
    /// A socket in the device's network namespace, for interface ioctls.
    private let controlFD: CInt
    /// Signalled by `close()` to wake the reader out of `poll()`.
    private let wakeFD: CInt
    private let logger: Logger
    /// What the kernel agreed to when the device was opened.
    public let offloads: TUNOffloads
    public var takesSuperPackets: Bool { offloads.virtioHeader }
    private let allocator = ByteBufferAllocator()

    private enum State {
        case idle
        /// Read by a thread of its own (`startRouting`).
        case reading(stopped: DispatchSemaphore)
        /// Read by an event loop (`startReading`), through this channel.
        case readingOnLoop(EventLoopFuture<Channel>)
        case closed
    }

    private let lock = NIOLock()
    private var state = State.idle
    private var countersStorage = PacketFlowCounters()
    /// The reader's counts, apart: counting a batch must not wait behind a write to the device.
    private let readCounts = NIOLockedValueBox(TUNReadTally())
    private var lastKnownMTU: Int
    /// True once `state` is `.closed`.
    private let closedFlag = Atomic<Bool>(false)

    /// Creates a TUN interface in the calling process's network namespace.
    /// - Parameter name: an exact name ("stun0") or a pattern with one `%d`
    ///   ("stun%d"); the kernel's choice is `name` on the result.
    /// - Parameter offloads: `.off` opens the device without a virtio_net_hdr.
    public static func open(
        name: String = "stun%d", offloads: TUNOffloadRequest = .fromEnvironment, logger: Logger = Logger(label: "simpletunnel.tun")
    ) throws(TUNDeviceError) -> TUNDevice {
        var error: CInt = 0
        var vnetHeader: CInt = 0
        var actualName = [CChar](repeating: 0, count: Int(st_interface_name_capacity()))
        let fd = st_tun_open(name, offloads == .automatic ? 1 : 0, &actualName, actualName.count, &vnetHeader, &error)
        guard fd >= 0 else { throw .openFailed(name: name, errno: error) }
        let controlFD = st_control_socket_open(&error)
        guard controlFD >= 0 else {
            Glibc.close(fd)
            throw .setupFailed(what: "control socket", errno: error)
        }
        return try TUNDevice(deviceFD: fd, controlFD: controlFD, name: Self.interfaceName(actualName), virtioHeader: vnetHeader != 0, logger: logger)
    }

    /// Takes ownership of both descriptors (closing them if this fails).
    /// With `virtioHeader`, asks the kernel for the offloads it will give.
    init(deviceFD: CInt, controlFD: CInt, name: String, virtioHeader: Bool, logger: Logger) throws(TUNDeviceError) {
        var error: CInt = 0
        let wakeFD = st_wake_fd_open(&error)
        guard wakeFD >= 0 else {
            Glibc.close(deviceFD)
            Glibc.close(controlFD)
            throw .setupFailed(what: "wake-up eventfd", errno: error)
        }
        self.deviceFD = deviceFD
        self.controlFD = controlFD
        self.wakeFD = wakeFD
        self.name = name
        self.logger = logger
        self.offloads = virtioHeader ? Self.enableOffloads(deviceFD) : .off
        logger.info("TUN offloads on \(name): \(offloads)")
        let mtu = st_interface_mtu(controlFD, name, &error)
        lastKnownMTU = mtu > 0 ? Int(mtu) : 1500
    }

    deinit {
        close()
    }

    /// The interface's current MTU; the last value read if the interface is gone.
    public var mtu: Int {
        (try? currentMTU()) ?? lock.withLock { lastKnownMTU }
    }

    /// The interface's MTU as the kernel reports it now.
    public func currentMTU() throws(TUNDeviceError) -> Int {
        var error: CInt = 0
        let mtu = st_interface_mtu(controlFD, name, &error)
        guard mtu > 0 else { throw .mtuUnavailable(name: name, errno: error) }
        lock.withLock { lastKnownMTU = Int(mtu) }
        return Int(mtu)
    }

    /// The most the kernel accepts of what we ask, trying less until it agrees.
    private static func enableOffloads(_ fd: CInt) -> TUNOffloads {
        var error: CInt = 0
        for flags in TUNOffloads.attempts where st_tun_set_offloads(fd, CUnsignedInt(flags), &error) == 0 {
            return TUNOffloads(virtioHeader: true, kernelFlags: flags)
        }
        return TUNOffloads(virtioHeader: true, kernelFlags: 0)
    }

    public var counters: PacketFlowCounters {
        var counters = lock.withLock { countersStorage }
        let read = readCounts.withLockedValue { $0 }
        counters.packetsRead = read.packets
        counters.bytesRead = read.bytes
        counters.superPacketsRead = read.superPackets
        counters.malformedReads = read.malformed
        return counters
    }

    public func startRouting(_ route: @escaping @Sendable ([TunnelPacket], PacketHandOff) -> Void) {
        let stopped = DispatchSemaphore(value: 0)
        let shouldStart: Bool = lock.withLock {
            switch state {
            case .idle:
                state = .reading(stopped: stopped)
                return true
            case .reading, .readingOnLoop:
                preconditionFailure("TUNDevice.startRouting called twice on \(name)")
            case .closed:
                return false
            }
        }
        guard shouldStart else { return }
        let reader = TUNReaderLoop(
            reads: TUNPacketReads(deviceFD: deviceFD, name: name, virtioHeader: offloads.virtioHeader, logger: logger),
            wakeFD: wakeFD, route: route, isClosed: { [weak self] in self?.isClosed ?? true }, record: recordRead
        )
        let thread = Thread {
            reader.run()
            stopped.signal()
        }
        thread.name = "TUN reader \(name)"
        thread.start()
    }

    /// Adds a batch's tally to the read counters.
    private var recordRead: @Sendable (TUNReadTally) -> Void {
        { [weak self] tally in self?.readCounts.withLockedValue { $0.add(tally) } }
    }

    /// Reads on `eventLoop` itself (`TUNLoopReader`), through a read-only pipe
    /// channel on a duplicate of the descriptor: no thread, and no hop
    /// between the device and the tunnel that loop serves.
    public func startReading(on eventLoop: EventLoop, _ deliver: @escaping @Sendable ([TunnelPacket]) -> Void) {
        let duplicate = Glibc.dup(deviceFD)
        guard duplicate >= 0 else {
            logger.error("TUN device read by a thread of its own: its descriptor could not be duplicated", metadata: [
                "device": "\(name)", "error": "\(errnoText(errno))",
            ])
            startReadingThroughRouting(on: eventLoop, deliver)
            return
        }
        let shouldStart: Bool = lock.withLock {
            switch state {
            case .idle:
                return true
            case .reading, .readingOnLoop:
                preconditionFailure("TUNDevice.startReading called twice on \(name)")
            case .closed:
                return false
            }
        }
        guard shouldStart else {
            Glibc.close(duplicate)
            return
        }
        let reads = TUNPacketReads(deviceFD: duplicate, name: name, virtioHeader: offloads.virtioHeader, logger: logger)
        let record = recordRead
        let channel = NIOPipeBootstrap(group: eventLoop)
            .channelOption(.recvAllocator, value: TUNLoopReader.receiveAllocator)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(TUNLoopReader(reads: reads, deliver: deliver, record: record))
                }
            }
            .takingOwnershipOfDescriptor(input: duplicate)
        channel.whenFailure { [logger, name] error in
            // Not taken: the duplicate is still ours.
            Glibc.close(duplicate)
            logger.error("TUN reader did not start", metadata: ["device": "\(name)", "error": "\(error)"])
        }
        let closedMeanwhile: Bool = lock.withLock {
            guard case .idle = state else { return true }
            state = .readingOnLoop(channel)
            return false
        }
        if closedMeanwhile { channel.whenSuccess { $0.close(promise: nil) } }
    }

    public func writePackets(_ packets: [TunnelPacket]) {
        // Planned outside the lock: the server's tunnels write from several event loops at once.
        let plan = TUNWritePlan(packets, virtioHeader: offloads.virtioHeader, allocator: allocator)
        lock.withLock {
            countersStorage.writeDrops += plan.malformed
            guard case .closed = state else {
                for item in plan.writes { writeLocked(item.packet, header: offloads.virtioHeader ? item.header : nil, segments: item.segments) }
                return
            }
            countersStorage.writeDrops += plan.writes.count
        }
    }

    /// Ten zero bytes: the virtio_net_hdr of a packet that needs nothing done.
    private static let plainHeader = VirtioNetHeader.plain.bytes

    /// One `write()` per packet (with its virtio_net_hdr, when the device has
    /// one); never blocks (the descriptor is non-blocking).
    private func writeLocked(_ packet: ByteBuffer, header: VirtioNetHeader?, segments: Int) {
        let headerBytes = header.map { $0 == .plain ? Self.plainHeader : $0.bytes } ?? []
        while true {
            let written = packet.withUnsafeReadableBytes { body in
                headerBytes.withUnsafeBytes { head in
                    head.isEmpty
                        ? Glibc.write(deviceFD, body.baseAddress, body.count)
                        : st_write_two(deviceFD, head.baseAddress, head.count, body.baseAddress, body.count)
                }
            }
            if written == packet.readableBytes + headerBytes.count && written > 0 {
                countersStorage.recordWritten(packet, segments: segments, headerLength: Int(header?.headerLength ?? 0))
                return
            }
            let code = errno
            if written < 0 && code == EINTR { continue }
            countersStorage.writeDrops += segments
            // A full device is ordinary congestion; anything else (a packet
            // that is not IPv4/IPv6, the interface gone) deserves a note.
            if written >= 0 || code != EAGAIN {
                logger.debug("TUN write dropped a packet", metadata: [
                    "device": "\(name)", "bytes": "\(packet.readableBytes)",
                    "error": "\(written < 0 ? errnoText(code) : "short write of \(written)")",
                ])
            }
            return
        }
    }

    public func close() {
        let previous: State = lock.withLock {
            let previous = state
            state = .closed
            closedFlag.store(true, ordering: .releasing)
            return previous
        }
        switch previous {
        case .closed:
            return
        case .idle:
            break
        case .readingOnLoop(let channel):
            // The channel closes its duplicate descriptor on its loop; off the
            // loop, wait for that, so the interface is gone when this returns.
            let stopped = DispatchSemaphore(value: 0)
            channel.whenComplete { result in
                guard case .success(let channel) = result else {
                    stopped.signal()
                    return
                }
                channel.close().whenComplete { _ in stopped.signal() }
            }
            if !channel.eventLoop.inEventLoop, stopped.wait(timeout: .now() + .seconds(5)) == .timedOut {
                logger.error("TUN reader did not stop within 5 s", metadata: ["device": "\(name)"])
            }
        case .reading(let stopped):
            _ = st_wake_fd_signal(wakeFD)
            // The reader checks for close at least every poll timeout, so this
            // is prompt; if it ever is not, leaking the descriptors is safer
            // than closing them under a live reader.
            guard stopped.wait(timeout: .now() + .seconds(5)) == .success else {
                logger.error("TUN reader did not stop within 5 s; leaving its descriptors open", metadata: ["device": "\(name)"])
                return
            }
        }
        Glibc.close(deviceFD)
        Glibc.close(controlFD)
        Glibc.close(wakeFD)
    }

    /// The text before the first NUL of the name buffer the kernel filled in.
    static func interfaceName(_ buffer: [CChar]) -> String {
        String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Read by the reader thread after every wake-up: an atomic rather than
    /// `lock`, which a write holds through its system call (and the kernel's
    /// forwarding behind it), so the reader never waits behind a write.
    private var isClosed: Bool {
        closedFlag.load(ordering: .acquiring)
    }
}
