import NIOCore

/// Whether a tunnel may hand more to TLS and the socket now, as a value.
///
/// TCP_NOTSENT_LOWAT only says when the socket reports writable: once it
/// does, one write can put a whole segment's worth (up to 64 KiB with
/// segmentation offload) into the kernel past the mark. So on a link slower
/// than the largest room the handler counts what it hands down against the
/// room, and when that is spent it looks at what waits in front of the link
/// (TLS, the channel, the kernel's unsent bytes) before handing down more:
/// at once if that fell to half the room, or after the time the link takes
/// to drain it there. A fast link (the largest room) is not gated: there the
/// kernel's mark is what a loopback's throughput was measured with.
struct LinkQueueGate: Sendable, Hashable {
    enum Decision: Sendable, Hashable {
        /// Hand down up to this many bytes, then look again.
        case write(Int)
        /// Look again after this long.
        case wait(TimeAmount)
    }

    /// Below this the link drains faster than a timer fires reliably.
    static let shortestWait: TimeAmount = .milliseconds(1)
    /// A look at least this often, whatever the rate says.
    static let longestWait: TimeAmount = .milliseconds(20)

    /// Bytes that may still be handed down before the next look; unbounded while not gated.
    private(set) var allowance = Int.max

    var isOpen: Bool { allowance > 0 }

    /// Whether what is handed down is counted: only on a gated (slow) link.
    var isCounting: Bool { allowance != .max }

    /// Counts `bytes` handed down.
    mutating func handedDown(_ bytes: Int) {
        guard allowance != .max else { return }
        allowance -= bytes
    }

    /// The sizes changed: a slow link's gate starts closed, so that the next
    /// write looks at the queue first; a fast link's opens.
    mutating func resized(to sizes: LinkPace.Sizes, maximumRoom: Int) {
        allowance = sizes.room < maximumRoom ? 0 : .max
    }

    /// After a look: `queued` bytes wait in front of the link (TLS, channel,
    /// kernel unsent), which drains at `rate` bytes a second.
    mutating func looked(queued: Int, sizes: LinkPace.Sizes, maximumRoom: Int, rate: UInt64?) -> Decision {
        guard sizes.room < maximumRoom, let rate, rate > 0 else {
            allowance = .max
            return .write(.max)
        }
        let refillBelow = sizes.room / 2
        guard queued > refillBelow else {
            allowance = sizes.room - max(0, queued)
            return .write(allowance)
        }
        allowance = 0
        let nanoseconds = Int64(Double(queued - refillBelow) * 1e9 / Double(rate))
        let wait = TimeAmount.nanoseconds(nanoseconds)
        return .wait(min(max(wait, Self.shortestWait), Self.longestWait))
    }
}
