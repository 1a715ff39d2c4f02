import ArgumentParser
import Foundation
import SimpleTunnelServices

/// `tunnel-server profile LOGIN`: the file a user's `tunnel-client --profile`
/// reads: this server's address, its certificate's pin, the login and the
/// DNS mode. Never a password.
struct Profile: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write a client profile for LOGIN (server address, certificate pin, login, DNS mode; never a password) for `tunnel-client --profile FILE`.",
        discussion: """
            Give the options the server runs with (as for `check`), so the profile pins the certificate it serves; \
            --server is the address clients reach it at.
            """
    )

    @Argument(help: "The login the profile is for (checked against --users; `-` for a server without logins).")
    var login: String

    @Option(name: .customLong("server"), help: "HOST:PORT clients connect to, as they reach this server (a public name or address).")
    var publicAddress: String

    @Option(help: "Write the profile here (mode 0644: it holds no secret). Default: standard output.")
    var output: String?

    @OptionGroup var options: TunnelServerLaunchOptions
    @OptionGroup var process: ServeProcessOptions

    func validate() throws {
        do { _ = try TunnelEndpoint(parsing: publicAddress) } catch { throw ValidationError("--server \(error)") }
    }

    func run() async throws {
        let launch = try Check.launchAsAStartWould(options, refusal: "the configuration would not start, so no profile was written")
        let user: String? = login == "-" ? nil : login
        // Closed when unsure: a profile for a login this server would refuse helps nobody.
        if let user, let users = launch.usersFile, users.users.users[user] == nil {
            StandardError.write("tunnel-server: \(users.path) has no login \(PeerText.quoted(user)); add it first with `tunnel-server passwd \(user) --users \(users.path)`\n")
            throw ExitCode(1)
        }
        if user == nil, launch.settings.authentication != nil {
            StandardError.write("tunnel-server: this server requires a login: name one instead of `-`\n")
            throw ExitCode(1)
        }
        let pin: String
        if let identity = launch.selfSignedIdentity {
            pin = identity.sha256FingerprintHex
        } else if let certificate = options.certificatePath ?? launch.configuration.server.certificatePath {
            do {
                pin = HexEncoding.encode(try CertificateMaker.sha256Fingerprint(ofPEM: [UInt8](try Data(contentsOf: URL(fileURLWithPath: certificate)))))
            } catch {
                StandardError.write("tunnel-server: cannot read the certificate \(certificate) to pin it: \(error)\n")
                throw ExitCode(1)
            }
            StandardError.write("note: the profile pins \(certificate) as it is now; a renewed certificate needs a new profile (or hand clients your CA for --ca)\n")
        } else {
            StandardError.write("tunnel-server: a --plaintext server has no certificate to pin; profiles are for TLS servers\n")
            throw ExitCode(1)
        }
        let profile = ClientProfile(
            server: publicAddress, pinSHA256: [pin], user: user, dns: launch.ipLayer == nil ? nil : DNSMode.auto.rawValue)
        guard let output else {
            print(profile.encoded(), terminator: "")
            return
        }
        do {
            try Data(profile.encoded().utf8).write(to: URL(fileURLWithPath: output), options: .atomic)
            chmod(output, 0o644)
        } catch {
            StandardError.write("tunnel-server: cannot write \(output): \(error)\n")
            throw ExitCode(1)
        }
        print("wrote \(output): hand it to \(user.map { PeerText.quoted($0) } ?? "the user") with their password, for `tunnel-client ip --profile \((output as NSString).lastPathComponent)`")
    }
}
