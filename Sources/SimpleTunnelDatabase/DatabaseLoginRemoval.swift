import Logging
import PostgresNIO
import SimpleTunnelServices

/// How every server hears that a login was removed from the database: a
/// trigger on the logins table NOTIFYs its name (schema version 3), and each
/// server LISTENs. NOTIFY needs no privilege, so a notice is only a hint: the
/// tunnels end only when the logins table, asked again, no longer has the login.
enum DatabaseLoginRemoval {
    static let notificationChannel = "simpletunnel_logins"
}

extension TunnelDatabase {
    func listenForRemovedLogins() async {
        let confirmations = NoticeConfirmations<String>(what: "logins removed", logger: logger) { login in
            await self.confirmRemoval(of: login)
        }
        await listen(on: DatabaseLoginRemoval.notificationChannel, for: "logins removed from the database") { login in
            guard UserDatabase.isValidLogin(login) else { return }
            confirmations.notice(login)
        }
    }

    /// Registers what ends the tunnels of a login the database no longer has.
    public func whenLoginRemoved(_ end: @escaping @Sendable (String) -> Void) {
        loginRemovalHandlers.withLockedValue { $0.append(end) }
    }

    /// Ends `login`'s tunnels if the logins table no longer has it. A notice for
    /// a login still there (sent by hand, or added back since) changes nothing.
    private func confirmRemoval(of login: String) async {
        guard UserDatabase.isValidLogin(login) else { return }
        let stillThere: Bool
        do {
            stillThere = try await perform("confirming a removed login") { client, logger in
                var found = false
                for try await _ in try await client.query("SELECT 1 FROM simpletunnel_logins WHERE login = \(login)", logger: logger).decode(Int.self) {
                    found = true
                }
                return found
            }
        } catch {
            // `perform` logged why; the tunnels stay, as a notice alone ends none.
            return
        }
        guard !stillThere else { return }
        let handlers = loginRemovalHandlers.withLockedValue { $0 }
        for end in handlers {
            end(login)
        }
    }
}
