/// The version both programs print for `--version`.
public enum SimpleTunnelVersion {
    public static let current = "0.1.0"
}
