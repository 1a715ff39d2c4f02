import Foundation
import NIOCore
import NIOEmbedded
import Testing
@testable import SimpleTunnelServices

/// The golden frames of Fixtures/, written by CoreFoundation and Python's
/// plistlib, fed through the real codec handlers.
@Suite("Golden fixtures", .timeLimit(.minutes(2)))
struct FixtureTests {
    static func fixtureNames(_ folder: String) -> [String] {
        let directory = RepositoryPaths.fixtures.appendingPathComponent(folder)
        let files = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        return files.filter { $0.hasSuffix(".json") }.map { String($0.dropLast(5)) }.sorted()
    }

    static let valid = fixtureNames("valid")
    static let invalid = fixtureNames("invalid")

    static func load(_ folder: String, _ name: String) throws -> (frame: ByteBuffer, meaning: [String: Any]) {
        let base = RepositoryPaths.fixtures.appendingPathComponent(folder).appendingPathComponent(name)
        let frame = try ByteBuffer(bytes: Data(contentsOf: base.appendingPathExtension("bin")))
        return (frame, try FixtureMeaning.object(at: base.appendingPathExtension("json")))
    }

    /// Feeds a frame through the codec; returns what came out and the error that ended the tunnel.
    static func decode(_ frame: ByteBuffer) throws -> (inbound: [TunnelInboundMessage], error: Error?) {
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addTunnelMessageCodec()
        var thrown: Error?
        do {
            try channel.writeInbound(frame)
            _ = try channel.finish()
        } catch {
            thrown = error
        }
        var inbound: [TunnelInboundMessage] = []
        while let message = try channel.readInbound(as: TunnelInboundMessage.self) {
            inbound.append(message)
        }
        return (inbound, thrown)
    }

    @Test func fixturesArePresent() {
        #expect(Self.valid.count >= 60, "Fixtures/valid is missing; run python3 Fixtures/generate.py")
        #expect(Self.invalid.count >= 100, "Fixtures/invalid is missing; run python3 Fixtures/generate.py")
        let commands = Set(Self.valid.compactMap { try? FixtureMeaning.message(Self.load("valid", $0).meaning).command })
        #expect(commands == Set(TunnelCommand.allCases))
    }

    @Test(arguments: valid)
    func validFixtureDecodesToItsMeaning(name: String) throws {
        let (frame, meaning) = try Self.load("valid", name)
        let expected = try FixtureMeaning.message(meaning)
        let (inbound, error) = try Self.decode(frame)
        #expect(error == nil)
        #expect(inbound == [.message(expected)])
    }

    @Test(arguments: valid)
    func meaningEncodesToBytesEveryReaderAgreesOn(name: String) async throws {
        let expected = try FixtureMeaning.message(Self.load("valid", name).meaning)
        var frame = ByteBuffer()
        try TunnelFrame.encode(expected, into: &frame)
        let (inbound, error) = try Self.decode(frame)
        #expect(error == nil)
        #expect(inbound == [.message(expected)])

        var payload = frame
        payload.moveReaderIndex(forwardBy: TunnelWireLimits.lengthPrefixSize)
        #expect(try ExternalPropertyListReaders.roundTripThroughCoreFoundation(payload) == expected.propertyList)
        #expect(try await ExternalPropertyListReaders.roundTripThroughPlistlib(payload) == expected.propertyList)
    }

    @Test(arguments: invalid)
    func invalidFixtureGivesItsError(name: String) throws {
        let (frame, meaning) = try Self.load("invalid", name)
        let expected = try FixtureMeaning.expectedError(meaning)
        let (inbound, error) = try Self.decode(frame)

        if expected.disposition == "closeTunnel" {
            #expect(inbound.isEmpty)
            let wireError = try #require(error as? TunnelWireError, "expected \(expected.kind), got \(String(describing: error))")
            #expect(wireError.kind == expected.kind)
            return
        }
        #expect(error == nil)
        guard inbound.count == 1, case .rejected(let rejection) = inbound[0] else {
            Issue.record("expected one rejection \(expected.kind), got \(inbound)")
            return
        }
        #expect(rejection.kind.rawValue == expected.kind)
        if let key = expected.key {
            #expect(rejection.key == key)
        }
        if let identifier = expected.identifier {
            #expect(rejection.identifier == identifier)
        }
        switch (expected.disposition, rejection.disposition) {
        case ("drop", .drop), ("ignore", .ignore):
            break
        case ("openFailure", .openFailure(let identifier)):
            #expect(expected.identifier == nil || identifier == expected.identifier)
        default:
            Issue.record("disposition \(rejection.disposition), expected \(expected.disposition)")
        }
    }
}
