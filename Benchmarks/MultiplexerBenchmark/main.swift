// Multiplexer benchmark: what one data message costs in `TunnelMultiplexer`
// alone, with no socket, TLS or framing: a flow's bytes from the peer to its
// local socket, and from its local socket to the peer.
//
// `MultiplexerBenchmark <scenario> <n>` runs one scenario n times; callgrind
// counts its instructions (`Benchmarks/multiplexer-instructions.sh`), and one
// message's cost is the difference between two counts, so start-up and the
// open are left out. The event loop is NIO's embedded one, run once per
// message, as a real loop ends its tick.
#if canImport(Glibc)
import Glibc
#endif
import Logging
import NIOCore
import NIOEmbedded
import SimpleTunnelServices

/// A tunnel that is always writable and only counts.
final class CountingOutput: TunnelOutput {
    var messages = 0
    var isWritable: Bool { true }
    func write(_ message: TunnelMessage) { messages += 1 }
    func flush() {}
    func peerReadingChanged(_ reading: Bool) {}
}

/// A local socket that takes everything at once.
final class CountingEndpoint: TCPFlowEndpoint {
    var bytes = 0
    func write(_ data: ByteBuffer, to destination: TunnelEndpoint?) { bytes += data.readableBytes }
    func flush() {}
    func setReading(_ enabled: Bool) {}
    func shutdownOutput() {}
    func close() {}
    func abort() {}
    func detach(whenClosed closed: @escaping () -> Void) { closed() }
}

let scenarios: [String: (payload: Int, fromPeer: Bool)] = [
    "peer data 16 KiB": (16_384, true),
    "peer data 64 B": (64, true),
    "local read 16 KiB": (16_384, false),
    "local read 64 B": (64, false),
]

let arguments = Array(CommandLine.arguments.dropFirst())
guard arguments.count == 2, let scenario = scenarios[arguments[0]], let count = Int(arguments[1]), count >= 0 else {
    print("usage: MultiplexerBenchmark <scenario> <count>; scenarios: \(scenarios.keys.sorted().joined(separator: ", "))")
    exit(64)
}

let loop = EmbeddedEventLoop()
let output = CountingOutput()
let endpoint = CountingEndpoint()
var logger = Logger(label: "benchmark")
logger.logLevel = .critical
let multiplexer = TunnelMultiplexer(role: .client, output: output, eventLoop: loop, logger: logger)
guard let identifier = multiplexer.openFlow(.tcp(TunnelEndpoint(host: "example.com", port: 443)), endpoint: { _ in .tcp(endpoint) }, completion: { _ in }) else {
    print("the multiplexer refused the benchmark's flow")
    exit(1)
}
multiplexer.receive(.message(.openResult(identifier: identifier, result: .success)))
loop.run()

let payload = ByteBuffer(repeating: 0x5a, count: scenario.payload)
for _ in 0..<count {
    if scenario.fromPeer {
        multiplexer.receive(.message(.data(identifier: identifier, payload: payload)))
        multiplexer.peerReadBurstEnded()
    } else {
        multiplexer.flow(identifier, didRead: payload, from: nil)
    }
    loop.run()
}
let moved = scenario.fromPeer ? endpoint.bytes : output.messages
if moved < count {
    print("only \(moved) of \(count) messages arrived")
    exit(1)
}
