import Foundation
import NIOCore
import NIOPosix
import Testing
@testable import SimpleTunnelServices

/// Two TUN devices in two namespaces joined by this test (what one reads the
/// other writes), with the kernel's TCP on both sides: a transfer over IPv4 and
/// IPv6 must arrive intact whether the devices use offloads or not, and with
/// them the kernel's super-packets must really be split and coalesced.
@Suite("TUN offloads in network namespaces", .serialized, .timeLimit(.minutes(3)))
struct TUNOffloadNamespaceTests {
    let loop = MultiThreadedEventLoopGroup.singleton.next()

    struct Wire {
        let near: TUNDevice
        let far: TUNDevice
        let nearNamespace: String
        let farNamespace: String

        func close() {
            near.close()
            far.close()
        }
    }

    /// Namespace A (10.201.0.1, fd00:201::1) and B (…2), each with a TUN device whose packets the other's device writes.
    func makeWire(_ lab: NetworkNamespaceLab, offloads: TUNOffloadRequest) throws -> Wire {
        var devices: [(String, TUNDevice)] = []
        for index in 1...2 {
            let namespace = try lab.makeNamespace()
            let device = try TUNDevice.open(name: "stoff%d", inNamespace: namespace, offloads: offloads)
            try LinuxNetworkConfigurator(namespace: namespace).setLinkUp(device: device.name, mtu: 1400)
            try lab.run(in: namespace, ["ip", "address", "add", "10.201.0.\(index)/24", "dev", device.name])
            try lab.run(in: namespace, ["ip", "-6", "address", "add", "fd00:201::\(index)/64", "dev", device.name, "nodad"])
            devices.append((namespace, device))
        }
        let (near, far) = (devices[0].1, devices[1].1)
        near.startReading(on: loop) { far.writePackets($0) }
        far.startReading(on: loop) { near.writePackets($0) }
        return Wire(near: near, far: far, nearNamespace: devices[0].0, farNamespace: devices[1].0)
    }

    /// Sends `bytes` from A to B over TCP; returns what each side printed.
    func transfer(_ lab: NetworkNamespaceLab, _ wire: Wire, to address: String, bytes: Int) async throws -> (sent: String, received: String) {
        let sink = try lab.start(in: wire.farNamespace, ["python3", "-c", NamespaceScripts.tcpSink, address, "5201"])
        #expect(await sink.waitForOutput(containing: "ready", timeout: 15) != nil, "the receiver did not start: \(sink.outputSoFar)")
        let source = try lab.run(in: wire.nearNamespace, ["python3", "-c", NamespaceScripts.tcpSource, address, "5201", String(bytes)], timeout: .seconds(90))
        let (_, output) = await sink.finish(timeout: 30)
        let line = { (text: String, prefix: String) in
            text.split(separator: "\n").first { $0.hasPrefix(prefix) }.map { String($0.dropFirst(prefix.count)) } ?? "nothing: \(text)"
        }
        return (line(source.standardOutput, "sent "), line(output, "received "))
    }

    @Test(.enabled(if: NetworkNamespaceLab.isPythonAvailable, "needs root, /dev/net/tun, `ip netns` and python3"),
          arguments: [("10.201.0.2", TUNOffloadRequest.automatic), ("fd00:201::2", .automatic), ("10.201.0.2", .off), ("fd00:201::2", .off)])
    func aTCPTransferArrivesIntactWithAndWithoutOffloads(address: String, offloads: TUNOffloadRequest) async throws {
        let lab = NetworkNamespaceLab()
        defer { lab.cleanup() }
        let wire = try makeWire(lab, offloads: offloads)
        defer { wire.close() }
        let size = 8 * 1024 * 1024
        let (sent, received) = try await transfer(lab, wire, to: address, bytes: size)
        #expect(sent.hasPrefix("\(size) "), "\(sent)")
        #expect(received == sent, "what arrived differs from what was sent")

        let (near, far) = (wire.near.counters, wire.far.counters)
        #expect(near.malformedReads == 0 && far.malformedReads == 0)
        if offloads == .automatic {
            try #require(wire.near.offloads.readsSuperPackets, "the kernel refused TSO: \(wire.near.offloads)")
            #expect(near.superPacketsRead > 0, "the sender's kernel handed over no super-packet: \(near)")
            #expect(far.superPacketsWritten > 0, "nothing was coalesced on the receiving device: \(far)")
        } else {
            #expect(wire.near.offloads == .off)
            #expect(near.superPacketsRead == 0 && far.superPacketsWritten == 0)
        }
    }

    /// An application sending with UDP_SEGMENT hands the kernel one buffer of
    /// many datagrams; with USO the device reads it whole and the reader cuts
    /// it. Every datagram must arrive, in order, with its size and bytes.
    @Test(.enabled(if: NetworkNamespaceLab.isPythonAvailable, "needs root, /dev/net/tun, `ip netns` and python3"),
          arguments: [("10.201.0.2", TUNOffloadRequest.automatic), ("fd00:201::2", .automatic), ("10.201.0.2", .off)])
    func datagramsSentWithUDPSegmentArriveWholeWithAndWithoutOffloads(address: String, offloads: TUNOffloadRequest) async throws {
        let lab = NetworkNamespaceLab()
        defer { lab.cleanup() }
        let wire = try makeWire(lab, offloads: offloads)
        defer { wire.close() }
        let (size, count) = (1200, 20)
        let sink = try lab.start(in: wire.farNamespace, ["python3", "-c", NamespaceScripts.udpSink, address, "5301", String(count)])
        #expect(await sink.waitForOutput(containing: "ready", timeout: 15) != nil, "the receiver did not start: \(sink.outputSoFar)")
        let source = try lab.run(
            in: wire.nearNamespace, ["python3", "-c", NamespaceScripts.udpSegmentSource, address, "5301", String(size), String(count)], timeout: .seconds(30))
        let (_, output) = await sink.finish(timeout: 30)
        let sent = source.standardOutput.split(separator: "\n").first { $0.hasPrefix("sent ") }.map { $0.dropFirst(5) }
        let received = output.split(separator: "\n").first { $0.hasPrefix("received ") }.map { $0.dropFirst(9) }
        #expect(sent != nil && received == sent, "sent \(source.standardOutput), received \(output)")
        #expect(output.contains("sizes " + Array(repeating: String(size), count: count).joined(separator: " ")), "\(output)")

        let near = wire.near.counters
        #expect(near.malformedReads == 0)
        if offloads == .automatic {
            try #require(wire.near.offloads.readsUDPSuperPackets, "the kernel refused USO: \(wire.near.offloads)")
            #expect(near.superPacketsRead > 0, "the sender's kernel handed over no UDP super-packet: \(near)")
        } else {
            #expect(near.superPacketsRead == 0)
        }
    }
}
