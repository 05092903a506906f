import GuestPassPostgres
import Hummingbird
import Logging

/// The request context every route uses.
public typealias AppRequestContext = BasicRequestContext

/// Builds the HTTP application: the pool as a service (started first, stopped last) and the router.
public func buildApplication(
    configuration: AppConfiguration,
    logger: Logger,
    onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
) -> some ApplicationProtocol {
    let pool = PostgresPool(configuration: configuration.postgres, logger: logger)
    let router = buildRouter(pool: pool)
    return Application(
        router: router,
        configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "guestpass"),
        services: [pool],
        onServerRunning: { channel in await onServerRunning(channel.localAddress?.port ?? configuration.port) },
        logger: logger
    )
}

/// Builds the router: every route of the service.
public func buildRouter(pool: PostgresPool) -> Router<AppRequestContext> {
    let router = Router(context: AppRequestContext.self)
    router.add(middleware: LogRequestsMiddleware(.debug))
    HealthRoutes(pool: pool).register(on: router)
    return router
}
