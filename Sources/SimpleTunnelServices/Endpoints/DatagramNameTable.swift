import NIOCore

/// What a UDP flow knows of the names its datagrams are sent to: answers kept
/// for a while, and datagrams waiting for a lookup in progress.
///
/// One lookup per name at a time, a few names at once, and every table
/// bounded: a peer sending many datagrams to a slow name, or datagrams to many
/// names, can neither grow the server's memory nor flood the shared resolver.
struct DatagramNameTable {
    struct Name: Hashable {
        let host: String
        let port: Int

        init(_ endpoint: TunnelEndpoint) {
            // Folded as the policy folds it (ASCII only), so two spellings share an entry only when DNS would too.
            host = HostName.normalised(endpoint.host)
            port = endpoint.port
        }
    }

    struct Limits {
        /// How long an answer is reused.
        var answerLifetime = TimeAmount.seconds(30)
        /// Answers kept; the one closest to expiry makes room for a new one.
        var maximumAnswers = 256
        /// Names looked up at the same time.
        var maximumLookups = 8
        /// Datagrams waiting for lookups, all names together.
        var maximumWaiting = 64
    }

    enum Admission: Equatable {
        /// The name is known: send now.
        case send(SocketAddress)
        /// The first datagram for this name: start its lookup; the datagram waits for it.
        case lookUp
        /// The name's lookup is in progress; the datagram waits for it.
        case wait
        /// Dropped for the reason given.
        case drop(String)
        /// Dropped for a reason already reported during this lookup.
        case dropUnreported
    }

    private struct Lookup {
        var waiting: [ByteBuffer]
        var overflowReported = false
    }

    let limits: Limits
    private var answers: [Name: (address: SocketAddress, expiry: NIODeadline)] = [:]
    private var lookups: [Name: Lookup] = [:]
    private var waitingCount = 0

    init(limits: Limits = Limits()) {
        self.limits = limits
    }

    var answerCount: Int { answers.count }
    var lookupCount: Int { lookups.count }

    mutating func admit(_ datagram: ByteBuffer, to name: Name, now: NIODeadline) -> Admission {
        if let answer = answers[name] {
            if answer.expiry > now {
                return .send(answer.address)
            }
            answers[name] = nil
        }
        if lookups[name] != nil {
            guard waitingCount < limits.maximumWaiting else {
                let reported = lookups[name]?.overflowReported ?? true
                lookups[name]?.overflowReported = true
                return reported ? .dropUnreported : .drop("\(limits.maximumWaiting) datagrams already wait for names to resolve")
            }
            lookups[name]?.waiting.append(datagram)
            waitingCount += 1
            return .wait
        }
        guard lookups.count < limits.maximumLookups else {
            return .drop("\(limits.maximumLookups) other names are being resolved for this flow")
        }
        guard waitingCount < limits.maximumWaiting else {
            return .drop("\(limits.maximumWaiting) datagrams already wait for names to resolve")
        }
        lookups[name] = Lookup(waiting: [datagram])
        waitingCount += 1
        return .lookUp
    }

    /// Remembers the answer; returns the datagrams that waited for it, in order.
    mutating func lookupSucceeded(_ name: Name, address: SocketAddress, now: NIODeadline) -> [ByteBuffer] {
        let waiting = finishLookup(name)
        if answers[name] == nil, answers.count >= limits.maximumAnswers {
            answers = answers.filter { $0.value.expiry > now }
            if answers.count >= limits.maximumAnswers, let soonest = answers.min(by: { $0.value.expiry < $1.value.expiry }) {
                answers[soonest.key] = nil
            }
        }
        answers[name] = (address, now + limits.answerLifetime)
        return waiting
    }

    /// Forgets the lookup; returns how many datagrams waited for it (now dropped).
    mutating func lookupFailed(_ name: Name) -> Int {
        finishLookup(name).count
    }

    private mutating func finishLookup(_ name: Name) -> [ByteBuffer] {
        let waiting = lookups.removeValue(forKey: name)?.waiting ?? []
        waitingCount -= waiting.count
        return waiting
    }
}
