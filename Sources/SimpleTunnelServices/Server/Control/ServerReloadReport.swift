/// What one reload did, part by part (the users file, the settings): said in
/// the log, and answered to `tunnel-server reload` so that a reload nothing
/// came of fails where the operator can see it.
public struct ServerReloadReport: Codable, Sendable, Equatable {
    public struct Part: Codable, Sendable, Equatable {
        /// "users file" or "configuration".
        public var name: String
        /// False: this part changed nothing, and `summary` says why.
        public var applied: Bool
        public var summary: String

        public init(name: String, applied: Bool, summary: String) {
            self.name = name
            self.applied = applied
            self.summary = summary
        }
    }

    public var parts: [Part]

    public init(parts: [Part] = []) {
        self.parts = parts
    }

    /// Every part read again was applied.
    public var succeeded: Bool { parts.allSatisfy(\.applied) }

    public var text: String {
        guard !parts.isEmpty else { return "nothing to reload: the server was started without a users file or a way to read its settings again" }
        return parts.map { "\($0.name): \($0.applied ? "" : "NOT RELOADED: ")\($0.summary)" }.joined(separator: "\n")
    }
}
