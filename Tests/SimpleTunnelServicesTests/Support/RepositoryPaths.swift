import Foundation

/// Paths of files the tests read from the repository and from `../shared`.
enum RepositoryPaths {
    /// The repository root: this file is Tests/SimpleTunnelServicesTests/Support/RepositoryPaths.swift.
    static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let fixtures = root.appendingPathComponent("Fixtures")
    static let appleSampleConfiguration = root.deletingLastPathComponent()
        .appendingPathComponent("shared/apple-sample/config.plist")
}
