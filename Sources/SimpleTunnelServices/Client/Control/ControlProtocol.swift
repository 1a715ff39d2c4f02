import Foundation
import NIOCore

/// The client's control socket speaks length-prefixed JSON: a 4-byte
/// big-endian length, then one JSON object. A request names its `type`
/// (`status`, `stats`, `stop`); the answer says `ok` and carries the status
/// or an `error`.
public enum ControlProtocol {
    /// Largest request or response accepted.
    public static let maximumMessageLength = 64 * 1024

    public struct Request: Codable, Sendable, Equatable {
        public var type: String

        public init(type: String) {
            self.type = type
        }
    }

    public struct Response: Codable, Sendable, Equatable {
        public var ok: Bool
        public var status: TunnelClientStatus?
        public var error: String?

        public init(ok: Bool, status: TunnelClientStatus? = nil, error: String? = nil) {
            self.ok = ok
            self.status = status
            self.error = error
        }
    }

    /// Where the running client listens unless told otherwise: under
    /// `$XDG_RUNTIME_DIR`, else a per-user folder in /tmp.
    public static func defaultPath(environment: [String: String] = ProcessInfo.processInfo.environment, userID: uid_t = getuid()) -> String {
        let base = environment["XDG_RUNTIME_DIR"].map { "\($0)/simpletunnel" } ?? "/tmp/simpletunnel-\(userID)"
        return base + "/client.sock"
    }

    static func frame(_ payload: Data) -> ByteBuffer {
        var buffer = ByteBuffer()
        buffer.writeInteger(UInt32(payload.count), endianness: .big)
        buffer.writeBytes(payload)
        return buffer
    }
}

/// Splits the control socket's stream into JSON payloads.
struct ControlFrameDecoder: ByteToMessageDecoder {
    typealias InboundOut = ByteBuffer

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard let length = buffer.getInteger(at: buffer.readerIndex, endianness: .big, as: UInt32.self) else { return .needMoreData }
        guard length <= ControlProtocol.maximumMessageLength else {
            throw ControlError.messageTooLarge(Int(length))
        }
        guard buffer.readableBytes >= 4 + Int(length) else { return .needMoreData }
        buffer.moveReaderIndex(forwardBy: 4)
        guard let payload = buffer.readSlice(length: Int(length)) else { return .needMoreData }
        context.fireChannelRead(wrapInboundOut(payload))
        return .continue
    }
}

public enum ControlError: Error, CustomStringConvertible {
    case messageTooLarge(Int)
    case unreachable(ControlSocketDiagnosis)
    case socketInUse(String)

    public var description: String {
        switch self {
        case .messageTooLarge(let length): return "control message of \(length) bytes is over the \(ControlProtocol.maximumMessageLength)-byte limit"
        case .unreachable(let diagnosis): return diagnosis.description
        case .socketInUse(let path): return "another tunnel-client already answers on \(path); give this one its own --control PATH"
        }
    }
}
