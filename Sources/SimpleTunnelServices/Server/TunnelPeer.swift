import Foundation
import NIOConcurrencyHelpers
import NIOCore

/// The client at the other end of one server tunnel: who it is, once its
/// login or verified certificate says so, and how to end its tunnel.
public final class TunnelPeer: Sendable {
    let channel: Channel
    /// The client's address: the connection's peer, or the client a balancer's PROXY header named.
    let address: SocketAddress?
    /// When the connection was accepted.
    let since: Date
    private let login = NIOLockedValueBox<String?>(nil)
    /// The lease's addresses as `status` shows them (`10.90.0.2 and fd00:90::2`).
    private let leasedAddress = NIOLockedValueBox<String?>(nil)

    init(channel: Channel, address: SocketAddress?, since: Date = Date()) {
        self.channel = channel
        self.address = address
        self.since = since
    }

    /// Set by the authentication gate when the login is accepted.
    func loggedIn(as login: String) {
        self.login.withLockedValue { $0 = login }
    }

    /// The login this tunnel was accepted with; nil before, or without logins.
    var currentLogin: String? { login.withLockedValue { $0 } }

    /// Set by the IP layer when this tunnel's IP flow leases an address, cleared when it lets go.
    func leased(_ address: String?) {
        leasedAddress.withLockedValue { $0 = address }
    }

    var currentLease: String? { leasedAddress.withLockedValue { $0 } }

    /// The key of this client's durable lease: its login, else its verified
    /// certificate subject; nil for an anonymous client. Only on the tunnel's event loop.
    var identity: String? {
        if let login = currentLogin {
            return FixedAddresses.client(login: login)
        }
        return certificateSubject.map { "subject:\($0)" }
    }

    /// The subject of the client's verified certificate. Only on the tunnel's event loop.
    var certificateSubject: String? {
        guard let session = (try? channel.pipeline.syncOperations.handler(type: TLSHandler.self))?.sessionInfo,
            session.peerCertificateVerified, let subject = session.peerCertificateSubject
        else { return nil }
        return subject
    }

    /// Ends the tunnel (a newer session of the same client replaced it, or the operator asked).
    func close() {
        channel.close(promise: nil)
    }
}
