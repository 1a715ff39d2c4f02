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
        let start = buffer.writerIndex
        buffer.writeInteger(UInt32(0))  // patched below once the length is known
        BinaryPropertyListWriter.writeDictionary(message.propertyListEntries, into: &buffer)
        let length = buffer.writerIndex - start
        guard length <= TunnelWireLimits.maximumFrameLength else {
            buffer.moveWriterIndex(to: start)
            throw .lengthTooLarge(length)
        }
        buffer.setInteger(UInt32(length), at: start, endianness: .little)
    }
}
