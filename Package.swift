// swift-tools-version: 6.0
// locationd — a Linux location daemon: GNSS receivers in, per-client authorized location out.
// Module layout and the allowed dependency directions: ../shared/docs/ARCHITECTURE.md.
import PackageDescription

let package = Package(
    name: "locationd",
    products: [
        .library(name: "NMEA", targets: ["NMEA"]),
        .library(name: "LocationCore", targets: ["LocationCore"]),
        .library(name: "LocationWire", targets: ["LocationWire"]),
        .library(name: "LocationClient", targets: ["LocationClient"]),
        // For the fuzz targets (Fuzz/Package.swift), which parse configs through the daemon's own code.
        .library(name: "LocationServer", targets: ["LocationServer"]),
        // For the fuzz package (Fuzz/): its chunking draws from the same seeded generator the tests use.
        .library(name: "TestSupport", targets: ["TestSupport"]),
        .library(name: "LocationPolicy", targets: ["LocationPolicy"]),
        .executable(name: "locationctl", targets: ["locationctl"]),
    ],
    targets: [
        // The domain model: Fix, time, units. Standard library only.
        .target(name: "LocationCore"),
        // NMEA 0183 framing, sentences, fix assembly, geoid model. Standard library only.
        .target(name: "NMEA", dependencies: ["LocationCore"], exclude: ["COPYING-gpsd"]),
        // Wire encoding of fixes (gpsd-style JSON lines). Standard library only.
        .target(name: "LocationWire", dependencies: ["LocationCore"]),
        // C shims for calls Swift cannot import (variadic ioctl, struct ucred).
        .target(name: "CPosixShims"),
        // libgps (Debian: libgps28; gps.h from libgps-dev), gpsd's client library, loaded with dlopen when a gpsd
        // receiver is configured (Sources/CLibgps/loader.c).
        .target(name: "CLibgps"),
        // Typed wrappers over POSIX: errno, file descriptors, termios serial ports, pseudo-terminals.
        .target(name: "LocationPosix", dependencies: ["CPosixShims"]),
        // Receivers: serial NMEA, gpsd through libgps, capture replay; failover between them.
        .target(name: "LocationSources", dependencies: ["NMEA", "LocationCore", "LocationPosix", "CPosixShims", "CLibgps"]),
        // The permission policy: identity, rules, grants, decisions, reduced accuracy. Pure logic, no I/O.
        .target(name: "LocationPolicy", dependencies: ["LocationCore", "LocationWire"]),
        // inih, Debian's libinih-dev: the config file parser.
        .systemLibrary(name: "CInih", providers: [.apt(["libinih-dev"])]),
        // libsystemd's sd-login (Debian: libsystemd0; sd-login.h from libsystemd-dev): users' login sessions, for
        // When In Use. Loaded with dlopen once the policy depends on them (loader.c), not linked.
        .target(name: "CSystemdLogin"),
        // The daemon: config, socket server, publisher.
        .target(name: "LocationServer", dependencies: ["LocationSources", "LocationWire", "LocationPosix", "LocationCore", "LocationPolicy", "CInih", "CPosixShims", "CSystemdLogin"]),
        // libmosquitto (Debian: libmosquitto1; mosquitto.h from libmosquitto-dev), the MQTT client library of the
        // fleet uplink, loaded with dlopen when an uplink starts (loader.c), not linked: without an uplink the
        // daemon maps neither it nor OpenSSL.
        .target(name: "CMosquitto"),
        // Publishing to an MQTT broker for fleets (OwnTracks or TPV), with a store-and-forward spool.
        .target(name: "LocationUplink", dependencies: ["LocationCore", "LocationPolicy", "LocationPosix", "LocationWire", "CMosquitto"]),
        .executableTarget(name: "locationd", dependencies: ["LocationPosix", "CPosixShims", "LocationServer", "LocationUplink", "LocationWire"]),
        // The Swift client library for programs that consume location (docs/PROTOCOL.md).
        .target(name: "LocationClient", dependencies: ["LocationWire", "LocationPosix", "LocationCore"]),
        .executableTarget(name: "locationctl", dependencies: ["NMEA", "LocationWire", "LocationCore", "LocationClient"]),
        .testTarget(name: "NMEATests", dependencies: ["NMEA", "LocationCore", "LocationWire", "TestSupport"], exclude: ["GpsdGoldens"]),
        .testTarget(name: "LocationClientTests", dependencies: ["LocationClient", "LocationPosix", "LocationWire", "LocationCore", "TestSupport"]),
        .testTarget(name: "LocationWireTests", dependencies: ["LocationWire", "LocationCore"]),
        .target(name: "TestSupport", dependencies: ["LocationPosix"], path: "Tests/TestSupport"),
        .testTarget(name: "LocationServerTests", dependencies: ["LocationServer", "LocationSources", "LocationWire", "LocationPosix", "LocationCore", "NMEA", "LocationPolicy", "TestSupport"]),
        .testTarget(name: "LocationPolicyTests", dependencies: ["LocationPolicy", "LocationCore", "LocationWire", "TestSupport"]),
        .testTarget(name: "LocationSourcesTests", dependencies: ["LocationSources", "LocationPosix", "NMEA", "LocationCore", "TestSupport"]),
        // The MQTT uplink against a real mosquitto broker, with mosquitto_sub as the consumer.
        .testTarget(name: "LocationUplinkTests", dependencies: ["LocationUplink", "LocationCore", "LocationWire", "LocationPosix", "TestSupport"]),
        // The systemd units, socket activation, readiness/watchdog, reload and install, on the real binary.
        .testTarget(name: "SystemdTests", dependencies: ["LocationPosix", "TestSupport"]),
    ]
)
