// swift-tools-version: 6.0
// libFuzzer targets for locationd (issue 15). A package of its own so that the normal `swift build` and
// `swift test` never see them: each target defines `LLVMFuzzerTestOneInput` and no `main`, which only links
// with `-sanitize=fuzzer`. Build and run them with `../Scripts/fuzz [SECONDS]`; docs/FUZZING.md says how.
import PackageDescription

let package = Package(
    name: "locationd-fuzz",
    dependencies: [.package(name: "locationd", path: "..")],
    targets: [
        // Chunking shared by the targets, drawing from the tests' seeded generator (TestSupport's SplitMix64).
        .target(name: "FuzzSupport", dependencies: ["FuzzMain", .product(name: "TestSupport", package: "locationd")]),
        // The `<Target>_main` symbols SwiftPM's link asks for, each running libFuzzer's driver.
        .target(name: "FuzzMain"),
        // NMEA 0183 bytes → framer → parser → fix assembler, in random chunks; the fixes encoded as clients get them.
        .executableTarget(name: "FuzzNMEA", dependencies: [
            "FuzzSupport",
            .product(name: "NMEA", package: "locationd"),
            .product(name: "LocationCore", package: "locationd"),
            .product(name: "LocationWire", package: "locationd"),
        ]),
        // The native protocol: line framing, request parsing and re-encoding, the client's decoding of server lines,
        // and the server's request handling (Publisher) without sockets.
        .executableTarget(name: "FuzzWire", dependencies: [
            "FuzzSupport",
            .product(name: "LocationWire", package: "locationd"),
            .product(name: "LocationCore", package: "locationd"),
        ]),
        // The server's request handling (ServerState, Publisher, agents, admin) for four clients on socketpairs.
        // Reaches internals with @testable: Scripts/fuzz builds with -enable-testing.
        .executableTarget(name: "FuzzServer", dependencies: [
            "FuzzSupport",
            .product(name: "LocationServer", package: "locationd"),
            .product(name: "LocationPolicy", package: "locationd"),
            .product(name: "LocationWire", package: "locationd"),
            .product(name: "LocationCore", package: "locationd"),
        ]),
        // The gpsd protocol front: a gpsd client's reads through GpsdConversation.
        .executableTarget(name: "FuzzGpsd", dependencies: [
            "FuzzSupport",
            .product(name: "LocationWire", package: "locationd"),
            .product(name: "LocationCore", package: "locationd"),
        ]),
        // The config file: inih through ConfigFile, then DaemonConfiguration's validation.
        .executableTarget(name: "FuzzConfig", dependencies: [
            "FuzzMain",
            .product(name: "LocationServer", package: "locationd"),
        ]),
    ]
)
