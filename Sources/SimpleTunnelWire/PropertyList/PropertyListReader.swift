import NIOCore

/// Reads a property list in whichever format it comes: binary (`bplist00`,
/// what every peer sends) or XML (which readers also accept, PROTOCOL.md A1).
public enum PropertyListReader {
    /// The deepest nesting of dictionaries and arrays either reader accepts; deeper is `tooComplex`.
    /// Real messages nest three levels.
    public static let maximumDepth = 64

    public static func read(_ buffer: ByteBuffer) throws -> PropertyListValue {
        let isBinary = buffer.withUnsafeReadableBytes(BinaryPropertyListReader.hasMagic)
        if isBinary {
            return try BinaryPropertyListReader.read(buffer)
        }
        return try XMLPropertyListReader.read(buffer)
    }
}
