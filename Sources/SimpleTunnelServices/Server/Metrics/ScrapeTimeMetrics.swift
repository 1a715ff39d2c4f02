import Prometheus

/// What the endpoint sets on each scrape, beside what the server counts as it
/// runs: the build it is, the process's own figures and the seconds its
/// certificate has left.
struct ScrapeTimeMetrics: Sendable {
    private let registry: PrometheusCollectorRegistry
    private let residentMemory: Gauge
    private let openDescriptors: Gauge
    /// The certificate the server serves now; nil without one (`--plaintext`), when the gauge is left out.
    private let certificateExpiry: @Sendable () -> CertificateExpiry?
    /// Whether the shared database answers now; nil without one (`--database`), when the gauge is left out.
    private let databaseAnswers: @Sendable () -> Bool?

    init(
        registry: PrometheusCollectorRegistry, version: String = SimpleTunnelVersion.current,
        certificateExpiry: @escaping @Sendable () -> CertificateExpiry? = { nil }, databaseAnswers: @escaping @Sendable () -> Bool? = { nil }
    ) {
        self.registry = registry
        self.certificateExpiry = certificateExpiry
        self.databaseAnswers = databaseAnswers
        // Always 1: the version is the label, for joins and dashboards.
        registry.makeGauge(
            descriptor: MetricNameDescriptor(
                namespace: "simpletunnel", metricName: "build", unitName: "info", helpText: "The running build; its version is the label."),
            labels: [("version", version)]
        ).set(to: 1)
        residentMemory = registry.makeGauge(
            descriptor: MetricNameDescriptor(
                namespace: "process", metricName: "resident_memory", unitName: "bytes", helpText: "Resident memory size in bytes."))
        openDescriptors = registry.makeGauge(
            descriptor: MetricNameDescriptor(metricName: "process_open", unitName: "fds", helpText: "Number of open file descriptors."))
    }

    /// Reads /proc now; the gauges keep their last values if it cannot be read.
    func refresh() {
        if let seconds = certificateExpiry()?.secondsLeft() {
            // Made at the first scrape that has a certificate: a gauge at 0 would say it expires now.
            registry.makeGauge(
                descriptor: MetricNameDescriptor(
                    namespace: "simpletunnel", metricName: "certificate_expiry", unitName: "seconds",
                    helpText: "Seconds until the server certificate's notAfter (negative once expired).")
            ).set(to: seconds)
        }
        if let answers = databaseAnswers() {
            registry.makeGauge(
                descriptor: MetricNameDescriptor(
                    namespace: "simpletunnel", metricName: "database", unitName: "up",
                    helpText: "1 while the shared database (--database) answers, 0 while logins are told to try again later.")
            ).set(to: answers ? 1 : 0)
        }
        guard let figures = ProcessFigures.current() else { return }
        residentMemory.set(to: Double(figures.residentMemoryBytes))
        openDescriptors.set(to: Double(figures.openDescriptors))
    }
}
