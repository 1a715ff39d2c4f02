import Foundation
import Logging
import NIOCore
import PostgresNIO
import Testing
@testable import SimpleTunnelDatabase
@testable import SimpleTunnelServices

/// Servers on loopback sharing one throwaway PostgreSQL, each with an IP
/// layer on an in-memory device (no TUN): what several machines behind a load
/// balancer share, in one process.
struct SharedDatabaseCluster {
    struct Member {
        let database: TunnelDatabase
        let fixture: RawServerFixture
        let device: InMemoryPacketFlow
        let layer: ServerIPLayer
        let run: Task<Void, Never>
    }

    let postgres: ThrowawayPostgres
    let members: [Member]
    let log: CapturingLogHandler.Lines

    static let pool = ("10.90.0.2", "10.90.0.254")
    /// Leased beside the IPv4 pool when a cluster is started `dualStack`.
    static let ipv6Pool = ("fd00:90::2", "fd00:90::ffff")

    /// Where the servers find the database: by default its own socket.
    typealias Locate = @Sendable (ThrowawayPostgres) async throws -> DatabaseLocation

    /// Runs `body` with a cluster and stops it afterwards, also when `body` failed or returned early.
    static func with(
        servers: Int = 2, logins: [String]? = nil, timeout: Duration = .seconds(20), dualStack: Bool = false,
        locate: Locate = { try $0.location },
        _ body: (SharedDatabaseCluster) async throws -> Void
    ) async throws {
        let cluster = try await start(servers: servers, logins: logins, timeout: timeout, dualStack: dualStack, locate: locate)
        do {
            try await body(cluster)
        } catch {
            await cluster.stop()
            throw error
        }
        await cluster.stop()
    }

    /// `logins`: every tunnel must log in, with these logins stored in the database (password "pw-LOGIN").
    static func start(
        servers: Int = 2, logins: [String]? = nil, timeout: Duration = .seconds(20), dualStack: Bool = false,
        locate: Locate = { try $0.location }
    ) async throws -> SharedDatabaseCluster {
        let postgres = try await ThrowawayPostgres.started()
        let (capturing, log) = CapturingLogHandler.logger()
        var logger = capturing
        logger.logLevel = .info
        var members: [Member] = []
        do {
            let location = try await locate(postgres)
            for _ in 0..<servers {
                members.append(try await member(location, logins: logins, timeout: timeout, dualStack: dualStack, logger: logger))
            }
            if let logins, let first = members.first {
                for login in logins {
                    try await DatabaseLogins(database: first.database).set(
                        login, hash: try PasswordHash(password: "pw-\(login)", iterations: PasswordHash.minimumIterations))
                }
            }
        } catch {
            await Self(postgres: postgres, members: members, log: log).stop()
            throw error
        }
        return SharedDatabaseCluster(postgres: postgres, members: members, log: log)
    }

    private static func member(
        _ location: DatabaseLocation, logins: [String]?, timeout: Duration, dualStack: Bool, logger: Logger
    ) async throws -> Member {
        let database = TunnelDatabase(location: location, password: nil, timeout: timeout, logger: logger)
        let run = Task { await database.run() }
        try await database.prepare()
        // Takeovers by the other servers must reach this one before the test makes any.
        for _ in 0..<500 where !database.isListening {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(database.isListening)
        let device = InMemoryPacketFlow()
        var configuration = try IPLayerTests.configuration(pool.0, pool.1)
        if dualStack {
            configuration.ipv6Pool = try #require(IPv6Address(ipv6Pool.0))...(try #require(IPv6Address(ipv6Pool.1)))
        }
        let router = PacketRouter(device: device, policy: .allowAll, logger: TunnelFixture.logger)
        let layer = ServerIPLayer(
            pool: DatabaseAddressPool(range: configuration.pool, ipv6Range: configuration.ipv6Pool, database: database), router: router,
            configuration: configuration)
        let fixture = try await RawServerFixture.start {
            $0.ipLayer = layer
            // Every client of these tests comes from 127.0.0.1, many at once.
            $0.startupsPerAddress = 1000
            $0.startups = StartupsPolicy(uncheckedStart: 1000, rate: 100, full: 1000)
            $0.maximumTunnels = 1000
            if logins != nil {
                var checks = PasswordCheckLimits()
                checks.perSource = 1000
                $0.authentication = .init(users: DatabaseLogins(database: database), checker: PasswordChecker(limits: checks))
                $0.usageStore = DatabaseUsage(database: database)
                $0.usageStoreName = "the database"
            }
        }
        router.start()
        return Member(database: database, fixture: fixture, device: device, layer: layer, run: run)
    }

    func stop() async {
        for member in members {
            await member.fixture.stop()
            member.run.cancel()
            await member.run.value
        }
        postgres.remove()
    }

    /// A value from the database, for what the servers wrote.
    func count(_ query: PostgresQuery) async throws -> Int {
        try await members[0].database.perform("test query") { client, logger in
            var count = 0
            for try await value in try await client.query(query, logger: logger).decode(Int.self) { count = value }
            return count
        }
    }
}

extension RawTunnelPeer {
    /// Opens the IP flow of a dual-stack server; both leased addresses, or the result when refused.
    func openDualStackIP(_ identifier: TunnelConnectionIdentifier = 1) async throws -> Result<(ipv4: String, ipv6: String), OpenRefusal> {
        try await send(.open(identifier: identifier, request: .plainIP))
        switch await next(timeout: .seconds(90), skip: { if case .packets = $0 { true } else { false } }) {
        case .openResult(identifier, .success, let configuration?, _)?:
            guard let address = configuration["IPv4"]?.dictionaryValue?["Address"]?.stringValue,
                let address6 = configuration["IPv6"]?.dictionaryValue?["Address"]?.stringValue
            else { return .failure(OpenRefusal(result: nil)) }
            return .success((address, address6))
        case .openResult(identifier, let result, _, _)?:
            return .failure(OpenRefusal(result: result))
        default:
            return .failure(OpenRefusal(result: nil))
        }
    }

    /// Opens the IP flow; the leased address, or the result when refused.
    func openIP(_ identifier: TunnelConnectionIdentifier = 1) async throws -> Result<String, OpenRefusal> {
        try await send(.open(identifier: identifier, request: .plainIP))
        // Well past the database's deadline (the operation's, on a busy machine): a refusal for want of it must arrive.
        switch await next(timeout: .seconds(90), skip: { if case .packets = $0 { true } else { false } }) {
        case .openResult(identifier, .success, let configuration?, _)?:
            guard let address = configuration["IPv4"]?.dictionaryValue?["Address"]?.stringValue else { return .failure(OpenRefusal(result: nil)) }
            return .success(address)
        case .openResult(identifier, let result, _, _)?:
            return .failure(OpenRefusal(result: result))
        default:
            return .failure(OpenRefusal(result: nil))
        }
    }

    struct OpenRefusal: Error, Equatable {
        /// Nil: no answer (the tunnel closed).
        let result: TunnelConnectionOpenResult?
    }
}
