import Foundation
import NIOCore
import Testing
@testable import SimpleTunnelServices

/// `--plaintext` (Apple's stock sample app) and `--plaintext-clients`: the
/// rules that keep an unencrypted, unauthenticated listener to the networks named.
@Suite("Server launch: plaintext mode")
struct PlaintextLaunchTests {
    func prepare(_ edit: (inout TunnelServerLaunchOptions) -> Void, resolvConf: String? = nil) throws -> TunnelServerLaunch {
        var options = TunnelServerLaunchOptions.none
        options.stateDirectory = NSTemporaryDirectory() + "plaintext-launch-\(UUID().uuidString)"
        edit(&options)
        return try TunnelServerLaunch.prepare(options, resolvConf: resolvConf)
    }

    func failure(_ edit: (inout TunnelServerLaunchOptions) -> Void) -> String {
        do {
            _ = try prepare(edit)
            return "started"
        } catch {
            return "\(error)"
        }
    }

    @Test func offLoopbackItIsRefusedWithoutTheNetworksAndTheErrorNamesTheOption() {
        for host in ["192.0.2.1", "0.0.0.0", "::", "2001:db8::1"] {
            let error = failure {
                $0.plaintext = true
                $0.host = host
            }
            #expect(error.contains("--plaintext-clients") && error.contains(host), "\(error)")
        }
    }

    @Test func offLoopbackWithTheNetworksItStartsAdmittingOnlyThem() throws {
        let launch = try prepare {
            $0.plaintext = true
            $0.host = "0.0.0.0"
            $0.plaintextClients = "192.168.1.0/24,fd00:1::/64"
        }
        #expect(launch.settings.tls == nil)
        let networks = try #require(launch.settings.clientNetworks)
        #expect(networks.contains(try #require(IPAddress("192.168.1.30"))))
        #expect(!networks.contains(try #require(IPAddress("192.168.7.30"))))
        #expect(launch.settings.admissionLimits.clientNetworks == networks)
        // Said once at start: what the mode exposes, and to whom.
        let warning = try #require(launch.warnings.first { $0.hasPrefix("--plaintext") })
        #expect(warning.contains("neither encrypted nor authenticated"), "\(warning)")
        #expect(warning.contains("192.168.1.0/24,fd00:1::/64"), "\(warning)")
        #expect(!warning.contains("this machine"), "\(warning)")
        // A public listener's destination defaults still apply: no loopback services, no metadata service.
        #expect(launch.policy.refusal(forHost: "127.0.0.1", port: 22) != nil)
    }

    @Test func onLoopbackTheWarningSaysHowToReachItFromADevice() throws {
        let launch = try prepare { $0.plaintext = true }
        #expect(launch.settings.clientNetworks == nil, "every local program may connect")
        let warning = try #require(launch.warnings.first { $0.hasPrefix("--plaintext") })
        #expect(warning.contains("--plaintext-clients") && warning.contains("neither encrypted nor authenticated"), "\(warning)")
        #expect(!warning.contains("stock sample app on this machine"), "\(warning)")
    }

    @Test func theNetworksNeedPlaintextAndMustParse() {
        let withoutPlaintext = failure { $0.plaintextClients = "192.168.1.0/24" }
        #expect(withoutPlaintext.contains("--plaintext-clients applies only with --plaintext"), "\(withoutPlaintext)")
        let bad = failure {
            $0.plaintext = true
            $0.host = "0.0.0.0"
            $0.plaintextClients = "192.168.1.1/24"
        }
        #expect(bad.contains("--plaintext-clients") && bad.contains("192.168.1.0/24"), "\(bad)")
    }

    @Test func theFirstMessageDeadlineIsMinutesUnlessTheFlagOrTheFileSaysOtherwise() throws {
        let plaintext = try prepare { $0.plaintext = true }
        #expect(plaintext.settings.firstMessageTimeout == .seconds(300))
        let tls = try prepare { _ in }
        #expect(tls.settings.firstMessageTimeout == .seconds(10))
        let flag = try prepare {
            $0.plaintext = true
            $0.firstMessageTimeout = .seconds(20)
        }
        #expect(flag.settings.firstMessageTimeout == .seconds(20))
        let folder = try TemporaryDirectory()
        let path = try folder.write("server.plist", text: """
            <?xml version="1.0" encoding="UTF-8"?>
            <plist version="1.0"><dict><key>Server</key><dict><key>Limits</key><dict>
              <key>FirstMessageTimeout</key><integer>30</integer>
            </dict></dict></dict></plist>
            """)
        let file = try prepare {
            $0.plaintext = true
            $0.configurationPath = path
        }
        #expect(file.settings.firstMessageTimeout == .seconds(30))
        let warning = try #require(file.warnings.first { $0.hasPrefix("--plaintext") })
        #expect(warning.contains("30 s"), "\(warning)")
    }
}
