import Foundation

extension TunnelServer {
    /// Hands the usage counted since the last flush to the store (every
    /// `usageFlushInterval` while serving, before `usage` answers, and at stop).
    /// A store that fails keeps nothing lost: the records are counted again for the next try.
    public func flushUsage() async {
        let records = await tunnels.takeUsage()
        guard !records.isEmpty else { return }
        let (store, metrics) = live.withLockedValue { ($0.usageStore, $0.metrics) }
        do {
            try await store.add(records)
            metrics?.countUsage(records)
            if usageFlushFailed.withLockedValue({ failed in defer { failed = false }; return failed }) {
                logger.notice("usage is kept again", metadata: ["store": "\(live.withLockedValue { $0.usageStoreName })"])
            }
        } catch {
            tunnels.giveBackUsage(records)
            if !usageFlushFailed.withLockedValue({ failed in defer { failed = true }; return failed }) {
                logger.warning("usage could not be kept: \(error); what was counted stays in memory and is offered again every flush")
            }
        }
    }

    /// Each login's usage on `since` and after, open tunnels' traffic so far included.
    public func usage(since: UsageDay?) async throws -> LoginUsageReport {
        await flushUsage()
        let (store, name) = live.withLockedValue { ($0.usageStore, $0.usageStoreName) }
        return LoginUsageReport(try await store.totals(since: since), since: since, keptIn: name)
    }
}
