import NIOCore

/// The server side of a SOCKS5 handshake (RFC 1928, no authentication),
/// free of I/O: bytes go in as they arrive, split or glued in any way, and
/// decisions come out for a handler to carry out.
///
/// Greeting → request → (the request is handed out) → reply → established,
/// or failed at any step. Bytes the client sends after its request, before
/// the reply, are kept and handed back on success as application data.
public struct SOCKS5ServerStateMachine: Sendable {
    /// What to do after bytes or an event arrived.
    public enum Action: Hashable, Sendable {
        /// Write these bytes to the client.
        case sendBytes(ByteBuffer)
        /// The client's request is complete: carry it out, then call `reply(_:)`.
        case request(SOCKS5Request)
        /// The client broke the protocol: write `replyBytes` if any, then close.
        case fail(SOCKS5Error, replyBytes: ByteBuffer?)
    }

    /// What to do once the request's outcome is known.
    public enum ReplyAction: Hashable, Sendable {
        /// Write `replyBytes`; then `leftover` (bytes the client sent after
        /// its request) is application data, and if `inputClosed` the client
        /// has already half-closed after sending it.
        case establish(replyBytes: ByteBuffer, leftover: ByteBuffer?, inputClosed: Bool)
        /// Write `replyBytes`, then close.
        case rejectAndClose(replyBytes: ByteBuffer)
        /// The connection already failed or closed; the outcome is moot.
        case ignore
    }

    /// A coarse view of the state, for a handler deciding whether to read.
    public enum Phase: Hashable, Sendable {
        case handshaking
        case awaitingReply
        case established
        case failed
    }

    private enum State {
        /// `buffered` holds a partial message, possibly with more behind it.
        case awaitingGreeting(buffered: ByteBuffer)
        case awaitingRequest(buffered: ByteBuffer)
        case awaitingReply(leftover: ByteBuffer, inputClosed: Bool)
        case established
        case failed
    }

    /// Enough for a typical pipelined first flight (a TLS ClientHello with
    /// post-quantum key shares is about 2 KB) while bounding what an idle
    /// tunnel open can make us hold per connection.
    public static let defaultMaximumBufferedBytes = 16 * 1024

    /// The most bytes held before the reply; more fails the connection.
    public let maximumBufferedBytes: Int
    private var state: State = .awaitingGreeting(buffered: ByteBuffer())

    /// `maximumBufferedBytes` must admit the longest request (262 bytes).
    public init(maximumBufferedBytes: Int = defaultMaximumBufferedBytes) {
        precondition(
            maximumBufferedBytes >= SOCKS5Wire.maximumRequestLength,
            "a SOCKS5 request can be \(SOCKS5Wire.maximumRequestLength) bytes; a smaller limit would refuse valid clients"
        )
        self.maximumBufferedBytes = maximumBufferedBytes
    }

    public var phase: Phase {
        switch state {
        case .awaitingGreeting, .awaitingRequest: return .handshaking
        case .awaitingReply: return .awaitingReply
        case .established: return .established
        case .failed: return .failed
        }
    }

    /// Bytes from the client. Several messages in one buffer give several
    /// actions, in order; an incomplete message gives none.
    public mutating func receiveBytes(_ bytes: ByteBuffer) -> [Action] {
        switch state {
        case .awaitingGreeting(var buffered):
            buffered.writeImmutableBuffer(bytes)
            return advance(greeting: buffered)
        case .awaitingRequest(var buffered):
            buffered.writeImmutableBuffer(bytes)
            return advance(request: buffered, actions: [])
        case .awaitingReply(var leftover, let inputClosed):
            leftover.writeImmutableBuffer(bytes)
            guard leftover.readableBytes <= maximumBufferedBytes else {
                return [failTooMuchData()]
            }
            state = .awaitingReply(leftover: leftover, inputClosed: inputClosed)
            return []
        case .established:
            preconditionFailure("SOCKS5 bytes after the handshake belong to the next handler")
        case .failed:
            return []
        }
    }

    /// The client shut its sending side.
    public mutating func receiveEndOfInput() -> Action? {
        switch state {
        case .awaitingGreeting, .awaitingRequest:
            state = .failed
            return .fail(.endOfInputDuringHandshake, replyBytes: nil)
        case .awaitingReply(let leftover, _):
            state = .awaitingReply(leftover: leftover, inputClosed: true)
            return nil
        case .established, .failed:
            return nil
        }
    }

    /// The handshake deadline passed; moot once the request is complete.
    public mutating func handshakeTimedOut(after timeout: TimeAmount) -> Action? {
        switch state {
        case .awaitingGreeting, .awaitingRequest:
            state = .failed
            return .fail(.handshakeTimedOut(after: timeout), replyBytes: nil)
        case .awaitingReply, .established, .failed:
            return nil
        }
    }

    /// The connection is gone; a later outcome will be ignored.
    public mutating func connectionClosed() {
        state = .failed
    }

    /// The request's outcome: the reply to write and what follows it.
    public mutating func reply(_ outcome: SOCKS5Outcome) -> ReplyAction {
        switch state {
        case .awaitingReply(let leftover, let inputClosed):
            guard outcome.reply == .succeeded else {
                state = .failed
                return .rejectAndClose(replyBytes: outcome.encoded())
            }
            state = .established
            return .establish(
                replyBytes: outcome.encoded(),
                leftover: leftover.readableBytes > 0 ? leftover : nil,
                inputClosed: inputClosed
            )
        case .failed:
            return .ignore
        case .awaitingGreeting, .awaitingRequest, .established:
            preconditionFailure("reply(_:) needs a request awaiting its reply")
        }
    }

    // MARK: - Parsing

    private mutating func advance(greeting buffered: ByteBuffer) -> [Action] {
        var buffered = buffered
        let methods: [UInt8]
        do {
            guard let offered = try SOCKS5HandshakeParser.readGreeting(from: &buffered) else {
                return hold(.awaitingGreeting(buffered: buffered), buffered: buffered.readableBytes, actions: [])
            }
            methods = offered
        } catch {
            state = .failed
            return [.fail(error, replyBytes: nil)]
        }
        guard methods.contains(SOCKS5Wire.Method.noAuthentication) else {
            state = .failed
            let refusal = Self.methodSelection(SOCKS5Wire.Method.noAcceptableMethods)
            return [.fail(.noAcceptableAuthenticationMethod(offered: methods), replyBytes: refusal)]
        }
        return advance(request: buffered, actions: [.sendBytes(Self.methodSelection(SOCKS5Wire.Method.noAuthentication))])
    }

    private mutating func advance(request buffered: ByteBuffer, actions: [Action]) -> [Action] {
        var buffered = buffered
        var actions = actions
        do {
            guard let request = try SOCKS5HandshakeParser.readRequest(from: &buffered) else {
                return hold(.awaitingRequest(buffered: buffered), buffered: buffered.readableBytes, actions: actions)
            }
            guard buffered.readableBytes <= maximumBufferedBytes else {
                actions.append(failTooMuchData())
                return actions
            }
            state = .awaitingReply(leftover: buffered, inputClosed: false)
            actions.append(.request(request))
        } catch {
            state = .failed
            actions.append(.fail(error, replyBytes: Self.failureReply(for: error)))
        }
        return actions
    }

    /// Waits for the rest of a message, unless the client is over its limit.
    private mutating func hold(_ waiting: State, buffered: Int, actions: [Action]) -> [Action] {
        guard buffered <= maximumBufferedBytes else {
            return actions + [failTooMuchData()]
        }
        state = waiting
        return actions
    }

    private mutating func failTooMuchData() -> Action {
        state = .failed
        return .fail(
            .tooMuchDataBeforeReply(limit: maximumBufferedBytes),
            replyBytes: SOCKS5Outcome.failure(.generalFailure).encoded()
        )
    }

    private static func methodSelection(_ method: UInt8) -> ByteBuffer {
        ByteBuffer(bytes: [SOCKS5Wire.version, method])
    }

    /// The reply for a faulty request; none for a client that does not speak
    /// SOCKS5 at all, since it could not read one.
    private static func failureReply(for error: SOCKS5Error) -> ByteBuffer? {
        let code: SOCKS5ReplyCode
        switch error {
        case .unsupportedVersion:
            return nil
        case .unsupportedCommand:
            code = .commandNotSupported
        case .unsupportedAddressType:
            code = .addressTypeNotSupported
        case .nonZeroReservedByte, .emptyDomainName, .malformedDomainName, .tooMuchDataBeforeReply:
            code = .generalFailure
        case .noAuthenticationMethodsOffered, .noAcceptableAuthenticationMethod, .endOfInputDuringHandshake,
            .handshakeTimedOut, .fragmentedDatagram, .truncatedDatagram, .hostNotEncodable, .portOutOfRange:
            preconditionFailure("\(error.kind) cannot come from parsing a request")
        }
        return SOCKS5Outcome.failure(code).encoded()
    }
}
