import Foundation
import SimpleTunnelServices

/// The database password: from `--database-password-file` (its first line;
/// refused when others may read it), else `PGPASSWORD`, else none (trust or
/// peer authentication on a Unix socket).
public enum DatabasePassword {
    public static let environmentVariable = "PGPASSWORD"

    public static func read(file: String?, environment: [String: String] = ProcessInfo.processInfo.environment) throws(DatabaseError) -> String? {
        guard let file else { return environment[environmentVariable] }
        var status = stat()
        guard stat(file, &status) == 0 else {
            throw .password("\(file) cannot be read: \(String(cString: strerror(errno)))")
        }
        if let exposure = PrivateFile.exposure(of: file, what: "UNPROTECTED PASSWORD FILE") {
            throw .password(exposure)
        }
        guard let text = try? String(contentsOfFile: file, encoding: .utf8) else {
            throw .password("\(file) cannot be read as text")
        }
        let line = text.split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? ""
        guard !line.isEmpty else { throw .password("\(file) is empty; its first line is the password") }
        return line
    }
}
