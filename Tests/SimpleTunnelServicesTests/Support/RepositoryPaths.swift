import Foundation

/// Paths of files the tests read from the repository.
enum RepositoryPaths {
    /// The repository root: this file is Tests/SimpleTunnelServicesTests/Support/RepositoryPaths.swift.
    static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let fixtures = root.appendingPathComponent("Fixtures")
    /// Apple's SimpleTunnel server configuration, byte for byte as the sample ships it.
    static let appleSampleConfiguration = fixtures.appendingPathComponent("apple-sample/config.plist")
}
