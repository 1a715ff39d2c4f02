import Logging
import PostgresNIO
import SimpleTunnelServices

/// What the sessions table says of a session of this server that a takeover
/// notice named. LISTEN/NOTIFY need no privilege, so any role that can connect
/// can send a notice; only the table, which the tunnel's role alone may
/// write, decides whether the session ends.
enum TakeoverVerdict: Hashable, Sendable {
    /// The table still gives the client to this session: the notice is ignored.
    case stillHere
    /// Another server holds the client now.
    case takenOver(by: String)
    /// A newer session of the client holds it on this server.
    case replacedHere
    /// No row names the client any more.
    case gone

    /// `row`: the client's row in the sessions table, if any.
    init(row: (server: String, session: Int64)?, serverID: String, session: Int64) {
        guard let row else {
            self = .gone
            return
        }
        if row.server != serverID {
            self = .takenOver(by: row.server)
        } else {
            self = row.session == session ? .stillHere : .replacedHere
        }
    }
}

extension DatabaseAddressPool {
    /// Tries this often, a second apart, when the database cannot be asked: a
    /// real takeover must not leave two sessions of one client for long.
    static let takeoverConfirmationAttempts = 5

    /// Ends `session` (through `end`) if the sessions table no longer gives
    /// its client to it, saying why and which server took it; a notice for a
    /// session this server does not hold (or no longer) is dropped unasked.
    func confirmTakeover(of session: LeaseBook.Holder, then end: @Sendable (UInt64) -> Void) async {
        for attempt in 1...Self.takeoverConfirmationAttempts {
            guard let client = held.withLockedValue({ $0[session] }) else { return }
            do {
                let verdict = try await sessionsTable(on: session, client: client)
                return act(on: verdict, session: session, client: client, end: end)
            } catch {
                // `perform` logged why; the session stays meanwhile, as a notice alone ends none.
                if attempt < Self.takeoverConfirmationAttempts { try? await Task.sleep(for: .seconds(1)) }
            }
        }
    }

    private func sessionsTable(on session: LeaseBook.Holder, client: String) async throws(DatabaseError) -> TakeoverVerdict {
        let serverID = database.serverID
        return try await database.perform("confirming a session taken over") { postgres, logger in
            var row: (server: String, session: Int64)?
            let rows = try await postgres.query(
                "SELECT server_id, session_id FROM simpletunnel_sessions WHERE client = \(client)", logger: logger)
            for try await found in rows.decode((String, Int64).self) { row = found }
            return TakeoverVerdict(row: row, serverID: serverID, session: Int64(bitPattern: session))
        }
    }

    private func act(on verdict: TakeoverVerdict, session: LeaseBook.Holder, client: String, end: @Sendable (UInt64) -> Void) {
        let logger = database.logger
        var metadata: Logger.Metadata = ["client": "\(client)", "session": "\(session)"]
        switch verdict {
        case .stillHere:
            guard let unlogged = forgedNoticeLog.withLockedValue({ $0.admit() }) else { return }
            metadata["unlogged"] = "\(unlogged)"
            logger.warning(
                """
                ignored a notice that another server took over a session: the database still gives it to this server \
                (a NOTIFY by another role? see README, Several servers: REVOKE CONNECT ON DATABASE … FROM PUBLIC)
                """,
                metadata: metadata)
            return
        case .takenOver(let server):
            metadata["by"] = "\(server)"
            logger.notice("session ended: another server took over its client", metadata: metadata)
        case .replacedHere:
            logger.notice("session ended: a newer session of its client holds it on this server", metadata: metadata)
        case .gone:
            logger.notice("session ended: the database no longer records a session for its client", metadata: metadata)
        }
        end(session)
    }
}
