import Logging
import NIOCore
import NIOEmbedded
import NIOPosix
@testable import SimpleTunnelServices

/// A client's first bytes, through the frame and message decoders into the
/// login gate, on an `EmbeddedChannel`. The gate's password check would take a
/// slow hash per input, so its thread pool is never started: every
/// `authenticate` is refused at once, through the same path as a wrong password.
func fuzzAuthenticationGate(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let channel = EmbeddedChannel()
    let gate = TunnelAuthenticationGate(
        users: GateFixture.users, limiter: LoginRateLimiter(), checker: GateFixture.checker, refusals: GateFixture.refusals,
        source: ClientAddressGroup(text: "fuzz"), logger: GateFixture.logger)
    do {
        try channel.pipeline.syncOperations.addTunnelMessageCodec()
        try channel.pipeline.syncOperations.addHandler(gate)
        try channel.writeInbound(ByteBuffer(bytes: UnsafeBufferPointer(start: data, count: size)))
    } catch {
        // A fault that ends the tunnel.
    }
    channel.embeddedEventLoop.run()
    _ = try? channel.finish(acceptAlreadyClosed: true)
    return 0
}

enum GateFixture {
    static let users = UserDatabase()
    static let logger = Logger(label: "fuzz", factory: { _ in SwiftLogNoOpLogHandler() })
    static let checker = PasswordChecker(threadPool: NIOThreadPool(numberOfThreads: 1))
    static let refusals = ThrottledRefusalLog<LoginRefusal>("refusing logins", interval: .seconds(10), logger: logger)
}
