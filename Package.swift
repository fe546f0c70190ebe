// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "Strata",
    products: [
        .library(name: "StrataEngine", targets: ["StrataEngine"]),
        .executable(name: "strata-demo", targets: ["StrataDemo"]),
    ],
    targets: [
        .systemLibrary(
            name: "CLZ4",
            pkgConfig: "liblz4",
            providers: [.apt(["liblz4-dev"])]
        ),
        .target(name: "StrataEngine", dependencies: ["CLZ4"]),
        .executableTarget(name: "StrataDemo", dependencies: ["StrataEngine"]),
        // Child process driven by the crash and locking tests (kill -9, second writer).
        .executableTarget(name: "StrataCrashChild", dependencies: ["StrataEngine"]),
        .testTarget(name: "StrataEngineTests", dependencies: ["StrataEngine", "StrataCrashChild"]),
    ],
    swiftLanguageModes: [.v6]
)
