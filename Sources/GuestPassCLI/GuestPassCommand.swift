public import ArgumentParser
public import Foundation
import Logging
import NIOCore
import NIOPosix

/// The `guestpass` command line.
@main
struct GuestPassCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "guestpass",
        abstract: "Guest identity, quotas and row-level security for mobile apps, over PostgreSQL.",
        version: versionLine,
        subcommands: [
            ServeCommand.self, MigrateCommand.self, AppsCommand.self, KeysCommand.self, DevCommand.self, DeviceCheckStandInCommand.self,
            AppleStandInCommand.self, PruneCommand.self, OperatorsCommand.self,
        ],
        defaultSubcommand: ServeCommand.self
    )

    /// Runs Swift concurrency's jobs on the server's own event loops (NIO's singleton group, which Hummingbird serves
    /// on) rather than on a pool of threads beside them: a request's task then runs on the thread that read it, and
    /// answers without a hop between the event loop and another thread (`bench/cpu.sh`: fewer context switches per
    /// request). Installed first thing, before any other job is enqueued. Blocking work stays off the loops as before:
    /// libpq on the pool's threads, password hashing and file I/O on thread pools of their own.
    static func main() async {
        NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor()
        await Self.main(nil)
    }
}

/// Options every database-facing subcommand shares.
struct DatabaseOptions: ParsableArguments {
    @Option(name: .customLong("database-url"), help: "libpq URL or conninfo (default: $DATABASE_URL).")
    var databaseURL: String?

    /// The URL from the option or the environment.
    func resolvedURL() throws -> String {
        if let databaseURL, !databaseURL.isEmpty { return databaseURL }
        if let url = ProcessInfo.processInfo.environment["DATABASE_URL"], !url.isEmpty { return url }
        throw ValidationError("no database: pass --database-url or set DATABASE_URL")
    }
}

/// Sets up logging once per process at `level` (`serve` passes its validated `AppConfiguration.logLevel`; the other
/// commands read `LOG_LEVEL` leniently), output to standard error.
func bootstrapLogging(label: String, level: Logger.Level? = nil) -> Logger {
    let level = level ?? ProcessInfo.processInfo.environment["LOG_LEVEL"].flatMap { Logger.Level(rawValue: $0.lowercased()) } ?? .info
    let json = ProcessInfo.processInfo.environment["LOG_FORMAT"]?.lowercased() == "json"
    LoggingSystem.bootstrap { label in
        if json {
            var handler = JSONLogHandler(label: label)
            handler.logLevel = level
            return handler
        }
        var handler = StreamLogHandler.standardError(label: label)
        handler.logLevel = level
        return handler
    }
    var logger = Logger(label: label)
    logger.logLevel = level
    return logger
}

extension UUID: @retroactive ExpressibleByArgument {
    public init?(argument: String) { self.init(uuidString: argument) }
}
