import Foundation
import NIOPosix
import Testing
@testable import SimpleTunnelServices

/// A status of many tunnels reaches the command whole: answers may be far
/// larger than requests, which a local user sends and a program must bound.
@Suite("Control socket answers of many tunnels", .timeLimit(.minutes(3)))
struct ControlAnswerSizeTests {
    @Test func anAnswerOfTenThousandTunnelsArrivesWhole() async throws {
        let folder = NSTemporaryDirectory() + "control-size-\(UUID().uuidString.prefix(8))"
        defer { try? FileManager.default.removeItem(atPath: folder) }
        // About what `status --json` writes for one tunnel, 10,000 times: 2 MB, 30 times the request limit.
        let row = #"{"login":"alice","peer":"203.0.113.7:50112","leasedAddress":"10.90.0.2","since":"2026-11-28T10:00:00Z","seconds":12,"bytesFromClient":1200042,"bytesToClient":40213,"openFlows":2,"tlsVersion":"TLSv1.3"}"#
        let answer = Data(("[" + Array(repeating: row, count: 10_000).joined(separator: ",") + "]").utf8)
        #expect(answer.count > 30 * ControlFraming.maximumMessageLength)
        let group = MultiThreadedEventLoopGroup.singleton
        let server = try await ControlSocketServer.start(
            path: folder + "/s.sock", program: "tunnel-server", group: group, logger: TunnelFixture.logger) { _ in answer }
        defer { Task { await server.close() } }
        let received = try await ControlSocketClient.exchange(Data("{}".utf8), path: folder + "/s.sock", program: "tunnel-server", group: group)
        #expect(received == answer)
        let decoded = try JSONSerialization.jsonObject(with: received) as? [Any]
        #expect(decoded?.count == 10_000)
    }
}
