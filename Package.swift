// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "simpletunnel",
    products: [
        .library(name: "SimpleTunnelServices", targets: ["SimpleTunnelServices", "SimpleTunnelWire"]),
        .executable(name: "tunnel-server", targets: ["TunnelServer"]),
        .executable(name: "tunnel-client", targets: ["TunnelClient"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.3"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/x-sheep/swift-property-based.git", from: "2.0.1"),
        // Several servers share logins, leases and sessions in PostgreSQL (only with --database).
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
    ],
    targets: [
        // The protocol's bytes (property lists, messages, framing): a leaf the
        // compiler keeps free of everything above it.
        .target(
            name: "SimpleTunnelWire",
            dependencies: [.product(name: "NIOCore", package: "swift-nio")]
        ),
        .target(
            name: "SimpleTunnelServices",
            dependencies: [
                "SimpleTunnelWire",
                // The serving options are declared once, where the launch reads them.
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                // SIGHUP reloads the server's users file.
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                // TLS: system OpenSSL plus a shim for its macros.
                .product(name: "NIOTLS", package: "swift-nio"),
                "COpenSSL",
                "CTLSShims",
                // IP-layer tunnel: TUN device and namespace calls.
                "CTUNShims",
            ]
        ),
        // Logins, leases and sessions several servers share in PostgreSQL
        // (--database): only tunnel-server and the tests link it and its client.
        .target(
            name: "SimpleTunnelDatabase",
            dependencies: [
                "SimpleTunnelServices",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ]
        ),
        // TLS: the system's OpenSSL 3 (libssl-dev) and a C shim for its macros.
        .systemLibrary(
            name: "COpenSSL",
            pkgConfig: "openssl",
            providers: [.apt(["libssl-dev"])]
        ),
        .target(name: "CTLSShims", dependencies: ["COpenSSL"]),
        // IP-layer tunnel: Linux TUN, ifreq ioctls, setns and poll.
        .target(name: "CTUNShims"),
        .executableTarget(
            name: "TunnelServer",
            dependencies: [
                "SimpleTunnelServices",
                "SimpleTunnelDatabase",
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        .executableTarget(
            name: "TunnelClient",
            dependencies: [
                "SimpleTunnelServices",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        .executableTarget(
            name: "WireBenchmark",
            dependencies: [
                "SimpleTunnelServices",
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            path: "Benchmarks/WireBenchmark"
        ),
        .executableTarget(
            name: "MultiplexerBenchmark",
            dependencies: [
                "SimpleTunnelServices",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Benchmarks/MultiplexerBenchmark"
        ),
        .executableTarget(
            name: "RelayFloor",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            path: "Benchmarks/RelayFloor"
        ),
        .executableTarget(
            name: "TLSBenchmark",
            dependencies: [
                "SimpleTunnelServices",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOTLS", package: "swift-nio"),
            ],
            path: "Benchmarks/TLSBenchmark"
        ),
        .testTarget(
            name: "SimpleTunnelServicesTests",
            dependencies: [
                "SimpleTunnelServices",
                "SimpleTunnelDatabase",
                "SimpleTunnelWire",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOTestUtils", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOTLS", package: "swift-nio"),
                "COpenSSL",
                .product(name: "PropertyBased", package: "swift-property-based"),
                // Built for the tests that run the real programs in network namespaces.
                "TunnelServer",
                "TunnelClient",
            ],
        ),
    ]
)
