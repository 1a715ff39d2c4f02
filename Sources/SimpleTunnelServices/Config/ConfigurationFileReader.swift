import NIOCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads a whole (small) file with plain POSIX calls, so a failure carries
/// the operating system's own reason ("No such file or directory",
/// "Permission denied", "Is a directory").
enum ConfigurationFileReader {

    /// Configuration files are a few kilobytes; anything this large is a mistake.
    static let maximumSize = 4 << 20

    static func contents(ofPath path: String) throws(ConfigurationError) -> ByteBuffer {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw failure(path) }
        defer { close(descriptor) }

        var buffer = ByteBuffer()
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                guard errno == EINTR else { throw failure(path) }
                continue
            }
            if count == 0 { return buffer }
            buffer.writeBytes(chunk[..<count])
            guard buffer.readableBytes <= maximumSize else {
                throw .unreadableFile(path: path, reason: "larger than \(maximumSize >> 20) MiB, so not a configuration file")
            }
        }
    }

    private static func failure(_ path: String) -> ConfigurationError {
        .unreadableFile(path: path, reason: String(cString: strerror(errno)))
    }
}
