// Wire benchmark: encode+frame and deframe+decode throughput of the two
// data-path messages. Run in release: `Benchmarks/wire.sh` (or
// `swift run -c release WireBenchmark`). Prints MB/s of payload and messages/s.
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
let scenarios = [
    Scenario(name: "data 16 KiB", message: .data(identifier: 42, payload: dataPayload), payloadBytes: 16_384),
    Scenario(
        name: "packets 32x1400",
        message: .packets(identifier: 42, packets: Array(repeating: TunnelPacket(bytes: packet, protocolNumber: 2), count: 32)),
        payloadBytes: 32 * 1_400
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

var sink = 0
for scenario in scenarios {
    var buffer = ByteBuffer()
    buffer.reserveCapacity(TunnelWireLimits.maximumFrameLength)
    let encodeRate = try measure {
        buffer.clear()
        try TunnelFrame.encode(scenario.message, into: &buffer)
    }
    report(scenario, "encode+frame", encodeRate)

    var frame = ByteBuffer()
    try TunnelFrame.encode(scenario.message, into: &frame)
    let decodeRate = try measure {
        var stream = frame
        guard let payload = try TunnelFrameDecoder.nextPayload(from: &stream) else { fatalError("incomplete frame") }
        let message = try TunnelFrame.decodeMessage(payload: payload)
        sink &+= message.identifier == 42 ? 1 : 0
    }
    report(scenario, "deframe+decode", decodeRate)
}
precondition(sink > 0)
