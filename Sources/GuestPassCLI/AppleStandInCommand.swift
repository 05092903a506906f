import ArgumentParser
import GuestPassAppleStandIn
import Hummingbird

/// `guestpass apple-standin`: a local stand-in for Sign in with Apple's endpoints (development and tests).
struct AppleStandInCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "apple-standin",
        abstract: "Serve Sign in with Apple's keys locally and mint identity tokens under /_standin/. Never expose it."
    )

    @Option(help: "Listen address (keep it on loopback).") var host = "127.0.0.1"
    @Option(help: "Listen port.") var port = 8091

    func run() async throws {
        let logger = bootstrapLogging(label: "guestpass.apple-standin")
        let app = buildAppleStandIn(host: self.host, port: self.port, state: try AppleStandInState(), logger: logger)
        try await app.runService()
    }
}
