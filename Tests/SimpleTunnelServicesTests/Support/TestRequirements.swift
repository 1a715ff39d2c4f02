import Foundation

/// Whether a test that needs something of the machine (root, namespaces,
/// python3) may skip when it is missing. CI sets SIMPLETUNNEL_REQUIRE_ALL_TESTS=1:
/// there such a test runs anyway and fails on what is missing, so a green CI
/// means every test ran. Elsewhere it skips and says why.
enum TestRequirements {
    static let allRequired = ProcessInfo.processInfo.environment["SIMPLETUNNEL_REQUIRE_ALL_TESTS"] == "1"

    /// For `.enabled(if:)`: true when `present`, or when every test must run.
    static func met(_ present: Bool, _ what: String) -> Bool {
        if !present, allRequired {
            FileHandle.standardError.write(Data("Running a test that needs \(what) although it is missing: SIMPLETUNNEL_REQUIRE_ALL_TESTS is set\n".utf8))
        }
        return present || allRequired
    }
}
