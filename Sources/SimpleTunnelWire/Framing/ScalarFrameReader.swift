import NIOCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads the per-flow messages (data, open of a TCP flow, openResult, close,
/// suspend, resume) laid out exactly as `ScalarDictionaryWriter` writes them
/// (every peer of ours) straight into the message, with no property-list
/// values or dictionary built: each flow sends and receives several.
///
/// Anything else is nil and goes to the general reader: another message or
/// writer's layout (Apple's orders keys its own way), a command the keys do
/// not belong to, a value the message would refuse or read otherwise (its
/// error comes from the general path). The head must be one of our shapes'
/// bytes, every value's offset and form the ones our writer gives it and the trailer
/// ours, so what this accepts the general reader accepts too and reads as the
/// same message (ScalarFrameReaderTests compare the two).
enum ScalarFrameReader {
    static func read(_ document: ByteBuffer) -> TunnelMessage? {
        document.withUnsafeReadableBytes { bytes in
            guard var cursor = Cursor(bytes), let shape = cursor.readHead() else { return nil }
            var values = InlineArray<6, Value>(repeating: .integer(0))
            for slot in 0..<shape.keyCount {
                guard let value = cursor.readValue(from: document) else { return nil }
                values[slot] = value
            }
            guard cursor.walk.index == cursor.walk.tableStart else { return nil }
            return message(shape.kind, values)
        }
    }

    /// A value object as our writer writes them.
    enum Value {
        case integer(Int64)
        /// The bytes of an ASCII string object, checked to be ASCII.
        case string(UnsafeRawBufferPointer)
        case data(ByteBuffer)
    }

    /// The message `values` (in the shape's key order) make, when it is the one
    /// the general reader makes; nil when that reader would refuse it or
    /// read another message of it.
    private static func message(_ kind: ScalarShapes.Kind, _ values: InlineArray<6, Value>) -> TunnelMessage? {
        guard case .integer(let identifier) = values[0], case .integer(let number) = values[1],
            let command = TunnelCommand(rawValue: Int(number)), kind.carries(command)
        else { return nil }
        switch kind {
        case .data:
            guard case .data(let payload) = values[2] else { return nil }
            return .data(identifier: identifier, payload: payload)
        case .datagram:
            guard case .data(let payload) = values[2], let endpoint = endpoint(values[3], values[4]) else { return nil }
            return .data(identifier: identifier, payload: payload, endpoint: endpoint)
        case .bare:
            return command == .suspend ? .suspend(identifier: identifier) : .resume(identifier: identifier)
        case .close:
            guard case .integer(let number) = values[2], let direction = TunnelConnectionCloseDirection(rawValue: Int(number)) else { return nil }
            return .close(identifier: identifier, direction: direction)
        case .openTCP:
            guard identifier != 0, case .integer(let layer) = values[2], layer == Int64(TunnelLayer.app.rawValue),
                case .integer(let flowKind) = values[3], flowKind == Int64(AppProxyFlowKind.tcp.rawValue),
                let endpoint = endpoint(values[4], values[5])
            else { return nil }
            return .open(identifier: identifier, request: .tcp(endpoint))
        case .openResult:
            guard case .integer(let number) = values[2], let result = TunnelConnectionOpenResult(rawValue: Int(number)) else { return nil }
            return .openResult(identifier: identifier, result: result)
        case .openResultWithDetail:
            guard case .integer(let number) = values[2], let result = TunnelConnectionOpenResult(rawValue: Int(number)),
                case .integer(let detail) = values[3]
            else { return nil }
            // A detail this side does not know is left out, as the general reader leaves it.
            return .openResult(identifier: identifier, result: result, detail: TunnelOpenResultDetail(rawValue: Int(detail)))
        }
    }

    /// `host` a string and `port` an integer that `TunnelEndpoint` accepts.
    private static func endpoint(_ host: Value, _ port: Value) -> TunnelEndpoint? {
        guard case .string(let text) = host, case .integer(let number) = port else { return nil }
        return try? TunnelEndpoint(validatingHost: String(decoding: text, as: UTF8.self), port: Int(number))
    }
}

extension ScalarFrameReader {
    private struct Cursor {
        /// Keys of the top dictionary.
        let keyCount: Int
        var walk: WriterLayoutCursor

        /// Checks the magic and the trailer: one-byte references, object 0 on
        /// top, a table of 1 + 2 × keys entries right before the trailer.
        init?(_ bytes: UnsafeRawBufferPointer) {
            typealias Format = BinaryPropertyListFormat
            let magic = Format.magic.count
            guard bytes.count > magic + Format.trailerLength else { return nil }
            let keyCount = Int(bytes[magic]) - Int(Format.Marker.dictionary.rawValue << 4)
            guard (2...6).contains(keyCount), BinaryPropertyListReader.hasMagic(bytes) else { return nil }
            let trailer = bytes.count - Format.trailerLength
            let offsetWidth = Int(bytes[trailer + 6])
            guard (0..<6).allSatisfy({ bytes[trailer + $0] == 0 }), (1...8).contains(offsetWidth), bytes[trailer + 7] == 1,
                BinaryPropertyListFormat.bigEndian(bytes, at: trailer + 8, width: 8) == UInt64(1 + 2 * keyCount),
                BinaryPropertyListFormat.bigEndian(bytes, at: trailer + 16, width: 8) == 0,
                let tableStart = Int(exactly: BinaryPropertyListFormat.bigEndian(bytes, at: trailer + 24, width: 8)), tableStart > magic,
                tableStart < trailer, tableStart + (1 + 2 * keyCount) * offsetWidth == trailer
            else { return nil }
            self.keyCount = keyCount
            walk = WriterLayoutCursor(bytes: bytes, tableStart: tableStart, offsetWidth: offsetWidth, objectCount: 1 + 2 * keyCount, index: magic)
        }

        /// The shape whose head (dictionary and keys) the document starts with,
        /// each of those objects where the table puts it.
        mutating func readHead() -> ScalarShapes.Readable? {
            guard let start = walk.bytes.baseAddress else { return nil }
            for candidate in ScalarShapes.readable where candidate.keyCount == keyCount {
                let head = candidate.shape.head
                guard head.count <= walk.tableStart,
                    head.withUnsafeBytes({ expected in expected.baseAddress.map { memcmp($0, start, head.count) == 0 } ?? false })
                else { continue }
                for offset in candidate.shape.headOffsets {
                    walk.index = offset
                    guard walk.beginObject() else { return nil }
                }
                walk.index = head.count
                return candidate
            }
            return nil
        }

        /// The next value object: an integer, an ASCII string or data; nil for anything else.
        mutating func readValue(from document: ByteBuffer) -> Value? {
            guard walk.beginObject(), walk.index < walk.tableStart else { return nil }
            switch BinaryPropertyListFormat.Marker(rawValue: walk.bytes[walk.index] >> 4) {
            case .integer:
                return walk.integer().map(Value.integer)
            case .asciiString:
                guard let length = walk.count(of: .asciiString), length <= walk.tableStart - walk.index else { return nil }
                let text = UnsafeRawBufferPointer(rebasing: walk.bytes[walk.index..<(walk.index + length)])
                guard !text.contains(where: { $0 >= 0x80 }) else { return nil }
                walk.index += length
                return .string(text)
            case .data:
                guard let length = walk.count(of: .data), length <= walk.tableStart - walk.index,
                    let slice = document.getSlice(at: document.readerIndex + walk.index, length: length)
                else { return nil }
                walk.index += length
                return .data(slice)
            default:
                return nil
            }
        }
    }
}
