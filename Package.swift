// swift-tools-version: 6.1
import CompilerPluginSupport
import PackageDescription

let package = Package(
    name: "Strata",
    // Synchronization's Mutex and Atomic, and Foundation's Date.ISO8601FormatStyle.
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
    products: [
        .library(name: "StrataEngine", targets: ["StrataEngine"]),
        .library(name: "Strata", targets: ["Strata"]),
        // `@StoredModel`: the only product that builds swift-syntax (about 70 s more in a debug
        // build here, 6.5 minutes in a release build); a target that does not import it
        // never builds it.
        .library(name: "StrataMacros", targets: ["StrataMacros"]),
        .library(name: "StrataConformance", targets: ["StrataConformance"]),
        // The SQL backends: each is the only product that builds its driver.
        .library(name: "StrataSQLite", targets: ["StrataSQLite"]),
        .library(name: "StrataPostgres", targets: ["StrataPostgres"]),
        .library(name: "StrataDAO", targets: ["StrataDAO"]),
        .library(name: "StrataRepository", targets: ["StrataRepository"]),
        .library(name: "StrataRecord", targets: ["StrataRecord"]),
        // The DAO talk's example models, for the demo, tests and benchmarks.
        .library(name: "StrataExamples", targets: ["StrataExamples"]),
        // Strata Studio, the browser view `storedump serve` starts: the only product that
        // builds a web server (Hummingbird).
        .library(name: "StrataStudio", targets: ["StrataStudio"]),
        .executable(name: "strata-demo", targets: ["StrataDemo"]),
        .executable(name: "storedump", targets: ["storedump"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.6.0"),
        // The ecosystem's logging API: the engine reports what it repairs or cannot do.
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        // For StrataMacros only.
        .package(url: "https://github.com/swiftlang/swift-syntax", "603.0.0" ..< "604.0.0"),
        // For StrataSQLite only.
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        // For StrataPostgres only.
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        // For StrataStudio only; without its default traits (swift-configuration, full
        // Foundation), which Studio does not use.
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1", traits: []),
        // `swift package generate-documentation`: the DocC catalogs (Sources/*/*.docc). A
        // command plugin, built only when that command runs.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
        // Hummingbird's own lifecycle (SIGINT/SIGTERM), for Studio's event streams to end on it.
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
    ],
    targets: [
        .systemLibrary(
            name: "CLZ4",
            pkgConfig: "liblz4",
            providers: [.apt(["liblz4-dev"])]
        ),
        .systemLibrary(name: "CPrefetch"),
        .target(name: "StrataEngine", dependencies: ["CLZ4", "CPrefetch", .product(name: "Logging", package: "swift-log")]),
        .target(name: "Strata", dependencies: ["StrataEngine", .product(name: "Logging", package: "swift-log")]),
        .macro(name: "StrataMacrosPlugin", dependencies: [
            .product(name: "SwiftSyntaxMacros", package: "swift-syntax"),
            .product(name: "SwiftCompilerPlugin", package: "swift-syntax"),
        ]),
        .target(name: "StrataMacros", dependencies: ["Strata", "StrataMacrosPlugin"]),
        // The behaviour every Storage backend must have, for backends' own test targets.
        .target(name: "StrataConformance", dependencies: ["Strata"]),
        // Storage on any SQL database (tables, key columns, translation); no driver.
        .target(name: "StrataSQL", dependencies: ["Strata", "StrataEngine"]),
        .target(name: "StrataSQLite", dependencies: ["StrataSQL", "Strata", .product(name: "GRDB", package: "GRDB.swift")]),
        .target(name: "StrataPostgres", dependencies: [
            "StrataSQL", "Strata", .product(name: "PostgresNIO", package: "postgres-nio"),
            .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "Logging", package: "swift-log"),
        ]),
        // The four backends, for the test suites parameterized by backend.
        .target(name: "StrataTestBackends", dependencies: ["Strata", "StrataSQLite", "StrataPostgres"]),
        .target(name: "StrataDAO", dependencies: ["Strata"]),
        .target(name: "StrataRepository", dependencies: ["Strata"]),
        .target(name: "StrataRecord", dependencies: ["Strata"]),
        .target(name: "StrataExamples", dependencies: ["Strata", "StrataDAO"]),
        .executableTarget(name: "StrataDemo", dependencies: ["StrataEngine", "Strata", "StrataDAO", "StrataExamples", "StrataRepository", "StrataRecord", "StrataSQLite", "StrataPostgres"]),
        .target(name: "StrataStudio", dependencies: [
            "Strata", "StrataEngine", .product(name: "Hummingbird", package: "hummingbird"),
            .product(name: "NIOPosix", package: "swift-nio"), .product(name: "Logging", package: "swift-log"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
        ]),
        .executableTarget(name: "storedump", dependencies: [
            "Strata", "StrataEngine", "StrataStudio", .product(name: "ArgumentParser", package: "swift-argument-parser"),
        ]),
        // Child process driven by the crash and locking tests (kill -9, second writer).
        .executableTarget(name: "StrataCrashChild", dependencies: ["StrataEngine"]),
        .testTarget(name: "StrataEngineTests", dependencies: ["StrataEngine", "StrataCrashChild", .product(name: "Logging", package: "swift-log")]),
        // A separately built program with its own model types, for the catalog tests.
        .executableTarget(name: "StrataModelChild", dependencies: ["Strata"]),
        .testTarget(name: "StrataTests", dependencies: ["Strata", "StrataConformance", "StrataModelChild", "StrataTestBackends", "StrataSQLite", "StrataPostgres", .product(name: "GRDB", package: "GRDB.swift")], exclude: ["Fixtures"]),
        .testTarget(name: "StrataMacrosTests", dependencies: ["StrataMacros", "Strata", "StrataEngine"]),
        .testTarget(name: "StrataMacrosPluginTests", dependencies: [
            "StrataMacrosPlugin", .product(name: "SwiftSyntaxMacrosGenericTestSupport", package: "swift-syntax"),
        ]),
        // Writes the files Studio's browser test opens, and commits from another process.
        .executableTarget(name: "StrataStudioFixture", dependencies: ["Strata", "StrataStudio"]),
        .testTarget(name: "StrataStudioTests", dependencies: ["StrataStudio", "Strata", "StrataEngine", "StrataStudioFixture", "storedump", "StrataDemo"],
                    exclude: ["Browser"]),
        .testTarget(name: "StoredumpTests", dependencies: ["storedump", "StrataDemo", "Strata", "StrataEngine", "StrataTestBackends"]),
        .testTarget(name: "StrataDAOTests", dependencies: ["StrataDAO", "Strata", "StrataExamples", "StrataTestBackends"]),
        .testTarget(name: "StrataRepositoryTests", dependencies: ["StrataRepository", "Strata", "StrataEngine", "StrataTestBackends"]),
        .testTarget(name: "StrataRecordTests", dependencies: ["StrataRecord", "Strata", "StrataEngine", "StrataTestBackends"]),
    ],
    swiftLanguageModes: [.v6]
)
