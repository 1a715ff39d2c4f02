#if canImport(Glibc)
import Glibc
#endif

/// Writes to the process's standard error. `FileHandle.write` traps when the
/// write fails or a signal interrupts it; a message that cannot be shown must
/// never end the program that wanted to show it.
public enum StandardError {
    public static func write(_ text: String) {
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            let count = bytes.withUnsafeBytes { Glibc.write(STDERR_FILENO, $0.baseAddress, $0.count) }
            if count > 0 {
                bytes = bytes.dropFirst(count)
            } else if count < 0 && errno == EINTR {
                continue
            } else {
                return
            }
        }
    }
}
