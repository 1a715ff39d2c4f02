import NIOCore
// Replaced by the XML reader when its branch merges.
enum XMLPropertyListReader {
    static func read(_ buffer: ByteBuffer) throws -> PropertyListValue { throw PropertyListError.unrecognizedFormat }
}
