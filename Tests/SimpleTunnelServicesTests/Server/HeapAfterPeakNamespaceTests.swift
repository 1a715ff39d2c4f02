import Foundation
import Testing
@testable import SimpleTunnelServices

/// A peak of tunnels, each with a flow that moved 256 KiB, then all closed:
/// the heap the peak grew is handed back (`HeapTrimSchedule`), so a quiet
/// server does not look like a leak. `Benchmarks/faults.sh` runs the same
/// with the release build and more tunnels.
@Suite("Memory after a peak on the built server: RSS back within 64 MiB of before within 60 s", .timeLimit(.minutes(6)))
struct HeapAfterPeakNamespaceTests {
    static let helper = RepositoryPaths.root.appendingPathComponent("Benchmarks/faults_helper.py").path
    static let tunnels = 1000

    /// The process's resident set, in MiB, read as the server's own metrics read theirs; nil once it is gone.
    static func residentMiB(_ pid: Int32) -> Int? {
        guard let statm = try? String(contentsOfFile: "/proc/\(pid)/statm", encoding: .utf8),
              let pages = ProcessFigures.residentPages(statm: statm)
        else { return nil }
        return Int((pages * UInt64(sysconf(Int32(_SC_PAGESIZE)))) >> 20)
    }

    @Test(.enabled(if: NetworkNamespaceLab.isPythonAvailable, "needs root, ip netns and python3"))
    func afterAPeakOfTunnelsCloseTheServersMemoryFallsBackWithinAMinute() async throws {
        let lab = NetworkNamespaceLab()
        defer { lab.cleanup() }
        let namespace = try lab.makeNamespace()
        let folder = NSTemporaryDirectory() + "peak-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        // `ip netns exec` execs the server, so the process is the server; info: the trim's line.
        let server = try lab.start(in: namespace, [
            BuiltPrograms.tunnelServer, "serve", "--host", "127.0.0.1", "--port", "4433", "--no-ip-layer", "--log-level", "info",
            "--state-directory", folder + "/state", "--control", folder + "/server.sock", "--max-tunnels", "\(Self.tunnels + 100)",
        ])
        defer { server.terminate() }
        let listening = await server.waitForOutput(containing: "listening on 127.0.0.1:4433", timeout: 30)
        try #require(listening != nil, "the server did not start:\n\(server.outputSoFar)")
        // The baseline after a few tunnels came and went: what the first ones set up for good (each event loop's
        // malloc arena, the loops' buffers) is not what a peak leaves behind.
        let warmedUp = folder + "/warmed-up"
        FileManager.default.createFile(atPath: warmedUp, contents: nil)
        _ = try lab.run(in: namespace, [
            "python3", Self.helper, "peak", "--port", "4433", "--tunnels", "32", "--bytes", "262144", "--close-file", warmedUp,
        ], timeout: .seconds(60))
        try await Task.sleep(for: .seconds(1))
        let before = try #require(Self.residentMiB(server.processIdentifier))

        let close = folder + "/close"
        let peak = try lab.start(in: namespace, [
            "python3", Self.helper, "peak", "--port", "4433", "--tunnels", "\(Self.tunnels)", "--bytes", "262144", "--close-file", close,
        ])
        defer { peak.terminate() }
        let opened = await peak.waitForOutput(containing: "open \(Self.tunnels) failed 0", timeout: 240)
        try #require(opened != nil, "the tunnels did not all open:\n\(peak.outputSoFar)")
        let atPeak = try #require(Self.residentMiB(server.processIdentifier))
        // Else there is nothing to give back, and the test could not fail.
        try #require(atPeak - before > 128, "before \(before) MiB, at the peak \(atPeak) MiB")

        FileManager.default.createFile(atPath: close, contents: nil)
        let closed = ContinuousClock.now
        var after = atPeak
        while ContinuousClock.now - closed < .seconds(60) {
            try await Task.sleep(for: .seconds(1))
            after = try #require(Self.residentMiB(server.processIdentifier), "the server is gone:\n\(server.outputSoFar)")
            // Both: with the clients' closes all at once, glibc can give much back by
            // itself within a second, before the server's own trim has run and said so.
            if after <= before + 64, server.outputSoFar.contains("freed memory given back") { break }
        }
        let took = ContinuousClock.now - closed
        print("memory: RSS before \(before) MiB, at a peak of \(Self.tunnels) tunnels \(atPeak) MiB, \(after) MiB \(took) after they closed")
        #expect(after <= before + 64, "before \(before) MiB, at the peak \(atPeak) MiB, \(after) MiB a minute after")
        #expect(server.outputSoFar.contains("freed memory given back"), "\(server.outputSoFar.suffix(2000))")
    }
}
