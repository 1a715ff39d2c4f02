import Foundation
import Testing
@testable import SimpleTunnelServices

/// A reload of each limit in `ServerLimit.all`: a live one is applied and
/// listed as applied; a restart-only one keeps the running value and is listed
/// as needing a restart, again on the next reload until then.
@Suite("Reloading each server limit")
struct ServerLimitReloadTests {
    @Test(arguments: ServerLimit.all.map(\.key))
    func oneChangedLimitIsAppliedOrKeptAsTheTableSays(key: String) throws {
        let limit = try #require(ServerLimit.all.first { $0.key == key })
        let sample = try #require(ServerLimitTests.samples[key])
        let running = try ServerLimitTests.launch(limits: [:])
        let reread = try ServerLimitTests.launch(limits: [key: sample.file])
        let reload = ServerSettingsReload(running: running, serving: running.settings, reread: reread)
        let line = "\(limit.name): \(limit.describe(running.settings)) → \(limit.describe(reread.settings))"
        if limit.isLive {
            #expect(reload.applied.contains(line), "\(reload.applied)")
            #expect(!reload.needsRestart.contains { $0.hasPrefix("\(limit.name):") }, "\(reload.needsRestart)")
            #expect(sample.runtime(reload.settings) == sample.fileReads)
        } else {
            #expect(reload.needsRestart.contains(line), "\(reload.needsRestart)")
            #expect(!reload.applied.contains { $0.hasPrefix("\(limit.name):") }, "\(reload.applied)")
            #expect(sample.runtime(reload.settings) == sample.runtime(running.settings))
            let next = ServerSettingsReload(running: reload.effective(running: running, reread: reread), serving: reload.settings, reread: reread)
            #expect(next.needsRestart.contains(line), "named until a restart: \(next.needsRestart)")
        }
    }

    /// The server-wide objects that tunnels hold are restart-only: a reload must not swap them.
    @Test func theSharedBudgetsAndLoginLimitsNeedARestart() {
        for key in ["ServerBufferMiB", "FlowSockets", "LoginChecks", "LoginChecksPerAddress", "LoginFailures"] {
            #expect(ServerLimit.all.first { $0.key == key }?.isLive == false, "\(key)")
        }
    }
}
