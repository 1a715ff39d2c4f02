import Foundation
import NIOCore
@testable import SimpleTunnelServices

/// A fresh folder under the system's temporary directory, removed when the value goes away.
final class TemporaryDirectory {
    let path: String

    init() throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("config-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        path = url.path
    }

    deinit {
        try? FileManager.default.removeItem(atPath: path)
    }

    /// Writes `contents` to `name` inside the folder and returns the file's path.
    func write(_ name: String, _ contents: Data) throws -> String {
        let filePath = path + "/" + name
        try contents.write(to: URL(fileURLWithPath: filePath))
        return filePath
    }

    func write(_ name: String, text: String) throws -> String {
        try write(name, Data(text.utf8))
    }

    func write(_ name: String, binary value: PropertyListValue) throws -> String {
        try write(name, Data(BinaryPropertyListWriter.bytes(value).readableBytesView))
    }
}

/// Configuration property lists for tests, built from the sample's pool.
enum SampleConfiguration {
    static let pool: PropertyListValue = .dictionary([
        "StartAddress": .string("192.168.2.2"),
        "EndAddress": .string("192.168.2.10"),
    ])

    /// The sample's shape with extra top-level keys merged in.
    static func with(_ extra: [String: PropertyListValue] = [:], ipv4 extraIPv4: [String: PropertyListValue] = [:]) -> PropertyListValue {
        var ipv4: [String: PropertyListValue] = ["Pool": pool]
        ipv4.merge(extraIPv4) { $1 }
        var top: [String: PropertyListValue] = ["IPv4": .dictionary(ipv4)]
        top.merge(extra) { $1 }
        return .dictionary(top)
    }

    /// A configuration with `settings` as its `Server` dictionary.
    static func withServer(_ settings: [String: PropertyListValue]) -> PropertyListValue {
        with(["Server": .dictionary(settings)])
    }
}

extension PropertyListValue {
    /// An array of strings, as rule lists and DNS servers are written.
    static func strings(_ values: [String]) -> PropertyListValue {
        .array(values.map { .string($0) })
    }
}
