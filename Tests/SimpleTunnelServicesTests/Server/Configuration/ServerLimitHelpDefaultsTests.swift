import Foundation
import Testing
@testable import SimpleTunnelServices

/// `--help` says each limit's default ("Default 8."): it must be the value a
/// server started without the flag or the file's key really runs with.
@Suite("The help's defaults are the limits' defaults")
struct ServerLimitHelpDefaultsTests {
    /// The help line of `flag`, joined into one line, from the options' own help.
    static func help(of flag: String) -> String? {
        let lines = TunnelServerLaunchOptions.helpMessage(columns: 100_000).split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        guard let start = lines.firstIndex(where: { $0.hasPrefix(flag + " ") }) else { return nil }
        // The option's line, then its description up to the next option.
        let description = lines[(start + 1)...].prefix { !$0.hasPrefix("-") }
        return ([lines[start]] + description).joined(separator: " ")
    }

    /// "Default 8." → "8"; nil for a default said in words ("Default: what the open-file limit leaves.").
    static func statedDefault(in help: String) -> String? {
        guard let range = help.range(of: "Default ") else { return nil }
        let rest = help[range.upperBound...]
        let value = rest.prefix { !$0.isWhitespace && $0 != ";" }
        return String(value.hasSuffix(".") ? value.dropLast() : value)
    }

    @Test func everyLimitWhoseHelpStatesADefaultRunsWithIt() throws {
        let running = try ServerLimitTests.launch(limits: [:]).settings
        var checked: [String] = []
        var mismatches: [String] = []
        for limit in ServerLimit.all {
            guard let help = Self.help(of: limit.flag) else {
                mismatches.append("\(limit.flag): not in --help")
                continue
            }
            guard let stated = Self.statedDefault(in: help) else { continue }
            // "10 s", "8 MiB" and "900 s" are said "10", "8" and "900" in the help.
            let actual = limit.describe(running).replacingOccurrences(of: " MiB", with: "").replacingOccurrences(of: " s", with: "")
            checked.append(limit.flag)
            if actual != stated { mismatches.append("\(limit.flag): help says \(stated), runs with \(actual)") }
        }
        #expect(mismatches.isEmpty, "\(mismatches)")
        // Most limits state theirs; a parser that found none would make this test pass by checking nothing.
        #expect(checked.count >= 12, "only \(checked) were checked")
    }
}
