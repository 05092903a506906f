// swift-tools-version:6.0
// The stack's own floor (bench/stack_floor.sh): the cheapest server each layer under GuestPass can be, answering the
// floor route's request (`GET /health/live`, a 15-byte JSON body), so bench/cpu.sh's floor can be read beside them.
// A bench tool only: not part of the product's package, built with the same versions of the same packages.
import PackageDescription

let package = Package(
    name: "stack-floor",
    platforms: [.macOS(.v14)],
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio", from: "2.80.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", "2.28.0"..<"2.29.0"),
    ],
    targets: [
        .executableTarget(
            name: "NIOFloor",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]),
        .executableTarget(
            name: "HummingbirdFloor",
            dependencies: [
                .product(name: "Hummingbird", package: "hummingbird"), .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]),
    ]
)
