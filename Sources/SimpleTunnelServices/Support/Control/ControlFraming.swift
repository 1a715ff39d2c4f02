import Foundation
import NIOCore

/// A control socket (the client's and the server's) speaks length-prefixed
/// JSON: a 4-byte big-endian length, then one JSON object each way.
public enum ControlFraming {
    /// Largest request a program accepts: what a local user may make it hold.
    public static let maximumMessageLength = 64 * 1024
    /// Largest answer a command accepts from the program it asked (its own,
    /// or root's): a status of 10,000 tunnels at about 200 bytes each fits.
    public static let maximumAnswerLength = 16 * 1024 * 1024

    public static func frame(_ payload: Data) -> ByteBuffer {
        var buffer = ByteBuffer()
        buffer.writeInteger(UInt32(payload.count), endianness: .big)
        buffer.writeBytes(payload)
        return buffer
    }

    /// The folder a program's control socket goes in unless told otherwise:
    /// under `$XDG_RUNTIME_DIR`, else a per-user folder in /tmp.
    public static func userRuntimeFolder(environment: [String: String] = ProcessInfo.processInfo.environment, userID: uid_t = getuid()) -> String {
        environment["XDG_RUNTIME_DIR"].map { "\($0)/simpletunnel" } ?? "/tmp/simpletunnel-\(userID)"
    }
}

/// Splits a control socket's stream into JSON payloads.
struct ControlFrameDecoder: ByteToMessageDecoder {
    typealias InboundOut = ByteBuffer
    /// `maximumMessageLength` for requests, `maximumAnswerLength` for answers.
    let limit: Int

    init(limit: Int = ControlFraming.maximumMessageLength) {
        self.limit = limit
    }

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard let length = buffer.getInteger(at: buffer.readerIndex, endianness: .big, as: UInt32.self) else { return .needMoreData }
        guard length <= limit else {
            throw ControlError.messageTooLarge(Int(length), limit: limit)
        }
        guard buffer.readableBytes >= 4 + Int(length) else { return .needMoreData }
        buffer.moveReaderIndex(forwardBy: 4)
        guard let payload = buffer.readSlice(length: Int(length)) else { return .needMoreData }
        context.fireChannelRead(wrapInboundOut(payload))
        return .continue
    }
}

public enum ControlError: Error, CustomStringConvertible {
    case messageTooLarge(Int, limit: Int)
    /// Nothing answers on the path; `program` is who should have, `reach` how far the request got.
    case noAnswer(String, program: String, reach: ControlSocketReach)
    case socketInUse(String, program: String)
    /// The program took the connection but sent no answer in time.
    case noAnswerInTime(String, program: String, seconds: Double)

    public var description: String {
        switch self {
        case .messageTooLarge(let length, let limit): return "control message of \(length) bytes is over the \(limit)-byte limit"
        case .noAnswer(let path, let program, _): return "no \(program) answers on \(path) (is one running, and may you use it? give --control PATH)"
        case .socketInUse(let path, let program): return "another \(program) already answers on \(path); give this one its own --control PATH"
        case .noAnswerInTime(let path, let program, let seconds):
            return "the \(program) on \(path) took the request but gave no answer in \(seconds == seconds.rounded() ? "\(Int(seconds))" : "\(seconds)") s (is it stopped, or stuck? its log may say)"
        }
    }
}

/// How far a request to a control socket got before it went unanswered.
public enum ControlSocketReach: Equatable, Sendable {
    /// No socket, or nobody listening on it.
    case nothingThere
    /// The socket or its folder may not be entered by this user.
    case notPermitted
    /// The program took the connection and closed it: it answers its own user and root only.
    case closedWithoutAnswer
}
