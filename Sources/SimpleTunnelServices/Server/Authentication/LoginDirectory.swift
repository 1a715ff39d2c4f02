import NIOCore

/// Where the server finds the password records a login is checked against:
/// the users file (`UserDatabase`, the default) or the database several
/// servers share (`DatabaseLogins`). Only the lookup is here; the slow hash
/// runs afterwards on the `PasswordChecker`'s threads.
public protocol LoginDirectory: Sendable {
    /// The records needed to check `login`: at most that login's own, costing
    /// the directory's highest iteration count to check (`UserDatabase.checkCost`)
    /// so that no login, known or not, takes longer than another. Fails with
    /// `LoginDirectoryRefusedLogin` when the login itself cannot be looked up,
    /// otherwise when the directory cannot be asked right now.
    func records(for login: String, on eventLoop: EventLoop) -> EventLoopFuture<UserDatabase>

    /// False when `login` is gone since its records were handed out (a reload
    /// removed it while its password was checked): the check no longer counts.
    func stillKnows(_ login: String) -> Bool
}

extension LoginDirectory {
    public func stillKnows(_ login: String) -> Bool { true }
}

extension UserDatabase: LoginDirectory {
    /// The file is in memory: all of it, at once.
    public func records(for login: String, on eventLoop: EventLoop) -> EventLoopFuture<UserDatabase> {
        eventLoop.makeSucceededFuture(self)
    }
}

/// The directory refused the login itself as malformed (a byte its store
/// cannot hold): the client's doing, so a failed login, counted as one.
public struct LoginDirectoryRefusedLogin: Error, Sendable {
    public let reason: String

    public init(reason: String) {
        self.reason = reason
    }
}

/// The directory could not be asked: the login is neither accepted nor refused, and the client tries again later.
struct LoginDirectoryUnavailable: Error {
    let reason: String
}
