import NIOCore

/// Where the server finds the password records a login is checked against:
/// the users file (`UserDatabase`, the default) or the database several
/// servers share (`DatabaseLogins`). Only the lookup is here; the slow hash
/// runs afterwards on the `PasswordChecker`'s threads.
public protocol LoginDirectory: Sendable {
    /// The records needed to check `login`: at most that login's own, with the
    /// directory's iteration count so that an unknown login costs as much to
    /// check. Fails when the directory cannot be asked right now.
    func records(for login: String, on eventLoop: EventLoop) -> EventLoopFuture<UserDatabase>
}

extension UserDatabase: LoginDirectory {
    /// The file is in memory: all of it, at once.
    public func records(for login: String, on eventLoop: EventLoop) -> EventLoopFuture<UserDatabase> {
        eventLoop.makeSucceededFuture(self)
    }
}

/// The directory could not be asked: the login is neither accepted nor refused, and the client tries again later.
struct LoginDirectoryUnavailable: Error {
    let reason: String
}
