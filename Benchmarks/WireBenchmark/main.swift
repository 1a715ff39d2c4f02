// Wire benchmark: encode+frame and deframe+decode throughput of the two
// data-path messages and of the small per-flow messages. Run in release:
// `Benchmarks/wire.sh` (or `swift run -c release WireBenchmark`). Prints MB/s
// of payload and messages/s.
//
// `WireBenchmark --encode-count <encode|pieces|decode> <scenario> <n>` runs one
// scenario n times without timing, for instruction counts on a shared machine
// (`Benchmarks/wire-instructions.sh`): `encode` into one reused buffer, as
// above; `pieces` as `TunnelFrameEncoder` does, into a new buffer each time;
// `decode` deframes and decodes the encoded frame, as the receiving side does.
import Foundation
import NIOCore
import SimpleTunnelServices

struct Scenario {
    let name: String
    let message: TunnelMessage
    let payloadBytes: Int
}

let dataPayload = ByteBuffer(bytes: (0..<16_384).map { UInt8(truncatingIfNeeded: $0) })
let packet = ByteBuffer(bytes: (0..<1_400).map { UInt8(truncatingIfNeeded: $0 &* 7) })
let superPacket = ByteBuffer(bytes: (0..<65_000).map { UInt8(truncatingIfNeeded: $0 &* 7) })
let smallPayload = ByteBuffer(bytes: (0..<64).map { UInt8(truncatingIfNeeded: $0) })
let flow: TunnelConnectionIdentifier = -4_611_686_018_427_387_904  // Apple's hashes use all 64 bits
let scenarios = [
    Scenario(name: "data 16 KiB", message: .data(identifier: 42, payload: dataPayload), payloadBytes: 16_384),
    Scenario(
        name: "packets 32x1400",
        message: .packets(identifier: 42, packets: Array(repeating: TunnelPacket(bytes: packet, protocolNumber: 2), count: 32)),
        payloadBytes: 32 * 1_400
    ),
    // The IP path's usual message between two Linux peers: one TCP super-packet carried whole (PROTOCOL.md B8).
    Scenario(
        name: "packets 1x64KiB",
        message: .packets(identifier: 42, packets: [TunnelPacket(bytes: superPacket, protocolNumber: 2, segmentSize: 1_348)]),
        payloadBytes: 65_000
    ),
    // The per-flow messages: one of each per TCP flow, besides its data.
    Scenario(name: "open tcp", message: .open(identifier: flow, request: .tcp(TunnelEndpoint(host: "example.com", port: 443))), payloadBytes: 0),
    Scenario(name: "openResult", message: .openResult(identifier: flow, result: .success), payloadBytes: 0),
    Scenario(name: "close", message: .close(identifier: flow, direction: .all), payloadBytes: 0),
    Scenario(name: "data 64 B", message: .data(identifier: flow, payload: smallPayload), payloadBytes: 64),
    Scenario(
        name: "data 64 B udp",
        message: .data(identifier: flow, payload: smallPayload, endpoint: TunnelEndpoint(host: "192.0.2.1", port: 53)),
        payloadBytes: 64
    ),
]

/// Runs `body` repeatedly for about `seconds`, returning iterations per second.
func measure(seconds: Double = 1.0, _ body: () throws -> Void) rethrows -> Double {
    let clock = ContinuousClock()
    try body()  // warm up
    var iterations = 0
    let start = clock.now
    var elapsed = Duration.zero
    repeat {
        for _ in 0..<256 { try body() }
        iterations += 256
        elapsed = clock.now - start
    } while elapsed < .seconds(seconds)
    let (wholeSeconds, attoseconds) = elapsed.components
    return Double(iterations) / (Double(wholeSeconds) + Double(attoseconds) / 1e18)
}

func report(_ scenario: Scenario, _ direction: String, _ perSecond: Double) {
    let megabytes = perSecond * Double(scenario.payloadBytes) / 1e6
    let line = "\(scenario.name.padding(toLength: 16, withPad: " ", startingAt: 0)) \(direction.padding(toLength: 16, withPad: " ", startingAt: 0))"
    print("\(line) \(String(format: "%9.0f", megabytes)) MB/s \(String(format: "%10.0f", perSecond)) messages/s")
}

func encodeOnce(_ message: TunnelMessage, into buffer: inout ByteBuffer) throws {
    buffer.clear()
    try TunnelFrame.encode(message, into: &buffer)
}

func decodeOnce(_ frame: ByteBuffer) throws -> TunnelMessage {
    var stream = frame
    guard let payload = try TunnelFrameDecoder.nextPayload(from: &stream) else { fatalError("incomplete frame") }
    return try TunnelFrame.decodeMessage(payload: payload)
}

var encodeBuffer = ByteBuffer()
encodeBuffer.reserveCapacity(TunnelWireLimits.maximumFrameLength)

let arguments = CommandLine.arguments.dropFirst()
if arguments.first == "--encode-count" {
    let rest = Array(arguments.dropFirst())
    guard rest.count == 3, ["encode", "pieces", "decode"].contains(rest[0]), let scenario = scenarios.first(where: { $0.name == rest[1] }),
        let count = Int(rest[2])
    else {
        print("usage: WireBenchmark --encode-count <encode|pieces|decode> <scenario> <n>; scenarios: \(scenarios.map(\.name))")
        exit(2)
    }
    var frame = ByteBuffer()
    try TunnelFrame.encode(scenario.message, into: &frame)
    var written = 0
    for _ in 0..<count {
        if rest[0] == "decode" {
            written &+= try decodeOnce(frame).identifier == scenario.message.identifier ? 1 : 0
        } else if rest[0] == "encode" {
            try encodeOnce(scenario.message, into: &encodeBuffer)
            written &+= encodeBuffer.readableBytes
        } else {
            written &+= try TunnelFrame.encodePieces(scenario.message, allocator: ByteBufferAllocator()).head.readableBytes
        }
    }
    precondition(written > 0)
    exit(0)
}

var sink = 0
for scenario in scenarios {
    let encodeRate = try measure { try encodeOnce(scenario.message, into: &encodeBuffer) }
    report(scenario, "encode+frame", encodeRate)

    var frame = ByteBuffer()
    try TunnelFrame.encode(scenario.message, into: &frame)
    let decodeRate = try measure {
        sink &+= try decodeOnce(frame).identifier == scenario.message.identifier ? 1 : 0
    }
    report(scenario, "deframe+decode", decodeRate)
}
precondition(sink > 0)
