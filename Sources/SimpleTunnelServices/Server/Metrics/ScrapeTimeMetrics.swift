import Prometheus

/// What the endpoint sets on each scrape, beside what the server counts as it
/// runs: the build it is and the process's own figures.
struct ScrapeTimeMetrics: Sendable {
    private let residentMemory: Gauge
    private let openDescriptors: Gauge

    init(registry: PrometheusCollectorRegistry, version: String = SimpleTunnelVersion.current) {
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
        guard let figures = ProcessFigures.current() else { return }
        residentMemory.set(to: Double(figures.residentMemoryBytes))
        openDescriptors.set(to: Double(figures.openDescriptors))
    }
}
