import NIOConcurrencyHelpers
import NIOCore

/// The addresses of this machine's own interfaces (its LAN and public
/// addresses, and the TUN device's once the IP layer has given it one), read
/// again when the last reading is older than `maximumAge`, since DHCP, SLAAC
/// and the IP layer change them while the server runs.
public final class LocalInterfaceAddresses: Sendable {
    public typealias Reader = @Sendable () -> Set<IPAddress>

    private struct Reading {
        var addresses: Set<IPAddress>
        var readAt: NIODeadline
    }

    private let read: Reader
    private let maximumAge: TimeAmount
    private let reading: NIOLockedValueBox<Reading?>

    /// `read` defaults to the system's list of interfaces (getifaddrs).
    public init(maximumAge: TimeAmount = .seconds(10), read: @escaping Reader = LocalInterfaceAddresses.systemAddresses) {
        self.read = read
        self.maximumAge = maximumAge
        self.reading = NIOLockedValueBox(nil)
    }

    /// Whether `address` (an IPv4-mapped one as its IPv4 address) is one of this machine's.
    public func contains(_ address: IPAddress, now: NIODeadline = .now()) -> Bool {
        let address = address.unmapped
        return reading.withLockedValue { reading in
            if let current = reading, now - current.readAt < maximumAge {
                return current.addresses.contains(address)
            }
            let fresh = Reading(addresses: read(), readAt: now)
            reading = fresh
            return fresh.addresses.contains(address)
        }
    }

    /// Every address of every interface; none when the list cannot be read.
    public static let systemAddresses: Reader = {
        let devices = (try? System.enumerateDevices()) ?? []
        return Set(devices.compactMap { device in device.address.flatMap(IPAddress.init)?.unmapped })
    }
}

/// The configured policy, and on a public listener the server's own addresses
/// closed to flows as its loopback is: a service bound to all addresses and
/// firewalled only from outside must not become reachable through the tunnel.
/// An Allow address rule opens one, as it opens loopback. IP-layer packets are
/// not judged here (a VPN's DNS often lives at the server's tunnel address).
public struct OwnAddressGuard: DestinationAuthorizer {
    public let policy: DestinationPolicy
    public let ownAddresses: LocalInterfaceAddresses

    public init(policy: DestinationPolicy, ownAddresses: LocalInterfaceAddresses) {
        self.policy = policy
        self.ownAddresses = ownAddresses
    }

    public func refusal(forHost host: String, port: Int) -> String? {
        policy.refusal(forHost: host, port: port)
    }

    public func refusal(forAddress address: SocketAddress, requestedHost: String) -> String? {
        if let refusal = policy.refusal(forAddress: address, requestedHost: requestedHost) { return refusal }
        guard let ip = IPAddress(address)?.unmapped, let port = address.port, ownAddresses.contains(ip),
            !policy.opens(address: ip, port: port)
        else { return nil }
        let example = TunnelEndpoint(host: ip.description, port: port)
        let keepOpen = policy.allowRules.isEmpty ? " (with --allow '*' beside it, since any Allow rule makes the policy an allow list)" : ""
        return "\(ip) port \(port) is one of this server's own addresses, refused by default on a public listener; "
            + "an Allow address rule such as --allow \(example) opens it\(keepOpen)"
    }
}
