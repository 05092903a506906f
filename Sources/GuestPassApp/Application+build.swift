import GuestPassObjectStore
import GuestPassPostgres
public import Hummingbird
import NIOConcurrencyHelpers
import HummingbirdWebSocket
public import Logging
import ServiceLifecycle
import GuestPassStore

/// Builds the HTTP application: the pool as a service (started first, stopped last) and the router. `history` is the
/// server's in-memory hour (`ServiceHistory`), kept when the operator console runs (which draws it): every answer
/// counted into it, its gauges sampled each bucket (`ServiceHistorySampler`, a service of the application).
public func buildApplication(
    configuration: AppConfiguration,
    logger: Logger,
    history: ServiceHistory = ServiceHistory(),
    onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
) throws -> some ApplicationProtocol {
    _ = try OpenAPIDocument.bundled.get()
    let pool = PostgresPool(configuration: configuration.postgres, logger: logger)
    let readPool = configuration.postgresRead.map { PostgresPool(configuration: $0, logger: logger) }
    let catalog = SchemaCache(
        pool: pool, schemas: configuration.exposedSchemas, extraSearchPath: configuration.extraSearchPath,
        timeToLive: configuration.catalogTimeToLive, retryInterval: configuration.catalogRetryInterval)
    let tokens = try configuration.tokens
    let realtime = RealtimeServices(pool: pool, tokens: tokens, schemas: configuration.exposedSchemas, limits: configuration.realtimeLimits)
    // One authenticator (and API-key cache) for the routes and the Realtime socket's upgrade.
    let authenticator = Authenticator(keys: APIKeyResolver(functions: ServerFunctions(pool: pool)), tokens: tokens)
    let storageBackend: (any ObjectBackend)? = try configuration.storage.makeBackend().map { MeteredBackend(base: $0) }
    let storage = storageBackend.map {
        StorageServices(
            pool: pool, backend: $0, signer: StorageSigner(refreshTokenKey: tokens.configuration.refreshTokenKey),
            uploadGraceSeconds: configuration.storage.uploadGraceSeconds, signedUploadSeconds: configuration.storage.signedUploadSeconds)
    }
    // The history is kept only for the console that draws it: without one, no request takes its lock and nothing samples.
    let consoleSetup = configuration.postgresConsole.flatMap { database in configuration.consoleListener.map { (database, $0) } }
    let apple = AppleVerifiers(logger: logger, timeout: configuration.appleTimeout)
    let router = buildRouter(
        pool: pool, readPool: readPool, tokens: tokens, authenticator: authenticator, catalog: catalog, storage: storage,
        history: consoleSetup == nil ? nil : history, deviceCheck: DeviceCheckClients(logger: logger), apple: apple,
        readiness: configuration.readiness, afterAppleUpdate: configuration.afterAppleUpdate, maxRows: configuration.maxRows
    )
    var services: [any Service] = [
        pool, SchemaReloadListener(configuration: configuration.postgres, cache: catalog, logger: logger),
        RealtimeChangeFeed(services: realtime, logger: logger),
    ]
    PasswordHasher.warmUp
    let publicURL = NIOLockedValueBox(configuration.publicURL ?? "http://\(configuration.host):\(configuration.port)")
    if configuration.mailSender {
        services.append(
            MailSender(
                outbox: MailOutbox(pool: pool), client: MailSender.sharedClient,
                codes: EmailCodeIssuer(refreshTokenKey: tokens.configuration.refreshTokenKey),
                passwords: SMTPPasswordSealer(refreshTokenKey: tokens.configuration.refreshTokenKey), publicURL: { publicURL.withLockedValue { $0 } },
                logger: logger
            ))
    }
    if let storageBackend {
        services.append(StorageSweeper(sweep: StorageSweep(pool: pool, backend: storageBackend), interval: .seconds(2), logger: logger))
    }
    var pools = [(name: "primary", pool: pool)]
    if let readPool {
        services.append(readPool)
        pools.append((name: "read", pool: readPool))
    }
    if let registry = configuration.metricsRegistry, let listener = configuration.metricsListener {
        services.append(
            ListenerService(
                buildMetricsServer(registry: registry, pools: pools, host: listener.host, port: listener.port, logger: logger), listener: listener))
    }
    if let consoleSetup {
        let (consoleConfiguration, listener) = consoleSetup
        let consolePool = PostgresPool(configuration: consoleConfiguration, logger: logger)
        let revoker = AppleTokenRevoker(functions: ServerFunctions(pool: pool), apple: apple, signer: tokens.configuration.signer)
        let server = try buildConsoleServer(
            pool: consolePool, history: history, appleRevoker: revoker, schemas: catalog.schemas, listener: listener,
            secureCookies: configuration.publicURL?.hasPrefix("https://") ?? false, logger: logger)
        services.append(ServiceHistorySampler(history: history, pool: pool, sockets: { realtime.hub.socketCount }))
        services.append(ListenerService(server, listener: listener))
    }
    // The Realtime socket's upgrade is decided by a router of its own; what it refuses falls through to `router`.
    let webSocketRouter = Router(context: AppRequestContext.self)
    RealtimeRoutes(services: realtime, authenticator: authenticator).registerUpgrade(on: webSocketRouter)
    return Application(
        router: router,
        server: .http1WithRealtime(
            webSocketRouter: webSocketRouter,
            configuration: .init(
                http1: .init(),
                ws: .init(maxFrameSize: configuration.realtimeLimits.maxFrameBytes, autoPing: .enabled(timePeriod: .seconds(30)), validateUTF8: true)
            )),
        configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "guestpass"),
        services: services,
        onServerRunning: { channel in
            let port = channel.localAddress?.port ?? configuration.port
            if configuration.publicURL == nil { publicURL.withLockedValue { $0 = "http://\(configuration.host):\(port)" } }
            await onServerRunning(port)
        },
        logger: logger
    )
}

/// Builds the router: every route of the service. `readPool` (a streaming replica) serves read-only RPC; nil sends
/// everything to `pool`. `history` counts every answer for the operator console's health page.
func buildRouter(
    pool: PostgresPool, readPool: PostgresPool? = nil, tokens: TokenService, authenticator: Authenticator, catalog: SchemaCache,
    storage: StorageServices? = nil, history: ServiceHistory? = nil, deviceCheck: DeviceCheckClients,
    apple: AppleVerifiers,
    readiness: ReadinessGate = ReadinessGate(), afterAppleUpdate: @escaping @Sendable () async throws -> Void, maxRows: Int = 1000
) -> Router<AppRequestContext> {
    let router = Router(context: AppRequestContext.self)
    router.add(middleware: RequestLogMiddleware(level: .info))
    router.add(middleware: RequestMetricsMiddleware(history: history))
    // Routes outside the groups (health, unknown paths); each group below declares its own dialect.
    router.add(middleware: ErrorMiddleware(dialect: .goTrue))
    let functions = ServerFunctions(pool: pool)
    HealthRoutes(functions: functions, readiness: readiness).register(on: router)
    OpenAPIRoutes().register(on: router)
    AuthRoutes(
        functions: functions, authenticator: authenticator, tokens: tokens, apple: apple, email: EmailServices(configuration: tokens.configuration)
    ).register(on: router)
    let reads = ReadRouting(primary: pool, replica: readPool, onReplicaFallback: { ServiceMetrics.readReplicaFallback() })
    RPCRoutes(pool: pool, reads: reads, authenticator: authenticator, catalog: catalog, maxRows: maxRows).register(on: router)
    TableRoutes(pool: pool, reads: reads, authenticator: authenticator, catalog: catalog, maxRows: maxRows).register(on: router)
    RealtimeRoutes.registerRefusals(authenticator: authenticator, on: router)
    if let storage {
        StorageRoutes(services: storage, authenticator: authenticator).register(on: router)
    } else {
        StorageRoutes.registerUnconfigured(on: router)
    }
    AccountRoutes(functions: functions, authenticator: authenticator, tokens: tokens, apple: apple, schemas: catalog.schemas).register(on: router)
    DeviceCheckGrantRoutes(
        functions: functions, authenticator: authenticator, clients: deviceCheck, lease: GrantLease(functions: functions),
        afterAppleUpdate: afterAppleUpdate
    ).register(on: router)
    // Last: it runs only for requests no route matched (405 with Allow for a known path, else the 404).
    if let methods = try? MethodNotAllowedMiddleware.bundled() { router.add(middleware: methods) }
    return router
}
