import Testing
@testable import SimpleTunnelServices

@Suite("The client command the server prints works when pasted")
struct ClientCommandHintTests {
    static let pin = String(repeating: "ab", count: 32)
    static let interfaces: Set<IPAddress> = Set(["127.0.0.1", "::1", "169.254.3.4", "fe80::1", "2001:db8::5", "192.0.2.10", "10.1.2.3"].compactMap(IPAddress.init))

    static func hint(host: String, login: Bool = false, interfaces: Set<IPAddress> = interfaces, built: Bool = false) -> ClientCommandHint {
        ClientCommandHint.make(pinSHA256: pin, listenHost: host, port: 4433, requiresLogin: login, interfaceAddresses: interfaces, runFromBuildFolder: built)
    }

    @Test func aLoopbackServerPrintsItsOwnAddress() {
        #expect(Self.hint(host: "127.0.0.1") == ClientCommandHint(command: "tunnel-client config --server 127.0.0.1:4433 --pin-sha256 \(Self.pin)", ipCommand: nil, note: nil, server: "127.0.0.1:4433"))
        #expect(Self.hint(host: "::1").command.contains("--server [::1]:4433 "))
    }

    @Test(arguments: ["0.0.0.0", "::", "[::]"])
    func anUnspecifiedListenerNamesAnAddressClientsCanReach(host: String) {
        let hint = Self.hint(host: host)
        #expect(hint.command.contains("--server 10.1.2.3:4433 "), "\(hint.command)")
        #expect(hint.note?.contains("10.1.2.3 is one of this machine's addresses") == true)
        let none = Self.hint(host: host, interfaces: Set(["127.0.0.1", "fe80::1"].compactMap(IPAddress.init)))
        #expect(none.command.contains("--server SERVER-ADDRESS:4433 "), "\(none.command)")
        #expect(none.note?.contains("replace SERVER-ADDRESS") == true)
    }

    @Test func aServerWithLoginsAsksForTheUser() {
        let hint = Self.hint(host: "192.0.2.10", login: true)
        #expect(hint.command.hasSuffix("--pin-sha256 \(Self.pin) --user NAME"), "\(hint.command)")
        #expect(hint.note?.contains("--password-file FILE or $SIMPLETUNNEL_PASSWORD") == true)
    }

    @Test func beforeInstallingTheClientIsRunBySwift() {
        #expect(Self.hint(host: "127.0.0.1", built: true).command.hasPrefix("swift run tunnel-client config --server 127.0.0.1:4433 "))
    }

    @Test func applesPositionalFormIsTakenOnlyWhenItLooksLikeIt() {
        #expect(AppleCommandLine.rewritten(["8890", "config.plist"]) == ["serve", "--port", "8890", "--config", "config.plist"])
        #expect(AppleCommandLine.rewritten(["8890", "config.plist", "--log-level", "debug"])
            == ["serve", "--port", "8890", "--config", "config.plist", "--log-level", "debug"])
        for arguments in [["--confg", "x.plist"], ["pasword", "alice"], ["8890"], ["8890", "--config", "x"], ["+1", "x"], ["123456", "x"], []] {
            #expect(AppleCommandLine.rewritten(arguments) == arguments, "\(arguments)")
        }
    }

    @Test func aMisspeltSubcommandIsNamed() {
        #expect(AppleCommandLine.misspeltSubcommand(["pasword", "alice"], subcommands: ["serve", "passwd"]) == "Error: Unknown subcommand 'pasword'. Did you mean 'passwd'?")
        #expect(AppleCommandLine.misspeltSubcommand(["passwd", "alice"], subcommands: ["serve", "passwd"]) == nil)
        #expect(AppleCommandLine.misspeltSubcommand(["--port", "1"], subcommands: ["serve", "passwd"]) == nil)
        #expect(AppleCommandLine.misspeltSubcommand(["elephant"], subcommands: ["serve", "passwd"]) == nil)
    }

    @Test func aPlaintextServerPrintsThePlaintextCommandWithAReachableAddress() {
        let hint = ClientCommandHint.make(
            pinSHA256: nil, listenHost: "0.0.0.0", port: 8890, requiresLogin: false, interfaceAddresses: Self.interfaces, runFromBuildFolder: false)
        #expect(hint.command == "tunnel-client config --server 10.1.2.3:8890 --plaintext")
        #expect(hint.server == "10.1.2.3:8890")
    }

    @Test func withTheIPLayerOnTheFullTunnelsCommandIsPrintedToo() {
        let hint = ClientCommandHint.make(
            pinSHA256: Self.pin, listenHost: "0.0.0.0", port: 4433, requiresLogin: true, interfaceAddresses: Self.interfaces, runFromBuildFolder: false,
            offersIPLayer: true)
        #expect(hint.command == "tunnel-client config --server 10.1.2.3:4433 --pin-sha256 \(Self.pin) --user NAME")
        #expect(hint.ipCommand == "sudo tunnel-client ip --server 10.1.2.3:4433 --pin-sha256 \(Self.pin) --user NAME")
        let plaintext = ClientCommandHint.make(
            pinSHA256: nil, listenHost: "127.0.0.1", port: 8890, requiresLogin: false, interfaceAddresses: [], runFromBuildFolder: true, offersIPLayer: true)
        #expect(plaintext.ipCommand == "sudo $(swift build --show-bin-path)/tunnel-client ip --server 127.0.0.1:8890 --plaintext")
        #expect(Self.hint(host: "127.0.0.1").ipCommand == nil, "no IP layer, no ip command")
    }
}
