public import GuestPassPostgres
public import Logging
import NIOPosix
public import ServiceLifecycle

/// Loads the schema cache at start (once its `LISTEN` holds, unless a request has loaded it first) and reloads it on
/// SIGHUP (`kill -HUP <pid>`), on `NOTIFY pgrst, 'reload schema'` (or an empty payload), PostgREST's channel, so the
/// tooling that already sends it works (`guestpass migrate up` sends it after applying files), and after the listening
/// connection is re-established (NOTIFYs sent while it was lost are gone). A service, so both loops end with the
/// server's graceful shutdown. One dedicated connection per process listens (its own thread: libpq blocks),
/// reconnecting after a second when it is lost. After each load it warns about any table of an exposed schema that an
/// API role can write while row-level security is off on it.
///
/// Limits: behind PgBouncer in transaction pooling `LISTEN` cannot work (the next transaction may run in another
/// server session), so the listener does not start in that mode; the cache's time-to-live and SIGHUP still reload it.
public struct SchemaReloadListener: Service, CustomStringConvertible {
    /// What swift-service-lifecycle logs of it: the name, never the database URL (which may hold a password).
    public var description: String { "SchemaReloadListener" }

    static let channel = "pgrst"
    let configuration: PostgresConfiguration
    let cache: SchemaCache
    let logger: Logger

    /// The listener of `cache`, connecting with `configuration` (the primary's).
    public init(configuration: PostgresConfiguration, cache: SchemaCache, logger: Logger) {
        self.configuration = configuration
        self.cache = cache
        self.logger = logger
    }

    /// Loads the cache, then reloads it on each SIGHUP and `NOTIFY pgrst` until the graceful shutdown; never throws (a
    /// failed load is logged and requests load on demand).
    public func run() async throws {
        // Subscribed before any load: a SIGHUP during one is kept (the stream buffers one) and reloads after it.
        let hangups = HangupSignal.shared.signals()
        await withDiscardingTaskGroup { group in
            group.addTask {
                await cancelWhenGracefulShutdown {
                    for await _ in hangups { await self.load(reason: "SIGHUP") }
                }
            }
            group.addTask { await self.listen() }
        }
    }

    /// `LISTEN pgrst` on a connection of its own until the graceful shutdown.
    private func listen() async {
        guard self.configuration.poolMode == .session else {
            self.logger.info("schema reload listener off: NOTIFY does not reach through transaction pooling")
            await self.load(reason: "start", unlessLoaded: true)
            // A service that returns early ends the whole service group: wait for the shutdown instead.
            try? await gracefulShutdown()
            return
        }
        let threads = NIOThreadPool(numberOfThreads: 1)
        threads.start()
        defer { threads.shutdownGracefully { _ in } }
        let configuration = self.configuration
        await cancelWhenGracefulShutdown {
            var listenedBefore = false
            while !Task.isCancelled {
                do {
                    let connection = try await threads.runIfActive {
                        let connection = try PostgresConnection(configuration: configuration)
                        try connection.execute("LISTEN \(Self.channel)")
                        return connection
                    }
                    // Loaded once LISTEN holds, so no change escapes both: one committed before it is in this load, and
                    // one after it sends a NOTIFY that arrives. The first time, a cache a request has loaded meanwhile is
                    // kept; after a reconnect it is reloaded, since the NOTIFYs sent while the connection was lost are gone.
                    await self.load(reason: listenedBefore ? "listener reconnected" : "start", unlessLoaded: !listenedBefore)
                    listenedBefore = true
                    while !Task.isCancelled {
                        let received = try await threads.runIfActive { try connection.notifications(waitingUpTo: .milliseconds(500)) }
                        guard received.contains(where: { $0.payload.isEmpty || $0.payload == "reload schema" }) else { continue }
                        await self.load(reason: "NOTIFY \(Self.channel)")
                    }
                } catch {
                    if Task.isCancelled { return }
                    self.logger.warning("schema reload listener: \(error); reconnecting")
                    try? await Task.sleep(for: .seconds(1))
                }
            }
        }
    }

    private func load(reason: String, unlessLoaded: Bool = false) async {
        do {
            if unlessLoaded { try await self.cache.loadIfNeverLoaded() } else { try await self.cache.reload() }
            self.logger.info("schema cache loaded", metadata: ["reason": "\(reason)"])
            for table in self.cache.writableWithoutRowSecurity {
                self.logger.warning(
                    "an API role can write this table while row-level security is off: every caller with the privilege reaches every row",
                    metadata: ["table": "\(table)"])
            }
        } catch {
            self.logger.warning("schema cache load failed; requests load it on demand", metadata: ["error": "\(error)"])
        }
    }
}
