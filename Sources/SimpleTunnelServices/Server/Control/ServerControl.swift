import Foundation
import Logging
import NIOCore

/// The running server's control socket: `status` lists the tunnels, `kick`
/// ends one login's tunnels, `reload` reads the files again and answers with
/// what came of it. Only root and the server's user are answered.
public enum ServerControl {
    public static func start(
        path: String, server: TunnelServer, reloader: ServerReloader? = nil, owner: (uid: uid_t, gid: gid_t)? = nil, group: EventLoopGroup,
        logger: Logger
    ) async throws -> ControlSocketServer {
        try await ControlSocketServer.start(path: path, owner: owner, program: "tunnel-server", group: group, logger: logger) { payload in
            let response = await answer(payload, server: server, reloader: reloader, logger: logger)
            return (try? JSONEncoder().encode(response)) ?? Data()
        }
    }

    static func answer(_ payload: Data, server: TunnelServer, reloader: ServerReloader?, logger: Logger) async -> ServerControlProtocol.Response {
        guard let request = try? JSONDecoder().decode(ServerControlProtocol.Request.self, from: payload) else {
            return .init(ok: false, error: "a request is a JSON object with a \"type\"; known: kick, reload, status, usage")
        }
        switch request.type {
        case "status":
            return .init(ok: true, status: await server.status())
        case "kick":
            guard let login = request.login else { return .init(ok: false, error: "kick needs a \"login\"") }
            let ended = server.endTunnels(ofLogin: login)
            logger.notice("control socket: kicked \(PeerText.quoted(login))", metadata: ["tunnels": "\(ended)"])
            guard ended > 0 else {
                return .init(ok: false, ended: 0, error: "no tunnel is logged in as \(PeerText.quoted(login))")
            }
            return .init(ok: true, ended: ended)
        case "reload":
            guard let reloader else { return .init(ok: false, error: "this server was started without a way to reload") }
            logger.notice("control socket: reload asked for")
            let report = reloader.reload()
            return .init(ok: report.succeeded, reload: report, error: report.succeeded ? nil : "not everything was reloaded")
        case "usage":
            var since: UsageDay?
            if let text = request.since {
                guard let day = UsageDay(parsing: text) else {
                    return .init(ok: false, error: "since \(PeerText.quoted(text, limit: 40)) is not a date: give YYYY-MM-DD (UTC)")
                }
                since = day
            }
            do {
                return .init(ok: true, usage: try await server.usage(since: since))
            } catch {
                return .init(ok: false, error: "cannot read the usage: \(error)")
            }
        default:
            return .init(ok: false, error: "unknown request type \(PeerText.quoted(request.type, limit: 32)); known: kick, reload, status, usage")
        }
    }
}
