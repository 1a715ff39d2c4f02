import Foundation
import NIOCore

/// The user id of the process at the other end of a Unix socket (SO_PEERCRED).
enum PeerCredentials {
    /// Linux's `struct ucred`, which Swift's Glibc module does not export.
    private struct Credentials {
        var pid: Int32 = 0
        var uid: UInt32 = 0
        var gid: UInt32 = 0
    }

    static func userID(of channel: Channel) -> EventLoopFuture<uid_t> {
        guard let provider = channel as? SocketOptionProvider else {
            return channel.eventLoop.makeFailedFuture(ChannelError.operationUnsupported)
        }
        let credentials: EventLoopFuture<Credentials> = provider.unsafeGetSocketOption(
            level: .socket, name: NIOBSDSocket.Option(rawValue: SO_PEERCRED))
        return credentials.map { uid_t($0.uid) }
    }
}
