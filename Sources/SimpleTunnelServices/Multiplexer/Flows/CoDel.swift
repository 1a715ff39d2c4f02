import NIOCore

/// When a packet queue drops, by how long its head has waited rather than
/// by how full it is: CoDel (RFC 8289), as Linux's fq_codel runs it. A queue
/// that drains within `target` never drops, however much a burst filled it;
/// one that stays above `target` for a whole `interval` drops its head, then
/// ever more often (interval / sqrt(count)) until the delay is back below.
///
/// TCP inside the tunnel then sees one loss now and then, where a tail drop
/// at a fixed size took whole super-packets of 45 segments many times per
/// round trip. Pure: the caller says what time it is.
struct CoDel {
    let target: TimeAmount
    let interval: TimeAmount
    /// A queue holding no more than this never drops (one large packet waiting alone).
    let minimumBytes: Int

    /// When the head's delay first went above `target` plus `interval`; nil while below.
    private var firstAboveTime: NIODeadline?
    private(set) var dropping = false
    private var dropNext = NIODeadline.uptimeNanoseconds(0)
    private(set) var count = 0
    private var lastCount = 0

    /// RFC 8289's defaults: 5 ms, 100 ms, and one full-sized super-packet.
    init(target: TimeAmount = .milliseconds(5), interval: TimeAmount = .milliseconds(100), minimumBytes: Int = 64 * 1024) {
        self.target = target
        self.interval = interval
        self.minimumBytes = minimumBytes
    }

    /// Whether the head about to be sent, having waited `sojourn`, is dropped
    /// instead. Called for each head in turn until one is kept (or none is left).
    mutating func shouldDrop(sojourn: TimeAmount, queuedBytes: Int, now: NIODeadline) -> Bool {
        let okToDrop = isAboveTargetLongEnough(sojourn: sojourn, queuedBytes: queuedBytes, now: now)
        if dropping {
            guard okToDrop else {
                dropping = false
                return false
            }
            guard now >= dropNext else { return false }
            count += 1
            dropNext = controlLaw(dropNext)
            return true
        }
        guard okToDrop else { return false }
        // Entering the dropping state: start from the last count if the last
        // episode was recent, so a persisting overload is met at its old rate.
        dropping = true
        let delta = count - lastCount
        count = delta > 1 && now - dropNext < interval * 16 ? delta : 1
        lastCount = count
        dropNext = controlLaw(now)
        return true
    }

    private mutating func isAboveTargetLongEnough(sojourn: TimeAmount, queuedBytes: Int, now: NIODeadline) -> Bool {
        guard sojourn >= target, queuedBytes > minimumBytes else {
            firstAboveTime = nil
            return false
        }
        guard let firstAboveTime else {
            firstAboveTime = now + interval
            return false
        }
        return now >= firstAboveTime
    }

    private func controlLaw(_ time: NIODeadline) -> NIODeadline {
        time + .nanoseconds(Int64(Double(interval.nanoseconds) / Double(count).squareRoot()))
    }
}
