import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
@testable import SimpleTunnelServices

/// Peers for admission tests: idle sockets from a chosen loopback source
/// (a flood sends nothing), and log lines caught for counting.
enum AdmissionPeers {
    /// `count` TCP connections from `source` (any 127.0.0.0/8 address) to `port`
    /// that send nothing; opened in batches so the listener's backlog keeps up.
    static func idleSockets(_ count: Int, from source: String, to port: Int, group: EventLoopGroup) async throws -> [Channel] {
        let bootstrap = ClientBootstrap(group: group).bind(to: try SocketAddress(ipAddress: source, port: 0))
        var channels: [Channel] = []
        channels.reserveCapacity(count)
        while channels.count < count {
            let batch = (0..<min(200, count - channels.count)).map { _ in bootstrap.connect(host: "127.0.0.1", port: port) }
            for connection in batch {
                channels.append(try await connection.get())
            }
        }
        return channels
    }

    /// Waits until the server has closed `channel` (seen as EOF); false after `timeout`.
    static func closedByServer(_ channel: Channel, timeout: TimeAmount = .seconds(10)) async -> Bool {
        let deadline = NIODeadline.now() + timeout
        while NIODeadline.now() < deadline {
            if !channel.isActive { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return !channel.isActive
    }

    /// Waits until `condition` holds; false after `timeout`.
    static func eventually(timeout: TimeAmount = .seconds(10), _ condition: () -> Bool) async -> Bool {
        let deadline = NIODeadline.now() + timeout
        while NIODeadline.now() < deadline {
            if condition() { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return condition()
    }

    static func close(_ channels: [Channel]) async {
        for channel in channels {
            try? await channel.close()
        }
    }

    /// Lets this process hold `count` descriptors, up to its hard limit.
    static func allowOpenFiles(_ count: Int) {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < rlim_t(count) else { return }
        limit.rlim_cur = min(rlim_t(count), limit.rlim_max)
        _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    }
}

