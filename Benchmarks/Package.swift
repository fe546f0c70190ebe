// swift-tools-version: 6.1
// The benchmarks are their own package, so users of the library never pull their
// dependencies (package-benchmark, GRDB, and the C peers).
//
//   swift package benchmark                 # the hot-path suites
//   swift run -c release strata-bench       # WORKLOAD.md on Strata and its peers, in one run
import PackageDescription

let package = Package(
    name: "StrataBenchmarks",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "strata-bench", targets: ["StrataBench"]),
    ],
    dependencies: [
        .package(name: "Strata", path: ".."),
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.6.0"),
    ],
    targets: [
        // LMDB, LevelDB and LZ4 through their C APIs (Debian's -dev packages).
        .systemLibrary(
            name: "CPeers",
            path: "Sources/CPeers",
            providers: [.apt(["liblmdb-dev", "libleveldb-dev", "liblz4-dev"])]),
        // The workloads' data: W1 users, W2 documents, W3 dialogs, shared by both runners.
        .target(
            name: "BenchmarkSupport",
            dependencies: [
                .product(name: "Strata", package: "Strata"),
                .product(name: "StrataDAO", package: "Strata"),
                .product(name: "StrataExamples", package: "Strata"),
            ],
            path: "Sources/BenchmarkSupport"),
        .executableTarget(
            name: "StrataBench",
            dependencies: [
                "BenchmarkSupport",
                "CPeers",
                .product(name: "Strata", package: "Strata"),
                .product(name: "StrataEngine", package: "Strata"),
                .product(name: "StrataDAO", package: "Strata"),
                .product(name: "StrataExamples", package: "Strata"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "StrataSQLite", package: "Strata"),
                .product(name: "StrataPostgres", package: "Strata"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Sources/StrataBench"),
        .executableTarget(
            name: "StrataBenchmarks",
            dependencies: [
                "BenchmarkSupport",
                "CPeers",
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "Strata", package: "Strata"),
                .product(name: "StrataEngine", package: "Strata"),
                .product(name: "StrataDAO", package: "Strata"),
                .product(name: "StrataExamples", package: "Strata"),
                .product(name: "StrataRecord", package: "Strata"),
            ],
            path: "Benchmarks/StrataBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
