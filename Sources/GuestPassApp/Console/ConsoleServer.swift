import Foundation
import GuestPassPostgres
import GuestPassStore
import Hummingbird
import Logging
import NIOCore

/// The operator console: its own Hummingbird application on its own listener (`GUESTPASS_CONSOLE_ADDRESS`, loopback
/// by default, as `/metrics`), never routed from the API's port. Its SQL runs on a pool of its own, logged in as
/// `guestpass_console`, a role that may only execute the functions of schema `guestpass_console`: every one of them
/// resolves the operator from the session and refuses apps that are not theirs, so the console cannot read or change
/// anything the operator may not, whatever its Swift does.
func buildConsoleServer(
    pool: PostgresPool, history: ServiceHistory, appleRevoker: AppleTokenRevoker, schemas: [String], listener: Listener, secureCookies: Bool,
    logger: Logger
) throws -> some ApplicationProtocol {
    let console = ConsoleServices(
        store: ConsoleStore(pool: pool), pages: try ConsolePages.bundled(), cookies: ConsoleCookies(secure: secureCookies),
        hasher: PasswordHasher.shared, history: history, appleRevoker: appleRevoker, schemas: schemas, logger: logger)
    let router = Router(context: ConsoleRequestContext.self)
    router.add(middleware: ConsoleHeadersMiddleware())
    router.get("/console.css") { _, _ in
        Response(status: .ok, headers: [.contentType: "text/css; charset=utf-8"], body: .init(byteBuffer: console.pages.stylesheet))
    }
    ConsoleSignInRoutes(console: console).register(on: router)
    ConsoleAppRoutes(console: console).register(on: router)
    ConsoleUserRoutes(console: console).register(on: router)
    ConsoleAuditRoutes(console: console).register(on: router)
    ConsoleHealthRoutes(console: console).register(on: router)
    return Application(
        router: router, configuration: .init(address: .hostname(listener.host, port: listener.port), serverName: "guestpass-console"),
        services: [pool], logger: logger)
}
