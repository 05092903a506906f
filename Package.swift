// swift-tools-version:6.1
import PackageDescription

let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

/// The products of the package dependencies that the targets use, by the module name they import.
extension Target.Dependency {
    static let logging: Self = .product(name: "Logging", package: "swift-log")
    static let nioPosix: Self = .product(name: "NIOPosix", package: "swift-nio")
    static let nioCore: Self = .product(name: "NIOCore", package: "swift-nio")
    static let nioHTTP1: Self = .product(name: "NIOHTTP1", package: "swift-nio")
    static let nioWebSocket: Self = .product(name: "NIOWebSocket", package: "swift-nio")
    static let nioConcurrencyHelpers: Self = .product(name: "NIOConcurrencyHelpers", package: "swift-nio")
    static let nioFoundationEssentialsCompat: Self = .product(name: "NIOFoundationEssentialsCompat", package: "swift-nio")
    static let serviceLifecycle: Self = .product(name: "ServiceLifecycle", package: "swift-service-lifecycle")
    static let unixSignals: Self = .product(name: "UnixSignals", package: "swift-service-lifecycle")
    static let asyncHTTPClient: Self = .product(name: "AsyncHTTPClient", package: "async-http-client")
    static let metrics: Self = .product(name: "Metrics", package: "swift-metrics")
    static let prometheus: Self = .product(name: "Prometheus", package: "swift-prometheus")
    static let hummingbird: Self = .product(name: "Hummingbird", package: "hummingbird")
    static let hummingbirdCore: Self = .product(name: "HummingbirdCore", package: "hummingbird")
    static let hummingbirdTesting: Self = .product(name: "HummingbirdTesting", package: "hummingbird")
    static let hummingbirdWebSocket: Self = .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket")
    static let argumentParser: Self = .product(name: "ArgumentParser", package: "swift-argument-parser")
    static let httpTypes: Self = .product(name: "HTTPTypes", package: "swift-http-types")
    static let mustache: Self = .product(name: "Mustache", package: "swift-mustache")
}

let package = Package(
    name: "GuestPass",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "guestpass", targets: ["GuestPassCLI"])
    ],
    dependencies: [
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket.git", from: "2.8.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.80.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.6.0"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.0.0"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.20.0"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.5.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.0.0"),
        .package(url: "https://github.com/hummingbird-project/swift-mustache.git", from: "2.0.0"),
    ],
    targets: [
        // MARK: C libraries (system packages; see README for the apt names)
        .systemLibrary(name: "CLibPQ", pkgConfig: "libpq", providers: [.apt(["libpq-dev"]), .brew(["libpq"])]),
        .systemLibrary(name: "COpenSSL", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"]), .brew(["openssl@3"])]),
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"]), .brew(["curl"])]),

        // MARK: Modules
        /// The libpq data layer: connections, pipelined request transactions, the pool. Sole importer of CLibPQ.
        .target(
            name: "GuestPassPostgres",
            dependencies: [
                "CLibPQ",
                .logging, .nioConcurrencyHelpers, .nioPosix, .serviceLifecycle,
            ]
        ),
        /// JWT signing/verification and key handling over OpenSSL's libcrypto. Sole importer of COpenSSL.
        .target(name: "GuestPassCrypto", dependencies: ["COpenSSL"]),
        /// Strict JSON text in (`JSONParser`: one pass, bounded, no NUL), values with exact numbers out (`JSONValue`,
        /// `JSONNumber`): request bodies, RPC arguments and stored documents; no HTTP, no SQL.
        .target(name: "GuestPassJSON", dependencies: ["GuestPassCrypto"]),
        /// PostgREST's URL grammar (select, filters, logic trees, order, ranges) and `Prefer` header: text in, a typed
        /// request out; no SQL, no dependencies.
        .target(name: "PostgRESTGrammar"),
        /// Supabase Realtime's wire protocol (Phoenix framings `vsn` 1.0.0 objects and 2.0.0 arrays, binary broadcast pushes
        /// (kind 3), join configs, binding ids, `postgres_changes` filters, the server's payloads): text and bytes in,
        /// typed messages out and back; no networking, no SQL.
        .target(name: "RealtimeProtocol", dependencies: ["GuestPassCrypto", "GuestPassJSON"]),
        /// Every piece of SQL text the service sends, and the typed calls around it: the server-side functions
        /// (`ServerFunctions`), the operator's `Administration`, API keys, the RPC and table statement builders, the schema
        /// cache and its reload listener, the read-replica routing. Plain values in, rows or typed outcomes out; throws
        /// `PostgresError` and `PostgRESTRefusal`, never an HTTP error; no Hummingbird.
        .target(
            name: "GuestPassStore",
            dependencies: [
                "GuestPassPostgres", "GuestPassCrypto", "GuestPassJSON", "PostgRESTGrammar", "RealtimeProtocol",
                .logging, .nioConcurrencyHelpers, .nioPosix, .serviceLifecycle,
            ]
        ),
        /// The core SQL migrations, embedded as resources: the versioned `.sql` files of `sql/migrations` and the
        /// repeatable ones of `sql/migrations/repeatable` (the folder is copied whole).
        .target(
            name: "CoreMigrations",
            path: "sql",
            exclude: ["examples", "tests", "schema.sql"],
            sources: ["CoreMigrations.swift"],
            resources: [.copy("migrations")]
        ),
        /// The migration runner behind `guestpass migrate`.
        .target(
            name: "GuestPassMigrations",
            dependencies: [
                "GuestPassPostgres", "GuestPassCrypto", "CoreMigrations",
                .logging,
            ]
        ),
        /// Apple DeviceCheck: the client for Apple's two-bits API (and its authorization JWT).
        .target(
            name: "GuestPassDeviceCheck",
            dependencies: [
                "GuestPassCrypto",
                .asyncHTTPClient, .logging, .nioCore, .nioHTTP1,
            ]
        ),
        /// A local stand-in for Apple's DeviceCheck servers (real HTTP, Apple's protocol), for development and tests.
        .target(
            name: "GuestPassDeviceCheckStandIn",
            dependencies: [
                "GuestPassCrypto",
                .hummingbird, .logging,
            ]
        ),
        /// Sign in with Apple: Apple's keys (fetched with async-http-client, cached) and identity-token verification.
        .target(
            name: "GuestPassApple",
            dependencies: [
                "GuestPassCrypto",
                .metrics, .asyncHTTPClient, .logging, .nioConcurrencyHelpers, .nioCore, .nioHTTP1,
            ]
        ),
        /// A local stand-in for Apple's Sign in with Apple endpoints (real HTTP: keys, identity tokens), for tests.
        .target(
            name: "GuestPassAppleStandIn",
            dependencies: [
                "GuestPassCrypto",
                .hummingbird, .logging, .nioConcurrencyHelpers, .nioFoundationEssentialsCompat,
            ]
        ),
        /// Mail out: an SMTP client over libcurl (STARTTLS or implicit TLS, AUTH, a private CA), RFC 5322 messages
        /// (text and HTML), and the mail templates (swift-mustache). No SQL, no HTTP. Sole importer of CCurl.
        .target(name: "GuestPassMail", dependencies: ["CCurl", .logging, .mustache, .nioPosix, .nioCore]),
        /// Supabase Storage's wire formats: object keys and bucket names, the streaming multipart/form-data reader of an
        /// upload, `Range` headers, the error triple (`statusCode` as a string). Bytes and text in, typed values out;
        /// no networking, no SQL.
        .target(name: "StorageProtocol", dependencies: [.nioCore]),
        /// Where objects' bytes live, behind one protocol (`ObjectBackend`): the local file system (fsync before an
        /// acknowledgement) and S3-compatible stores (path-style, SigV4, multipart upload). No SQL, no HTTP server.
        .target(
            name: "GuestPassObjectStore",
            dependencies: ["GuestPassCrypto", .asyncHTTPClient, .logging, .nioCore, .nioPosix, .nioHTTP1]
        ),
        /// The HTTP service: `buildApplication` / `buildRouter` and the routes; `HTTP/openapi.json` (served at `/openapi.json`),
        /// the operator console's templates and stylesheet as resources.
        .target(
            name: "GuestPassApp",
            dependencies: [
                "GuestPassPostgres", "GuestPassCrypto", "GuestPassJSON", "GuestPassStore", "GuestPassDeviceCheck", "GuestPassApple",
                "GuestPassMail", "PostgRESTGrammar", "RealtimeProtocol", "StorageProtocol", "GuestPassObjectStore",
                .hummingbird, .hummingbirdWebSocket, .nioWebSocket, .nioHTTP1, .hummingbirdCore, .metrics, .prometheus, .nioCore,
                .nioConcurrencyHelpers, .httpTypes, .logging, .serviceLifecycle, .nioFoundationEssentialsCompat, .nioPosix, .mustache,
            ],
            resources: [.copy("HTTP/openapi.json"), .copy("Console/Templates"), .copy("Console/Assets/console.css")]
        ),
        /// The one stack set-up (database, migrations, apps, signing key) behind `guestpass dev up` and the test harness.
        .target(
            name: "GuestPassDevStack",
            dependencies: [
                "GuestPassStore", "GuestPassMigrations", "GuestPassPostgres", "GuestPassCrypto",
                .logging,
            ]
        ),
        /// Stamps the target it is applied to with the git commit being built (`let buildCommit: String?`): a build command
        /// with git's HEAD files as inputs (Plugins/BuildCommit/BuildCommit.swift says why this way).
        .plugin(name: "BuildCommit", capability: .buildTool(), exclude: ["build-commit.sh"]),
        /// The `guestpass` command line: serve, migrate, keys, apps, dev; `--version` with the commit (`BuildCommit`).
        .executableTarget(
            name: "GuestPassCLI",
            dependencies: [
                "GuestPassApp", "GuestPassStore", "GuestPassMigrations", "GuestPassPostgres", "GuestPassCrypto", "GuestPassDeviceCheckStandIn",
                "GuestPassAppleStandIn", "GuestPassDevStack", "GuestPassMail", "GuestPassObjectStore",
                .argumentParser, .hummingbird, .metrics, .prometheus, .logging, .nioCore, .nioPosix, .serviceLifecycle, .unixSignals,
            ],
            plugins: ["BuildCommit"]
        ),
        /// Throwaway databases and clusters for the tests (never linked into the binary).
        .target(name: "GuestPassTestSupport", dependencies: ["GuestPassPostgres", "GuestPassDevStack", .logging]),

        // MARK: Tests (one target per module)
        .testTarget(name: "StorageProtocolTests", dependencies: ["StorageProtocol"]),
        .testTarget(
            name: "GuestPassObjectStoreTests",
            dependencies: ["GuestPassObjectStore", "GuestPassCrypto", "GuestPassTestSupport", .nioCore],
            resources: [.copy("Vectors")]
        ),
        .testTarget(name: "GuestPassMailTests", dependencies: ["GuestPassMail", "GuestPassTestSupport"]),
        .testTarget(name: "GuestPassPostgresTests", dependencies: ["GuestPassPostgres", "GuestPassTestSupport", .nioConcurrencyHelpers, .nioPosix]),
        .testTarget(name: "GuestPassMigrationsTests", dependencies: ["GuestPassMigrations", "GuestPassPostgres", "GuestPassTestSupport"]),
        .testTarget(name: "PostgRESTGrammarTests", dependencies: ["PostgRESTGrammar", "GuestPassTestSupport"]),
        .testTarget(name: "RealtimeProtocolTests", dependencies: ["RealtimeProtocol", "GuestPassJSON", "GuestPassTestSupport"]),
        .testTarget(
            name: "GuestPassCryptoTests",
            dependencies: ["GuestPassCrypto"],
            exclude: ["crosscheck.py"],
            resources: [.copy("Vectors")]
        ),
        .testTarget(
            name: "GuestPassDeviceCheckTests",
            dependencies: [
                "GuestPassDeviceCheck", "GuestPassDeviceCheckStandIn", "GuestPassCrypto",
                .hummingbirdTesting, .logging, .httpTypes, .nioCore,
            ]
        ),
        .testTarget(
            name: "GuestPassAppleTests",
            dependencies: [
                "GuestPassApple", "GuestPassAppleStandIn", "GuestPassCrypto",
                .hummingbirdTesting, .logging,
            ]
        ),
        .testTarget(
            name: "GuestPassAppTests",
            dependencies: [
                "GuestPassApp", "GuestPassPostgres", "GuestPassTestSupport", "GuestPassDeviceCheckStandIn", "GuestPassCrypto",
                "GuestPassJSON", "GuestPassStore", "GuestPassDevStack", "GuestPassMigrations", "CoreMigrations", "RealtimeProtocol",
                .hummingbirdTesting, .httpTypes, .nioFoundationEssentialsCompat, .nioPosix,
            ]
        ),
    ]
)

// Every Swift target builds with the same settings (system library and plugin targets take none).
for target in package.targets where target.type != .system && target.type != .plugin {
    target.swiftSettings = swiftSettings
}
