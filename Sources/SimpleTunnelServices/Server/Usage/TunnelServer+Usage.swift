import Foundation
import NIOCore

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
            if usageFlushFailed.withLockedValue({ failed in defer { failed = nil }; return failed != nil }) {
                logger.notice("usage is kept again", metadata: ["store": "\(live.withLockedValue { $0.usageStoreName })"])
            }
        } catch {
            tunnels.giveBackUsage(records)
            // One line a minute while it fails, as for the lease file.
            let now = NIODeadline.now()
            let due = usageFlushFailed.withLockedValue { last in
                guard last.map({ now - $0 >= .minutes(1) }) ?? true else { return false }
                last = now
                return true
            }
            if due {
                logger.warning("usage could not be kept: \(error); what was counted stays in memory and is offered again at each flush")
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
