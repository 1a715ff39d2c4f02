import NIOCore
import NIOPosix
import Testing
@testable import SimpleTunnelServices

@Suite("Why a TCP open failed, as the log and the result say it")
struct ServerFlowOpenerFailureTests {
    @Test func aRefusedConnectNamesTheAddressAsAUserWritesIt() throws {
        let address = try SocketAddress.makeAddressResolvingHost("localhost", port: 1)
        let failure = ServerFlowOpener.classify(IOError(errnoCode: ECONNREFUSED, reason: "connect"), address: address)
        #expect(failure.result == .refused)
        #expect(failure.reason == "127.0.0.1:1 refused the connection" || failure.reason == "[::1]:1 refused the connection", "\(failure.reason)")
    }

    @Test func aTimeoutAndOtherErrorsNameItToo() throws {
        let v6 = try SocketAddress(ipAddress: "::1", port: 8080)
        #expect(ServerFlowOpener.classify(ChannelError.connectTimeout(.seconds(1)), address: v6).reason == "connecting to [::1]:8080 timed out")
        let other = ServerFlowOpener.classify(IOError(errnoCode: EPERM, reason: "connect"), address: v6)
        #expect(other.result == .internalError && other.reason.hasPrefix("connecting to [::1]:8080 failed: "))
        #expect(other.detail == nil)
        let unreachable = ServerFlowOpener.classify(IOError(errnoCode: ENETUNREACH, reason: "connect"), address: v6)
        #expect(unreachable.result == .internalError && unreachable.detail == .networkUnreachable)
        #expect(unreachable.reason == "no route to the network of [::1]:8080")
    }

    @Test func ofSeveralAttemptsARefusalSaysMost() {
        let timeout = FlowOpenFailure(.timeout, "a")
        let refused = FlowOpenFailure(.refused, "b")
        #expect(ServerFlowOpener.mostTelling([timeout, refused]).reason == "b")
        #expect(ServerFlowOpener.mostTelling([timeout]).reason == "a")
        #expect(ServerFlowOpener.mostTelling([]).result == .internalError)
    }
}
