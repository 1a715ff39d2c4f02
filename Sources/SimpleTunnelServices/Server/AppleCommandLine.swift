/// Apple's sample starts its server as `tunnel_server <port> <config-file>`.
/// That form is taken only when the arguments look like it (a number, then a
/// file), and is rewritten into our options; anything else goes to the
/// argument parser as written, so `--confg` or `pasword` get its own
/// "unknown option" and "unexpected argument" errors instead of being read as
/// a port.
public enum AppleCommandLine {
    /// `arguments` without the program name; Apple's form becomes
    /// `serve --port PORT --config FILE`, followed by any options after it.
    public static func rewritten(_ arguments: [String]) -> [String] {
        guard arguments.count >= 2, isPort(arguments[0]), !arguments[1].hasPrefix("-") else { return arguments }
        return ["serve", "--port", arguments[0], "--config", arguments[1]] + arguments.dropFirst(2)
    }

    private static func isPort(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count <= 5 && text.utf8.allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }
    }

    /// The argument parser reads a misspelt subcommand (`pasword`) as stray
    /// arguments of the default one; a first word a letter or two from a
    /// subcommand is named as what it is.
    public static func misspeltSubcommand(_ arguments: [String], subcommands: [String]) -> String? {
        guard let first = arguments.first, !first.hasPrefix("-"), !subcommands.contains(first), !isPort(first) else { return nil }
        // Words are few and short: within three edits of one (`pasword` is three from `passwd`), or its prefix.
        let scored = subcommands.map { (name: $0, distance: editDistance(first.lowercased(), $0)) }
        guard let best = scored.min(by: { $0.distance < $1.distance }),
            best.distance <= 3 || best.name.hasPrefix(first.lowercased())
        else { return nil }
        let meant = best.name
        return "Error: Unknown subcommand '\(first)'. Did you mean '\(meant)'?"
    }
}
