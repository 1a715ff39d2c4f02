import Logging
import NIOConcurrencyHelpers
import NIOCore

/// The control socket a client answers on, or waits for. A client started
/// while another answers on the default path tries again every
/// `retryInterval` and takes the socket over once that client is gone, so
/// that `tunnel-client status` finds the client still running.
final class ControlSocketClaim: Sendable {
    private let server: NIOLockedValueBox<ControlServer?>
    private let waiting: Task<Void, Never>?

    private init(server: NIOLockedValueBox<ControlServer?>, waiting: Task<Void, Never>?) {
        self.server = server
        self.waiting = waiting
    }

    /// Binds `path` now; when another client holds it and `required` is false,
    /// keeps trying in the background instead of failing.
    static func start(
        path: String, required: Bool, handlers: [String: ControlServer.Handler], afterAnswer: [String: @Sendable () -> Void] = [:],
        group: EventLoopGroup, logger: Logger,
        retryInterval: Duration = .seconds(2)
    ) async throws -> ControlSocketClaim {
        do {
            let server = try await ControlServer.start(path: path, handlers: handlers, afterAnswer: afterAnswer, group: group, logger: logger)
            return ControlSocketClaim(server: NIOLockedValueBox(server), waiting: nil)
        } catch ControlError.socketInUse(let path, _) where !required {
            logger.warning("another tunnel-client answers on \(path): this one takes the control socket over when that one stops (or give it --control PATH)")
            let box = NIOLockedValueBox<ControlServer?>(nil)
            let waiting = Task {
                while true {
                    try? await Task.sleep(for: retryInterval)
                    if Task.isCancelled { return }
                    do {
                        let server = try await ControlServer.start(path: path, handlers: handlers, afterAnswer: afterAnswer, group: group, logger: logger)
                        box.withLockedValue { $0 = server }
                        logger.notice("the tunnel-client that answered on \(path) has stopped: this one answers there now")
                        return
                    } catch ControlError.socketInUse {
                        continue
                    } catch {
                        logger.warning("cannot take over the control socket \(path): \(error); this client has none")
                        return
                    }
                }
            }
            return ControlSocketClaim(server: box, waiting: waiting)
        }
    }

    /// Stops waiting, and closes the socket if this client holds it.
    func close() async {
        waiting?.cancel()
        await waiting?.value
        await server.withLockedValue { $0 }?.close()
    }
}
