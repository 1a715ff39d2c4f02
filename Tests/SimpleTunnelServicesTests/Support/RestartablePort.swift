import Foundation

/// A loopback port for a server a test stops and starts again on the same
/// port. A port the kernel picked (port 0) comes from the ephemeral range,
/// which every outgoing connection of the parallel tests also draws its local
/// port from: one may hold it when the server binds again. Below that range
/// only explicit binds take ports.
enum RestartablePort {
    /// Tries ports below the ephemeral range until `bind` succeeds on one; returns what it made.
    static func bind<Result>(_ bind: (Int) async throws -> Result) async throws -> Result {
        let low = ephemeralRangeStart()
        var lastError: Error?
        for _ in 0..<50 {
            do {
                return try await bind(Int.random(in: (low / 2)..<low))
            } catch {
                lastError = error
            }
        }
        throw lastError ?? CancellationError()
    }

    private static func ephemeralRangeStart() -> Int {
        let text = (try? String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8)) ?? ""
        return text.split(whereSeparator: \.isWhitespace).first.flatMap { Int($0) }.map { max($0, 2048) } ?? 32768
    }
}
