// swift-tools-version: 6.1
// The benchmarks are their own package, so users of the library never pull their
// dependencies. Run from this directory: `swift package benchmark`.
import PackageDescription

let package = Package(
    name: "StrataBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "Strata", path: ".."),
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        .executableTarget(
            name: "StrataBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "Strata", package: "Strata"),
                .product(name: "StrataEngine", package: "Strata"),
                .product(name: "StrataDAO", package: "Strata"),
                .product(name: "StrataExamples", package: "Strata"),
            ],
            path: "Benchmarks/StrataBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
