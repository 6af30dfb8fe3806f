// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "GBGBridge",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "GBGBridge", targets: ["GBGBridge"]),
        .executable(name: "gbgbridge", targets: ["gbgbridge"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
    ],
    targets: [
        // Protocol core: message model, routing, capability slots. No I/O.
        .target(name: "GBGBridge"),
        .executableTarget(
            name: "gbgbridge",
            dependencies: [
                "GBGBridge",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .testTarget(
            name: "GBGBridgeTests",
            dependencies: ["GBGBridge"]
        ),
    ]
)
