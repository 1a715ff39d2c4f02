import Logging
import PostgresNIO
import SimpleTunnelServices

/// How a server hears that another server took over one of its sessions: it
/// LISTENs on one connection kept for that, and a lease transaction that
/// replaces a session elsewhere NOTIFYs its server and session at commit.
/// NOTIFY needs no privilege, so a notice is only a hint that the sessions
/// table is asked about (`DatabaseSessionTakeover`). When the connection drops
/// (the database restarted) it listens again a second later.
extension TunnelDatabase {
    func listenForTakenOverSessions() async {
        await listen(on: DatabaseLeaseRequest.notificationChannel, for: "sessions other servers take over", marksListening: true) { payload in
            self.takenOver(payload)
        }
    }

    /// Keeps one connection LISTENing on `channel`, handing each notice's payload to `notice`. The connection is its own,
    /// outside the pool: it is held for the server's life, and tried again every second while the database is away
    /// (when it drops, the database is probed too: `DatabaseHealth`).
    func listen(on channel: String, for what: String, marksListening: Bool = false, _ notice: @escaping @Sendable (String) -> Void) async {
        var failures = LineRateLimiter(interval: .seconds(60))
        while !Task.isCancelled {
            do {
                let connection = try await connectAlone()
                try await Self.closing(connection) {
                    try await withTaskCancellationHandler {
                        try await connection.listen(on: channel) { notifications in
                            if marksListening { listening.withLockedValue { $0 = true } }
                            logger.debug("listening for \(what)")
                            for try await notification in notifications {
                                notice(notification.payload)
                            }
                        }
                    } onCancel: {
                        // The notifications never end on their own.
                        connection.close().whenComplete { _ in }
                    }
                }
            } catch {
                // Shutting down: the listening connection was closed on purpose, nothing to retry or report.
                if Task.isCancelled { break }
                if case .unavailable = DatabaseError.classifying(error) {
                    health.withLockedValue { $0.operationFoundItAway(now: .now) }
                }
                if let unlogged = failures.admit() {
                    logger.warning(
                        "not listening for \(what); retrying every second",
                        metadata: ["reason": "\(String(reflecting: error))", "unlogged": "\(unlogged)"])
                }
            }
            if marksListening { listening.withLockedValue { $0 = false } }
            try? await Task.sleep(for: .seconds(1))
        }
    }

    /// Whether takeovers by other servers reach this one now.
    public var isListening: Bool { listening.withLockedValue { $0 } }

    private func takenOver(_ payload: String) {
        guard let space = payload.lastIndex(of: " "), payload[..<space] == serverID,
            let session = Int64(payload[payload.index(after: space)...])
        else { return }
        let handlers = sessionEndHandlers.withLockedValue { $0 }
        for end in handlers {
            end(UInt64(bitPattern: session))
        }
    }
}
