import Foundation

/// Why a network setting could not be applied or undone. Each message names
/// the command (as one could paste it into a shell) and what it printed.
public enum NetworkConfigurationError: Error, Hashable, Sendable, CustomStringConvertible {
    case programNotFound(String, searched: [String])
    case launchFailed(command: [String], reason: String)
    case commandFailed(command: [String], status: Int32, standardError: String)
    case timedOut(command: [String], seconds: Int)
    /// The command succeeded but printed something we could not read.
    case unexpectedOutput(command: [String], output: String)
    case fileAccessFailed(path: String, operation: String, reason: String)
    /// A value that cannot be passed on safely (a DNS domain with spaces, say).
    case invalidSetting(String)
    /// `undoAll` kept going after these failures; everything else was undone.
    case undoIncomplete([NetworkConfigurationError])

    public var description: String {
        switch self {
        case .programNotFound(let program, let searched):
            let hint = program == "ip" ? " (install iproute2)" : ""
            return "\(program) was not found in \(searched.joined(separator: ":"))\(hint)"
        case .launchFailed(let command, let reason):
            return "could not run `\(Self.shellText(command))`: \(reason)"
        case .commandFailed(let command, let status, let standardError):
            let detail = standardError.trimmingCharacters(in: .whitespacesAndNewlines)
            return "`\(Self.shellText(command))` failed with exit status \(status)" + (detail.isEmpty ? "" : ": \(detail)")
        case .timedOut(let command, let seconds):
            return "`\(Self.shellText(command))` did not finish within \(seconds) s and was killed"
        case .unexpectedOutput(let command, let output):
            return "could not understand the output of `\(Self.shellText(command))`: \(output.prefix(300))"
        case .fileAccessFailed(let path, let operation, let reason):
            return "could not \(operation) \(path): \(reason)"
        case .invalidSetting(let reason):
            return reason
        case .undoIncomplete(let failures):
            return "some network settings could not be undone:\n" + failures.map { "  - \($0)" }.joined(separator: "\n")
        }
    }

    /// Arguments joined for display, quoting those with spaces.
    static func shellText(_ command: [String]) -> String {
        command.map { $0.contains(" ") || $0.isEmpty ? "'\($0)'" : $0 }.joined(separator: " ")
    }
}
