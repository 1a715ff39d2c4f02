import Dispatch
import Glibc
import Logging
import NIOCore
import NIOEmbedded
import NIOPosix
@testable import SimpleTunnelServices

/// A client's first bytes, through the frame and message decoders into the
/// login gate, with the server's real password checker on a thread of its
/// own. The users are those of the fixtures (`Fixtures/valid/authenticate*`),
/// hashed with one iteration so that a check costs microseconds: inputs that
/// keep a fixture's login reach acceptance and the messages held behind it;
/// the rest are refused, after a check or before one.
func fuzzAuthenticationGate(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = ByteBuffer(bytes: UnsafeBufferPointer(start: data, count: size))
    let finished = DispatchSemaphore(value: 0)
    Task {
        await GateFixture.feed(bytes)
        finished.signal()
    }
    finished.wait()
    return 0
}

enum GateFixture {
    static func feed(_ bytes: ByteBuffer) async {
        let channel = NIOAsyncTestingChannel()
        do {
            try await channel.testingEventLoop.executeInContext {
                try channel.pipeline.syncOperations.addTunnelMessageCodec()
                try channel.pipeline.syncOperations.addHandler(TunnelAuthenticationGate(
                    users: users, limiter: LoginRateLimiter(), checker: checker, refusals: refusals,
                    source: ClientAddressGroup(text: "fuzz"), logger: logger))
            }
            try await channel.writeInbound(bytes)
        } catch {
            // A fault that ends the tunnel.
        }
        // The checker has one thread: once a job queued after the input's check
        // has run, that check's answer waits on the channel's loop.
        try? await checkerThread.runIfActive {}
        await channel.testingEventLoop.run()
        _ = try? await channel.finish(acceptAlreadyClosed: true)
    }

    static let users = UserDatabase(users: [
        "alice": hash("d63fa1f74cd7e3db498fdd14a1e8aa34937ba1e9cf663db83a790d458a8e849a"),  // correct horse battery staple
        "zoë🦊": hash("487b9aa2f2d0c792411ac898f181ddfb982935f19abfb220a4a022189f0522d1"),  // pässwörd
    ])
    /// PBKDF2-SHA256, one iteration, salt 00 01 … 0f.
    private static func hash(_ hex: String) -> PasswordHash {
        PasswordHash(iterations: 1, salt: Array(0..<16), hash: HexEncoding.decode(hex) ?? [])
    }

    /// FUZZ_LOG=1 shows the gate's log lines (run the binary on chosen files).
    static let logger = Logger(label: "fuzz") { label in
        getenv("FUZZ_LOG") == nil ? SwiftLogNoOpLogHandler() as any LogHandler : StreamLogHandler.standardError(label: label)
    }
    static let checkerThread: NIOThreadPool = {
        let pool = NIOThreadPool(numberOfThreads: 1)
        pool.start()  // its queue is in Fuzz/lsan-suppressions.txt
        return pool
    }()
    static let checker = PasswordChecker(threadPool: checkerThread)
    static let refusals = ThrottledRefusalLog<LoginRefusal>("refusing logins", interval: .seconds(10), logger: logger)
}
