import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing
@testable import SimpleTunnelServices

/// A real TUN device, created inside a throwaway network namespace, with
/// the kernel on the other side. Needs root and /dev/net/tun.
@Suite("TUN device in a network namespace", .serialized, .timeLimit(.minutes(3)))
struct TUNDeviceNamespaceTests {
    let loop = MultiThreadedEventLoopGroup.singleton.next()
    static let tunAddress = IPv4Address(10, 200, 0, 1)
    static let peerAddress = IPv4Address(10, 200, 0, 2)

    /// A namespace holding an up TUN device with 10.200.0.1/24.
    private func makeConfiguredDevice(_ lab: NetworkNamespaceLab, name: String = "stun%d", mtu: Int = 1400) throws -> (namespace: String, device: TUNDevice) {
        let namespace = try lab.makeNamespace()
        let device = try TUNDevice.open(name: name, inNamespace: namespace)
        let configurator = LinuxNetworkConfigurator(namespace: namespace)
        try configurator.setLinkUp(device: device.name, mtu: mtu)
        try configurator.addAddress(Self.tunAddress, prefixLength: 24, device: device.name)
        return (namespace, device)
    }

    @Test(.enabled(if: NetworkNamespaceLab.isAvailable, "needs root, /dev/net/tun and `ip netns`"))
    func theDeviceIsCreatedInsideTheNamespaceOnlyWithTheNameTheKernelChose() throws {
        let lab = NetworkNamespaceLab()
        defer { lab.cleanup() }
        let namespaceBefore = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/thread-self/ns/net")
        let (namespace, device) = try makeConfiguredDevice(lab, mtu: 1400)
        defer { device.close() }
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/thread-self/ns/net") == namespaceBefore,
                "opening in a namespace must not move the calling thread")
        #expect(device.name.hasPrefix("stun"))
        #expect(device.name != "stun%d")
        #expect(device.mtu == 1400)
        let inside = try lab.runner.runChecked(["ip", "-n", namespace, "-o", "link", "show", "dev", device.name])
        #expect(inside.standardOutput.contains(device.name))
        let outside = try lab.runner.run(["ip", "-o", "link", "show", "dev", device.name], timeout: .seconds(10))
        #expect(outside.status != 0, "the device must not appear in the root namespace")
    }

    @Test(.enabled(if: NetworkNamespaceLab.isAvailable, "needs root, /dev/net/tun and `ip netns`"))
    func aPingThroughTheDeviceIsReadAndAnsweredThroughIt() async throws {
        let lab = NetworkNamespaceLab()
        defer { lab.cleanup() }
        let (namespace, device) = try makeConfiguredDevice(lab)
        defer { device.close() }

        // The "remote host" 10.200.0.2 is this test: answer every echo request.
        let requests = NIOLockedValueBox<[IPv4TestPackets.EchoRequest]>([])
        device.startReading(on: loop) { [device] batch in
            for packet in batch {
                guard let request = IPv4TestPackets.echoRequest(in: packet.bytes) else { continue }
                requests.withLockedValue { $0.append(request) }
                device.writePackets([IPv4TestPackets.echoReply(to: request)])
            }
        }

        let ping = ExternalProcess.which("ping")
            ? ["ping", "-c", "1", "-W", "2", Self.peerAddress.description]
            : ["python3", "-c", NamespaceScripts.ping, Self.peerAddress.description, "2"]
        let result = try lab.run(in: namespace, ping, check: false)
        #expect(result.status == 0, "ping through the TUN device failed: \(result.standardOutput) \(result.standardError)")
        let first = requests.withLockedValue { $0.first }
        #expect(first?.source == Self.tunAddress)
        #expect(first?.destination == Self.peerAddress)
        #expect(device.counters.packetsWritten >= 1)
        #expect(device.counters.packetsRead >= 1)
    }

    @Test(.enabled(if: NetworkNamespaceLab.isPythonAvailable, "needs root, /dev/net/tun, `ip netns` and python3"))
    func aBurstOfWritesArrivesAsSeparatePackets() async throws {
        let lab = NetworkNamespaceLab()
        defer { lab.cleanup() }
        let (namespace, device) = try makeConfiguredDevice(lab)
        defer { device.close() }
        let count = 20
        let port: UInt16 = 5555
        let receiver = try lab.start(in: namespace, ["python3", "-c", NamespaceScripts.udpCounter, Self.tunAddress.description, String(port), String(count)])
        defer { receiver.terminate() }
        #expect(await receiver.waitForOutput(containing: "ready", timeout: 15) != nil, "UDP receiver did not start: \(receiver.outputSoFar)")

        let sizes = (0..<count).map { 100 + $0 * 37 }
        let packets = sizes.enumerated().map { index, size in
            IPv4TestPackets.udp(from: Self.peerAddress, 40000, to: Self.tunAddress, port,
                                payload: [UInt8](repeating: UInt8(index), count: size), identification: UInt16(index + 1))
        }
        // Something that is not IP in the middle: the kernel refuses that one packet only.
        device.writePackets(Array(packets[..<10]) + [ByteBuffer(bytes: [0x00, 0x01, 0x02, 0x03])] + Array(packets[10...]))
        #expect(device.counters.packetsWritten == count)
        #expect(device.counters.writeDrops == 1)

        let (_, output) = await receiver.finish(timeout: 15)
        let line = output.split(separator: "\n").first { $0.hasPrefix("sizes") }
        let received = line.map { $0.split(separator: " ").dropFirst().compactMap { Int($0) } }
        #expect(received == sizes, "receiver output: \(output)")
    }

    /// Who reads the device: the loop that uses it (a client's) or a thread
    /// of its own whose batches hop to that loop (how a shared device is read).
    enum Reader: String, CaseIterable {
        case eventLoop, thread

        func start(_ device: TUNDevice, on loop: EventLoop, _ deliver: @escaping @Sendable ([TunnelPacket]) -> Void) {
            switch self {
            case .eventLoop: device.startReading(on: loop, deliver)
            case .thread: device.startReadingThroughRouting(on: loop, deliver)
            }
        }
    }

    @Test(.enabled(if: NetworkNamespaceLab.isPythonAvailable, "needs root, /dev/net/tun, `ip netns` and python3"), arguments: Reader.allCases)
    func packetsFromTheKernelAreReadWholeInOrderInBatchesOfAtMost32(reader: Reader) async throws {
        let lab = NetworkNamespaceLab()
        defer { lab.cleanup() }
        let (namespace, device) = try makeConfiguredDevice(lab, mtu: 1400)
        defer { device.close() }
        let collector = PacketCollector()
        reader.start(device, on: loop, collector.deliver(expecting: loop))

        // 100 datagrams up to the MTU: 28 header bytes + 1372 is exactly 1400.
        let count = 100
        let sizes = (0..<count).map { 1372 - (count - 1 - $0) * 13 }
        _ = try lab.run(in: namespace, ["python3", "-c", NamespaceScripts.udpSender, Self.peerAddress.description, "9", String(count), String(sizes[0]), "13"])
        let udp = { (packets: [ByteBuffer]) in
            packets.filter { $0.getInteger(at: 9, as: UInt8.self) == 17 && $0.getInteger(at: 0, as: UInt8.self) == 0x45 }
        }
        #expect(await Loopback.waitUntil(seconds: 10) { udp(collector.packets).count == count })
        let received = udp(collector.packets)
        #expect(received.map(\.readableBytes) == sizes.map { $0 + 28 })
        #expect(received.last?.readableBytes == 1400, "a packet of exactly the MTU arrives whole")
        #expect(received.map { Int($0.getInteger(at: 28, as: UInt8.self) ?? 255) } == (0..<count).map { $0 % 256 }, "in order")
        #expect(received.allSatisfy { TunnelPacket(bytes: $0).ipVersion == .v4 })
        #expect(collector.batches.allSatisfy { (1...PacketFlowLimits.maximumBatchSize).contains($0.count) })
        #expect(collector.deliveriesOffTheLoop == 0)
        #expect(device.counters.packetsRead == collector.packets.count)
    }

    @Test(.enabled(if: NetworkNamespaceLab.isAvailable, "needs root, /dev/net/tun and `ip netns`"), arguments: Reader.allCases)
    func closeStopsAnIdleReaderPromptlyRemovesTheInterfaceAndIsIdempotent(reader: Reader) async throws {
        let lab = NetworkNamespaceLab()
        defer { lab.cleanup() }
        let (namespace, device) = try makeConfiguredDevice(lab, name: "st-exact0")
        #expect(device.name == "st-exact0")
        reader.start(device, on: loop) { _ in }
        try await Task.sleep(for: .milliseconds(100))
        // A loop busy elsewhere closes the reader's channel late: close waits for it.
        loop.execute { Thread.sleep(forTimeInterval: 0.3) }
        let started = ContinuousClock.now
        device.close()
        #expect(ContinuousClock.now - started < .seconds(1))
        let left = try lab.runner.run(["ip", "-n", namespace, "-o", "link", "show", "dev", "st-exact0"], timeout: .seconds(10))
        #expect(left.status != 0, "no descriptor of the device is left open once close returns: \(left.standardOutput)")
        device.close()
        device.writePackets(numberedPackets(2))
        #expect(device.counters.writeDrops == 2)
    }

    @Test(.enabled(if: NetworkNamespaceLab.isAvailable, "needs root, /dev/net/tun and `ip netns`"))
    func closingOnTheReadingLoopItselfRemovesTheInterfaceAtOnce() async throws {
        let lab = NetworkNamespaceLab()
        defer { lab.cleanup() }
        let (namespace, device) = try makeConfiguredDevice(lab, name: "st-onloop0")
        device.startReading(on: loop) { _ in }
        try await Task.sleep(for: .milliseconds(100))
        try await loop.submit { device.close() }.get()
        let left = try lab.runner.run(["ip", "-n", namespace, "-o", "link", "show", "dev", "st-onloop0"], timeout: .seconds(10))
        #expect(left.status != 0, "closed on its own loop, the reader's channel closes at once: \(left.standardOutput)")
        device.writePackets(numberedPackets(1))
        #expect(device.counters.writeDrops == 1)
    }

    @Test(.enabled(if: NetworkNamespaceLab.isAvailable, "needs root, /dev/net/tun and `ip netns`"), arguments: Reader.allCases)
    func deletingTheInterfaceUnderAReaderLeavesCloseWorking(reader: Reader) async throws {
        let lab = NetworkNamespaceLab()
        defer { lab.cleanup() }
        let (namespace, device) = try makeConfiguredDevice(lab)
        reader.start(device, on: loop) { _ in }
        _ = try lab.runner.runChecked(["ip", "-n", namespace, "link", "delete", device.name])
        try await Task.sleep(for: .milliseconds(200))
        device.writePackets([IPv4TestPackets.udp(from: Self.peerAddress, 1, to: Self.tunAddress, 2, payload: [1])])
        #expect(device.counters.writeDrops == 1, "writing to a deleted interface fails and is counted")
        let started = ContinuousClock.now
        device.close()
        #expect(ContinuousClock.now - started < .seconds(1))
    }

    @Test(.enabled(if: NetworkNamespaceLab.isAvailable, "needs root, /dev/net/tun and `ip netns`"))
    func anOverlongNameIsRefusedWithTheLimit() throws {
        let lab = NetworkNamespaceLab()
        defer { lab.cleanup() }
        let namespace = try lab.makeNamespace()
        let error = #expect(throws: TUNDeviceError.self) { _ = try TUNDevice.open(name: "simpletunnel-far-too-long", inNamespace: namespace) }
        #expect(error?.description.contains("at most 15 characters") == true, "\(String(describing: error))")
    }

    @Test(.enabled(if: NetworkNamespaceLab.isAvailable, "needs root, /dev/net/tun and `ip netns`"))
    func aMissingNamespaceIsReportedByName() {
        let error = #expect(throws: TUNDeviceError.self) { _ = try TUNDevice.open(inNamespace: "st-does-not-exist") }
        #expect(error == .namespaceUnavailable(namespace: "st-does-not-exist", errno: ENOENT))
        #expect(error?.description.contains("No such file or directory") == true)
    }
}
