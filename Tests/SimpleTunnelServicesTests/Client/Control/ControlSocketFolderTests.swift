import Foundation
import Logging
import NIOCore
import NIOPosix
import Testing
@testable import SimpleTunnelServices

/// A control socket goes only in a folder no one else may write to: a folder
/// another user made first (/tmp/simpletunnel-0 before root's client starts),
/// a symbolic link in its place, or a folder others may write to is refused
/// with what to do, and nothing is bound there.
@Suite("Control socket folder", .timeLimit(.minutes(3)))
struct ControlSocketFolderTests {
    static func scratch() -> String {
        let folder = NSTemporaryDirectory() + "control-folder-\(UUID().uuidString.prefix(8))"
        try? FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        return folder
    }

    static func start(_ path: String, owner: (uid: uid_t, gid: gid_t)? = nil) async throws -> ControlSocketServer {
        try await ControlSocketServer.start(
            path: path, owner: owner, program: "tunnel-client", group: MultiThreadedEventLoopGroup.singleton,
            logger: Logger(label: "test")
        ) { _ in Data("{\"ok\":true}".utf8) }
    }

    @Test func theRuleByValue() {
        func folder(_ kind: ControlSocketFolder.Kind = .directory, owner: uid_t, mode: mode_t) -> ControlSocketFolder {
            ControlSocketFolder(path: "/tmp/simpletunnel-0", kind: kind, ownerID: owner, mode: mode)
        }
        #expect(folder(owner: 1000, mode: 0o700).refusal(effectiveUser: 1000) == nil)
        #expect(folder(owner: 1000, mode: 0o755).refusal(effectiveUser: 1000) == nil)
        #expect(folder(owner: 0, mode: 0o755).refusal(effectiveUser: 1000) == nil)
        #expect(folder(owner: 1000, mode: 0o700).refusal(effectiveUser: 0) == .foreignOwner("/tmp/simpletunnel-0", owner: 1000, you: 0))
        // Root starting a service for uid 998: the folder made for it, or systemd's RuntimeDirectory=, is 998's.
        #expect(folder(owner: 998, mode: 0o700).refusal(effectiveUser: 0, serviceUser: 998) == nil)
        #expect(folder(owner: 998, mode: 0o700).refusal(effectiveUser: 1000, serviceUser: 998) != nil)
        #expect(folder(owner: 0, mode: 0o1777).refusal(effectiveUser: 0) == .writableByOthers("/tmp/simpletunnel-0", mode: 0o1777))
        #expect(folder(owner: 1000, mode: 0o720).refusal(effectiveUser: 1000) != nil)
        #expect(folder(.symbolicLink, owner: 1000, mode: 0o777).refusal(effectiveUser: 1000) == .symbolicLink("/tmp/simpletunnel-0"))
        #expect(folder(.other, owner: 1000, mode: 0o600).refusal(effectiveUser: 1000) == .notADirectory("/tmp/simpletunnel-0"))
        #expect(
            ControlSocketFolderError.foreignOwner("/tmp/simpletunnel-0", owner: 1000, you: 0).description
                == "/tmp/simpletunnel-0 is owned by uid 1000, not you (0): remove it, or give --control PATH in a folder of your own")
    }

    @Test(.enabled(if: TestRequirements.met(geteuid() == 0, "root"), "needs root to give the folder to another user"))
    func aFolderAnotherUserMadeFirstIsRefused() async throws {
        let scratch = Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let folder = scratch + "/simpletunnel-0"
        #expect(mkdir(folder, 0o700) == 0)
        #expect(chown(folder, 65534, 65534) == 0)
        let failure = await #expect(throws: ControlSocketFolderError.self) { _ = try await Self.start(folder + "/client.sock") }
        #expect(failure?.description == "\(folder) is owned by uid 65534, not you (0): remove it, or give --control PATH in a folder of your own")
        #expect(!FileManager.default.fileExists(atPath: folder + "/client.sock"))
    }

    @Test func aSymbolicLinkInPlaceOfTheFolderIsRefused() async throws {
        let scratch = Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let target = scratch + "/elsewhere"
        #expect(mkdir(target, 0o700) == 0)
        #expect(symlink(target, scratch + "/simpletunnel") == 0)
        let failure = await #expect(throws: ControlSocketFolderError.self) { _ = try await Self.start(scratch + "/simpletunnel/client.sock") }
        #expect(failure == .symbolicLink(scratch + "/simpletunnel"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: target).isEmpty)
    }

    @Test func aFolderOthersMayWriteToIsRefused() async throws {
        let scratch = Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        for mode: mode_t in [0o777, 0o770, 0o1777] {
            let folder = scratch + "/open-\(String(mode, radix: 8))"
            #expect(mkdir(folder, 0o700) == 0 && chmod(folder, mode) == 0)
            let failure = await #expect(throws: ControlSocketFolderError.self) { _ = try await Self.start(folder + "/client.sock") }
            #expect(failure == .writableByOthers(folder, mode: mode), "\(String(describing: failure))")
            #expect(failure?.description.contains("chmod 700 \(folder)") == true)
        }
    }

    @Test func aNewFolderIsPrivateAndTheSocketAnswers() async throws {
        let scratch = Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let path = scratch + "/new/simpletunnel/client.sock"
        let server = try await Self.start(path)
        var folder = stat()
        var socket = stat()
        #expect(lstat(scratch + "/new/simpletunnel", &folder) == 0 && lstat(path, &socket) == 0)
        #expect(folder.st_mode & 0o7777 == 0o700 && folder.st_uid == geteuid())
        #expect(socket.st_mode & S_IFMT == S_IFSOCK && socket.st_mode & 0o7777 == 0o600)
        let answer = try await ControlSocketClient.exchange(
            Data("{\"type\":\"status\"}".utf8), path: path, program: "tunnel-client", group: MultiThreadedEventLoopGroup.singleton)
        #expect(String(decoding: answer, as: UTF8.self) == "{\"ok\":true}")

        // Started again in the folder it made, once the first has gone.
        await server.close()
        let again = try await Self.start(path)
        await again.close()
    }

    @Test(.enabled(if: TestRequirements.met(geteuid() == 0, "root"), "needs root to hand the socket to another user"))
    func rootHandsTheSocketAndANewFolderToTheServiceUser() async throws {
        let scratch = Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let path = scratch + "/run/client.sock"
        let server = try await Self.start(path, owner: (uid: 65534, gid: 65534))
        var folder = stat()
        var socket = stat()
        #expect(lstat(scratch + "/run", &folder) == 0 && lstat(path, &socket) == 0)
        #expect(folder.st_uid == 65534 && folder.st_mode & 0o7777 == 0o700)
        #expect(socket.st_uid == 65534 && socket.st_gid == 65534 && socket.st_mode & 0o7777 == 0o600)
        await server.close()
        // A restart as root finds the folder the service user owns, and takes it.
        let again = try await Self.start(path, owner: (uid: 65534, gid: 65534))
        await again.close()
    }

    @Test func rootsClientDefaultsToAFolderInRun() {
        #expect(ControlProtocol.defaultPath(environment: [:], userID: 0) == "/run/simpletunnel-client/client.sock")
        #expect(ControlProtocol.defaultPath(environment: ["XDG_RUNTIME_DIR": "/run/user/0"], userID: 0) == "/run/user/0/simpletunnel/client.sock")
        #expect(ControlProtocol.defaultPath(environment: [:], userID: 1000) == "/tmp/simpletunnel-1000/client.sock")
    }
}
