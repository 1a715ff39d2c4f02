import Foundation
import NIOCore
import NIOPosix
import Synchronization
import Testing
@testable import SimpleTunnelServices

/// `status`, `stop` and `kick` against a program that takes the connection and
/// never answers (stopped with SIGSTOP, or wedged): the command ends with an
/// error that says so, instead of hanging.
@Suite("Control socket answer deadline", .timeLimit(.minutes(3)))
struct ControlAnswerDeadlineTests {
    @Test func aSilentProgramIsReportedAfterTheDeadline() async throws {
        let folder = NSTemporaryDirectory() + "control-silent-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = folder + "/silent.sock"
        let accepted = AcceptCount()
        // Accepts and reads, but never writes a byte back.
        let listener = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { _ in
                accepted.count.withLock { $0 += 1 }
                return MultiThreadedEventLoopGroup.singleton.next().makeSucceededVoidFuture()
            }
            .bind(unixDomainSocketPath: path).get()

        let started = ContinuousClock.now
        let failure = await #expect(throws: ControlError.self) {
            _ = try await ControlSocketClient.exchange(
                Data("{\"type\":\"status\"}".utf8), path: path, program: "tunnel-client",
                group: MultiThreadedEventLoopGroup.singleton, answerDeadline: .milliseconds(300)
            )
        }
        let waited = ContinuousClock.now - started
        try? await listener.close()

        guard case .noAnswerInTime(let reported, let program, let seconds) = failure else {
            Issue.record("expected noAnswerInTime, got \(String(describing: failure))")
            return
        }
        #expect(reported == path && program == "tunnel-client" && seconds == 0.3)
        #expect(failure?.description.contains("gave no answer in 0.3 s") == true, "\(String(describing: failure))")
        #expect(accepted.count.withLock { $0 } == 1)
        // Well under the suite's minute, though a full parallel run on two cores may delay the timer's wake-up by seconds.
        #expect(waited >= .milliseconds(300) && waited < .seconds(40), "\(waited)")
    }
}

/// Connections the silent listener took, counted on its event loop.
private final class AcceptCount: Sendable {
    let count = Mutex(0)
}
