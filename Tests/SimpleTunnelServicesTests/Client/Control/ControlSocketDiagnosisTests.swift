import Foundation
import Testing
@testable import SimpleTunnelServices

/// `tunnel-client status` without an answer says whose socket it is and what to run.
@Suite("Client control socket: no answer, and why")
struct ControlSocketDiagnosisTests {
    static func diagnosis(
        _ reach: ControlSocketDiagnosis.Reach, path: String = "/tmp/simpletunnel-65534/client.sock", isDefault: Bool = true,
        owner: (uid_t, String)? = nil, rootSocket: String? = nil
    ) -> String {
        ControlSocketDiagnosis(
            request: "status", path: path, isDefaultPath: isDefault, reach: reach, currentUser: 65534,
            owner: owner.map { (uid: $0.0, name: $0.1) }, rootSocket: rootSocket
        ).description
    }

    @Test func aClientStartedWithSudoIsPointedAt() {
        let text = Self.diagnosis(.nothingThere, rootSocket: "/run/simpletunnel-client/client.sock")
        #expect(text.contains("/run/simpletunnel-client/client.sock") && text.contains("sudo tunnel-client status"), "\(text)")
        #expect(text.contains("--control PATH"), "\(text)")
    }

    @Test func withoutARootClientTheMessageStaysPlain() {
        let text = Self.diagnosis(.nothingThere)
        #expect(text.contains("no tunnel-client answers on /tmp/simpletunnel-65534/client.sock") && !text.contains("sudo"), "\(text)")
        // A --control path that nobody answers on is not about sudo either.
        let explicit = Self.diagnosis(.nothingThere, path: "/tmp/x.sock", isDefault: false, rootSocket: "/run/simpletunnel-client/client.sock")
        #expect(!explicit.contains("sudo"), "\(explicit)")
    }

    @Test func aSocketOfAnotherUserIsNamedAsSuch() {
        for reach in [ControlSocketDiagnosis.Reach.notPermitted, .closedWithoutAnswer] {
            let text = Self.diagnosis(reach, path: "/run/x/client.sock", isDefault: false, owner: (0, "root"))
            #expect(text.contains("belongs to root (uid 0)"), "\(text)")
            #expect(text.contains("`sudo tunnel-client status --control /run/x/client.sock`"), "\(text)")
        }
        let unknown = Self.diagnosis(.notPermitted)
        #expect(unknown.contains("belongs to another user") && unknown.contains("sudo tunnel-client status`"), "\(unknown)")
    }
}
