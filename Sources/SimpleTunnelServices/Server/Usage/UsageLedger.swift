import Foundation

/// What this process counted per login and day and has not yet handed to a
/// store, kept by the `TunnelRegistry` under its lock. A tunnel's counters
/// are read when it closes and on each flush, never per message: each reading
/// adds what grew since the last one to the login's entry for that day.
struct UsageLedger: Sendable {
    private struct Key: Hashable {
        var login: String
        var day: UsageDay
    }

    private var entries: [Key: LoginUsage] = [:]
    /// Per open tunnel, the counters already added.
    private var counted: [ObjectIdentifier: (fromClient: UInt64, toClient: UInt64)] = [:]

    var isEmpty: Bool { entries.isEmpty }

    /// `login` logged in: seen, though it may carry nothing.
    mutating func seen(_ login: String, now: Date) {
        add(login, fromClient: 0, toClient: 0, now: now)
    }

    /// A tunnel of `login` reads `fromClient` and `toClient` bytes so far; what grew since its last reading counts now.
    mutating func read(_ tunnel: ObjectIdentifier, login: String, fromClient: UInt64, toClient: UInt64, now: Date) {
        let before = counted[tunnel] ?? (0, 0)
        // Counters only grow; a smaller one (never expected) counts nothing rather than wrapping.
        let grown = (fromClient: fromClient >= before.fromClient ? fromClient - before.fromClient : 0,
                     toClient: toClient >= before.toClient ? toClient - before.toClient : 0)
        counted[tunnel] = (max(fromClient, before.fromClient), max(toClient, before.toClient))
        guard grown.fromClient > 0 || grown.toClient > 0 else { return }
        add(login, fromClient: grown.fromClient, toClient: grown.toClient, now: now)
    }

    /// The tunnel closed with these final counters.
    mutating func closed(_ tunnel: ObjectIdentifier, login: String?, fromClient: UInt64, toClient: UInt64, now: Date) {
        if let login { read(tunnel, login: login, fromClient: fromClient, toClient: toClient, now: now) }
        counted[tunnel] = nil
    }

    /// Everything counted so far, handed over to be stored; the ledger starts again from nothing.
    mutating func take() -> [UsageRecord] {
        defer { entries = [:] }
        return entries.map { UsageRecord(login: $0.key.login, day: $0.key.day, usage: $0.value) }
    }

    /// Records a store could not take, counted again so the next flush carries them.
    mutating func giveBack(_ records: [UsageRecord]) {
        for record in records {
            let key = Key(login: record.login, day: record.day)
            entries[key] = entries[key].map { $0.adding(record.usage) } ?? record.usage
        }
    }

    private mutating func add(_ login: String, fromClient: UInt64, toClient: UInt64, now: Date) {
        giveBack([UsageRecord(login: login, day: UsageDay(now), usage: LoginUsage(bytesFromClient: fromClient, bytesToClient: toClient, lastSeen: now))])
    }
}
