/// Keys of an IP flow's `configuration` (PROTOCOL.md A5) that are ours.
public enum IPFlowConfigurationKey {
    /// The server agreed to carry TCP super-packets whole on this flow (PROTOCOL.md B8).
    public static let superPackets = "SuperPackets"
}
