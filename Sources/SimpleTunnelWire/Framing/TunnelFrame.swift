import NIOCore

/// The frame format of PROTOCOL.md A1: a little-endian UInt32 length that
/// counts itself, then one property list.
public enum TunnelFrame {
    /// The length of the frame starting at the reader index, checked against
    /// the limits from the header alone; nil while fewer than 4 bytes are here.
    static func frameLength(in buffer: ByteBuffer) throws(TunnelFrameError) -> Int? {
        guard let length = buffer.getInteger(at: buffer.readerIndex, endianness: .little, as: UInt32.self) else {
            return nil
        }
        guard length >= TunnelWireLimits.minimumFrameLength else {
            throw .lengthTooSmall(Int(length))
        }
        guard length <= TunnelWireLimits.maximumFrameLength else {
            throw .lengthTooLarge(Int(length))
        }
        return Int(length)
    }

    /// Decodes one frame's payload (the bytes after the length prefix).
    public static func decodeMessage(payload: ByteBuffer) throws(TunnelWireError) -> TunnelMessage {
        // The IP path's message as our peers write it, without the property-list tree; all else below.
        if let packets = PacketsFrameReader.read(payload) { return packets }
        // The per-flow messages as our peers write them, likewise.
        if let message = ScalarFrameReader.read(payload) { return message }
        return try decodeMessageThroughPropertyList(payload: payload)
    }

    /// `decodeMessage` through the general property-list reader alone, for
    /// every message and every writer's layout (and for tests and fuzzing that
    /// compare the two paths).
    public static func decodeMessageThroughPropertyList(payload: ByteBuffer) throws(TunnelWireError) -> TunnelMessage {
        let propertyList: PropertyListValue
        do {
            propertyList = try PropertyListReader.read(payload)
        } catch let error as PropertyListError {
            throw .propertyList(error)
        } catch {
            throw .propertyList(.malformedBinary(String(describing: error)))
        }
        do {
            return try TunnelMessage(propertyList: propertyList)
        } catch {
            throw .message(error)
        }
    }

    /// Appends `message` as one frame. Fails, writing nothing, when the frame
    /// would exceed the protocol's maximum: senders split data beforehand.
    public static func encode(_ message: TunnelMessage, into buffer: inout ByteBuffer) throws(TunnelFrameError) {
        // One allocation for the whole frame: growing while the payload is copied in would copy it twice.
        buffer.reserveCapacity(minimumWritableBytes: message.estimatedFrameLength)
        _ = try writeFrame(message, into: &buffer, detachingDataOf: Int.max)
    }

    /// Writes `message` as one frame at the writer index, leaving out the
    /// first `data` value of at least `minimumDetached` bytes (returned, and
    /// counted in the length). Writes nothing when the frame would exceed the maximum.
    static func writeFrame(
        _ message: TunnelMessage, into buffer: inout ByteBuffer, detachingDataOf minimumDetached: Int
    ) throws(TunnelFrameError) -> BinaryPropertyListWriter.Detached? {
        if case .packets(let identifier, let packets) = message {
            return try PacketsFrameWriter.write(identifier: identifier, packets: packets, into: &buffer, detachingDataOf: minimumDetached)
        }
        var size = ScalarDictionarySize(detachingDataOf: minimumDetached)
        if let shape = message.offerScalarValues(to: &size), size.isWritable {
            return try writeScalarFrame(message, shape: shape, size: size, into: &buffer)
        }
        let start = buffer.writerIndex
        buffer.writeInteger(UInt32(0))  // patched below once the length is known
        let detached = BinaryPropertyListWriter.writeDictionary(message.propertyListEntries, into: &buffer, detachingDataOf: minimumDetached)
        let length = buffer.writerIndex - start + (detached?.bytes.readableBytes ?? 0)
        guard length <= TunnelWireLimits.maximumFrameLength else {
            buffer.moveWriterIndex(to: start)
            throw .lengthTooLarge(length)
        }
        buffer.setInteger(UInt32(length), at: start, endianness: .little)
        return detached
    }

    /// `writeFrame` for the messages of integers, ASCII strings and data
    /// (most of them): sized first, so the length goes in first and the whole
    /// frame is written in one pass into memory reserved for it.
    private static func writeScalarFrame(
        _ message: TunnelMessage, shape: ScalarDictionaryShape, size: ScalarDictionarySize, into buffer: inout ByteBuffer
    ) throws(TunnelFrameError) -> BinaryPropertyListWriter.Detached? {
        let length = TunnelWireLimits.lengthPrefixSize + size.documentLength(shape)
        guard length <= TunnelWireLimits.maximumFrameLength else {
            throw .lengthTooLarge(length)
        }
        return ScalarDictionaryWriter.write(shape, size: size, lengthPrefix: UInt32(length), into: &buffer) { writer in
            _ = message.offerScalarValues(to: &writer)
        }
    }
}

extension TunnelMessage {
    /// An upper estimate of the encoded frame: payload bytes plus generous room for keys and structure.
    var estimatedFrameLength: Int {
        switch self {
        case .data(_, let payload, _): return payload.readableBytes + 192
        case .dns(_, let packet, _): return packet.readableBytes + 192
        case .packets(_, let packets): return packets.reduce(128) { $0 + $1.bytes.readableBytes + 24 }
        default: return 512
        }
    }
}
