import NIOCore
import Testing
@testable import SimpleTunnelServices

#if canImport(Glibc)
import Glibc
#endif

@Suite("Open-file limit: raised at start, and what it leaves for flows", .timeLimit(.minutes(3)))
struct OpenFileLimitTests {
    /// Runs whatever the hard limit is: with an unlimited one, the target is the kernel's maximum.
    @Test func theSoftLimitIsRaisedToTheHardLimit() throws {
        let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
        var limit = rlimit()
        try #require(getrlimit(resource, &limit) == 0)
        let target = OpenFileLimit.raisedSoftLimit(current: 0, hard: limit.rlim_max, kernelMaximum: OpenFileLimit.kernelMaximum())
        try #require(target > 1)
        // Lowered by one only: other tests run in this process meanwhile.
        limit.rlim_cur = target - 1
        try #require(setrlimit(resource, &limit) == 0)
        let raised = try #require(OpenFileLimit.raiseSoftLimitToHardLimit())
        #expect(raised.before.soft == Int(target - 1))
        #expect(raised.after.soft == Int(target))
        #expect(OpenFileLimit.current() == raised.after)
    }

    @Test func anUnlimitedHardLimitMeansTheKernelsMaximum() {
        #expect(OpenFileLimit.raisedSoftLimit(current: 1024, hard: 4096, kernelMaximum: 1_048_576) == 4096)
        #expect(OpenFileLimit.raisedSoftLimit(current: 1024, hard: OpenFileLimit.unlimited, kernelMaximum: 1_048_576) == 1_048_576)
        #expect(OpenFileLimit.raisedSoftLimit(current: 1024, hard: OpenFileLimit.unlimited, kernelMaximum: nil) == 1024)
        // Never lowered.
        #expect(OpenFileLimit.raisedSoftLimit(current: 8192, hard: OpenFileLimit.unlimited, kernelMaximum: 4096) == 8192)
    }

    func prepare(_ edit: (inout TunnelServerLaunchOptions) -> Void = { _ in }, openFileLimit: Int) throws -> TunnelServerLaunch {
        var options = TunnelServerLaunchOptions.none
        options.plaintext = true
        edit(&options)
        return try TunnelServerLaunch.prepare(options, resolvConf: nil, openFileLimit: openFileLimit)
    }

    @Test func theServerTakesWhatTheLimitLeavesAndATunnelAQuarter() throws {
        let budget = try prepare(openFileLimit: 1024).settings.opener.socketBudget
        #expect(budget.serverLimit == 640)
        #expect(budget.tunnelShare == 160)
        let large = try prepare(openFileLimit: 1_048_576).settings.opener.socketBudget
        #expect(large.tunnelShare == 4096, "never more than a tunnel's flow limit")
        let fewFlows = try prepare({ $0.maximumFlowsPerTunnel = 10 }, openFileLimit: 1024).settings.opener.socketBudget
        #expect(fewFlows.tunnelShare == 10)
    }

    @Test func aFlagSetsTheLimitLowerButNeverHigher() throws {
        let lower = try prepare({ $0.maximumFlowSockets = 100 }, openFileLimit: 1024)
        #expect(lower.settings.opener.socketBudget.serverLimit == 100)
        #expect(lower.settings.opener.socketBudget.tunnelShare == 25)
        #expect(!lower.warnings.contains { $0.contains("--max-flow-sockets") })
        let higher = try prepare({ $0.maximumFlowSockets = 5000 }, openFileLimit: 1024)
        #expect(higher.settings.opener.socketBudget.serverLimit == 640)
        #expect(higher.warnings.contains { $0.contains("--max-flow-sockets 5000") && $0.contains("LimitNOFILE") })
        #expect(throws: TunnelServerLaunchError.self) { try prepare({ $0.maximumFlowSockets = 0 }, openFileLimit: 1024) }
        let starved = try prepare(openFileLimit: 400)
        #expect(starved.warnings.contains { $0.contains("leaves only 16 flow sockets") })
    }

    @Test func theDrainTimeoutComesFromTheFlagOrTheDefault() throws {
        #expect(try prepare(openFileLimit: 1024).settings.opener.drainTimeout == .seconds(30))
        #expect(try prepare({ $0.flowDrainTimeout = .milliseconds(2500) }, openFileLimit: 1024).settings.opener.drainTimeout == .milliseconds(2500))
        #expect(throws: TunnelServerLaunchError.self) { try prepare({ $0.flowDrainTimeout = .zero }, openFileLimit: 1024) }
    }
}
