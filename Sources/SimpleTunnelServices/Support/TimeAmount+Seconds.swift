import NIOCore

extension TimeAmount {
    /// A command line's seconds (`--connect-timeout 2.5`) as a time amount.
    public init(seconds: Double) {
        self = .nanoseconds(Int64(seconds * 1e9))
    }
}
