import Logging
import NIOCore

extension TunnelMultiplexer {
    /// Asks the server to open a flow for a local end, which `endpoint` makes
    /// with the flow's identifier and sink before anything is sent. A TCP
    /// flow's end is read at once (early data, PROTOCOL.md A6); others once
    /// the server answers. `completion` gets the configuration an IP flow
    /// carries, or why the open failed. Returns the identifier chosen.
    @discardableResult
    public func openFlow(
        _ request: TunnelOpenRequest,
        endpoint make: (FlowReporter) throws -> LocalFlowEnd,
        completion: @escaping (Result<[String: PropertyListValue]?, FlowOpenFailure>) -> Void
    ) -> TunnelConnectionIdentifier? {
        guard !isClosed else {
            completion(.failure(FlowOpenFailure(.internalError, "the tunnel is closed")))
            return nil
        }
        guard flows.count < limits.maximumFlows else {
            completion(.failure(FlowOpenFailure(.refused, "this tunnel already has \(limits.maximumFlows) flows")))
            return nil
        }
        // Identifiers are never reused within a tunnel, so a late answer can't reach a new flow.
        let identifier = client.nextIdentifier
        client.nextIdentifier += 1
        let end: LocalFlowEnd
        do {
            end = try make(FlowReporter(identifier: identifier, sink: self))
        } catch {
            completion(.failure(FlowOpenFailure(.internalError, "the local end could not be set up: \(error)")))
            return nil
        }
        let kind = FlowState.Kind(request)
        assert(end.kind == kind, "a \(end.kind) end for \(request)")
        client.opens[identifier] = completion
        sendControl(.open(identifier: identifier, request: request))
        if kind == .ip {
            addIPFlow(identifier, .awaitingOpenResult(queueLimit: limits.ipQueueLimit), endpoint: end)
        } else {
            addFlow(identifier, .awaitingOpenResult(kind, limits: limits.flowLimits, now: .now()), endpoint: end)
        }
        return identifier
    }

    /// Enters a new flow in the table and reconciles it with its first state.
    func addFlow(_ identifier: TunnelConnectionIdentifier, _ flow: FlowState, endpoint: LocalFlowEnd?) {
        let added = flows.insert(.stream(flow), for: identifier)
        assert(added, "flow \(identifier) is in the table already")
        if let endpoint {
            endpoints[identifier] = EndpointSlot(end: endpoint)
        }
        if flow.kind == .udp { udp.count += 1 }
        reconcile(identifier)
    }

    /// Enters a new IP flow in the table (it has nothing to send or read yet).
    func addIPFlow(_ identifier: TunnelConnectionIdentifier, _ flow: IPFlowState, endpoint: LocalFlowEnd?) {
        let added = flows.insert(.ip(flow), for: identifier)
        assert(added, "flow \(identifier) is in the table already")
        if let endpoint {
            endpoints[identifier] = EndpointSlot(end: endpoint)
        }
    }

    /// Asks the server for its configuration (PROTOCOL.md A3, command 9).
    public func fetchConfiguration(completion: @escaping (Result<[String: PropertyListValue], TunnelClosedError>) -> Void) {
        guard !isClosed else { return completion(.failure(TunnelClosedError())) }
        client.configurations.append(completion)
        sendControl(.fetchConfiguration(identifier: 0))
    }

    /// Sends a login (PROTOCOL.md B2), taking result 4 as "try again later".
    public func authenticate(login: String, password: String, completion: @escaping (Result<TunnelLoginAnswer, TunnelClosedError>) -> Void) {
        guard !isClosed else { return completion(.failure(TunnelClosedError())) }
        client.authentications.append(completion)
        sendControl(.authenticate(login: login, password: password, offersRetryLater: true))
    }
}

/// The server's answer to a login: its result code and, with a refusal, why (PROTOCOL.md B2).
public struct TunnelLoginAnswer: Sendable, Hashable {
    public var result: TunnelConnectionOpenResult
    public var detail: TunnelLoginRefusalDetail?

    public init(result: TunnelConnectionOpenResult, detail: TunnelLoginRefusalDetail? = nil) {
        self.result = result
        self.detail = detail
    }
}
