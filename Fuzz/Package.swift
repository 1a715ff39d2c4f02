// swift-tools-version:6.1
// Coverage-guided fuzz targets (libFuzzer) for what a peer or a local client
// can send. Built and run by `Fuzz/run.sh`, never by the main package: each
// target is a harness that `FuzzDriver` hands to libFuzzer.
import Foundation
import PackageDescription

// A path dependency is named after its directory, whatever the checkout is called.
let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
let main = root.lastPathComponent.lowercased()

func fuzzTarget(_ name: String) -> Target {
    .executableTarget(
        name: name,
        dependencies: [
            "FuzzDriver",
            .product(name: "SimpleTunnelServices", package: main),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOEmbedded", package: "swift-nio"),
            .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "Logging", package: "swift-log"),
        ]
    )
}

let package = Package(
    name: "simpletunnel-fuzz",
    dependencies: [
        .package(path: ".."),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.3"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
    ],
    targets: [.target(name: "FuzzDriver", dependencies: [.product(name: "SimpleTunnelServices", package: main)])]
        + ["FuzzFrameDecoder", "FuzzXMLPropertyList", "FuzzSOCKS5", "FuzzAuthenticationGate", "FuzzNames", "FuzzTUNSplit", "FuzzSuperPacket", "FuzzPortLookup", "FuzzProxyHeader"].map(fuzzTarget)
)
