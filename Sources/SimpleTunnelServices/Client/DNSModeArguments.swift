extension DNSMode {
    /// A bare `--dns`, as it was before it took a mode, means `auto`:
    /// `tunnel-client` rewrites it before parsing, so old command lines keep working.
    public static func rewritingBareFlag(_ arguments: [String]) -> [String] {
        arguments.indices.map { index in
            let next = arguments.indices.contains(index + 1) ? arguments[index + 1] : nil
            return arguments[index] == "--dns" && next.flatMap(DNSMode.init(rawValue:)) == nil ? "--dns=auto" : arguments[index]
        }
    }
}
