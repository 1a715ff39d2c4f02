import NIOCore
@testable import SimpleTunnelServices

/// What a SOCKS5 client sends, built by hand so tests read like the RFC.
enum SOCKS5ClientBytes {
    static let noAuthenticationGreeting = ByteBuffer(bytes: [0x05, 0x01, 0x00])
    static let methodSelectedNoAuthentication = ByteBuffer(bytes: [0x05, 0x00])

    static func greeting(methods: [UInt8]) -> ByteBuffer {
        ByteBuffer(bytes: [0x05, UInt8(methods.count)] + methods)
    }

    static func request(command: UInt8 = 0x01, addressType: UInt8, address: [UInt8], port: UInt16) -> ByteBuffer {
        var bytes: [UInt8] = [0x05, command, 0x00, addressType]
        if addressType == 0x03 { bytes.append(UInt8(address.count)) }
        bytes += address
        bytes += [UInt8(port >> 8), UInt8(port & 0xFF)]
        return ByteBuffer(bytes: bytes)
    }

    static func connectIPv4(_ address: [UInt8], port: UInt16) -> ByteBuffer {
        request(addressType: 0x01, address: address, port: port)
    }

    static func connectDomain(_ name: String, port: UInt16) -> ByteBuffer {
        request(addressType: 0x03, address: Array(name.utf8), port: port)
    }

    static func connectIPv6(_ address: [UInt8], port: UInt16) -> ByteBuffer {
        request(addressType: 0x04, address: address, port: port)
    }

    /// A reply with BND 0.0.0.0:0, as sent for failures.
    static func reply(_ code: UInt8) -> ByteBuffer {
        ByteBuffer(bytes: [0x05, code, 0x00, 0x01, 0, 0, 0, 0, 0, 0])
    }

    static func glued(_ parts: ByteBuffer...) -> ByteBuffer {
        var buffer = ByteBuffer()
        for part in parts { buffer.writeImmutableBuffer(part) }
        return buffer
    }
}

/// Ways of cutting one byte stream into reads.
enum ByteStreamCut: CaseIterable, CustomStringConvertible {
    case allAtOnce
    case byteByByte
    case inPairs
    case unevenly

    func chunks(of buffer: ByteBuffer) -> [ByteBuffer] {
        let bytes = Array(buffer.readableBytesView)
        let sizes: [Int]
        switch self {
        case .allAtOnce: sizes = [max(bytes.count, 1)]
        case .byteByByte: sizes = [1]
        case .inPairs: sizes = [2]
        case .unevenly: sizes = [3, 1, 7, 2, 5]
        }
        var chunks: [ByteBuffer] = []
        var start = 0
        var turn = 0
        while start < bytes.count {
            let end = min(bytes.count, start + sizes[turn % sizes.count])
            chunks.append(ByteBuffer(bytes: bytes[start..<end]))
            start = end
            turn += 1
        }
        return chunks
    }

    var description: String {
        switch self {
        case .allAtOnce: return "all at once"
        case .byteByByte: return "byte by byte"
        case .inPairs: return "in pairs"
        case .unevenly: return "unevenly"
        }
    }
}

extension SOCKS5ServerStateMachine {
    /// Feeds `bytes` cut as `cut` says; returns every action in order.
    mutating func receive(_ bytes: ByteBuffer, _ cut: ByteStreamCut) -> [Action] {
        cut.chunks(of: bytes).flatMap { receiveBytes($0) }
    }
}
