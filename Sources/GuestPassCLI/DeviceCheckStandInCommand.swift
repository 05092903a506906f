import ArgumentParser
import Foundation
import GuestPassCrypto
import GuestPassDeviceCheckStandIn
import Hummingbird

/// `guestpass devicecheck-standin`: a local stand-in for Apple's DeviceCheck servers (development and tests).
struct DeviceCheckStandInCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "devicecheck-standin",
        abstract: "Serve Apple's DeviceCheck protocol locally (two bits per device; failure injection under /_standin/). Never expose it."
    )

    @Option(help: "Listen address (keep it on loopback).") var host = "127.0.0.1"
    @Option(help: "Listen port.") var port = 8090
    @Option(help: "The Apple team id the JWTs must carry (iss).") var teamId: String
    @Option(help: "The key id the JWTs must carry (kid).") var keyId: String
    @Option(help: "The DeviceCheck key: its .p8 private key or public PEM.") var keyFile: String
    @Option(help: "Milliseconds every Apple endpoint takes to answer (Apple-like latency for benchmarks).") var latencyMs = 0

    func run() async throws {
        let publicKey = try standInPublicKey(file: self.keyFile)
        let logger = bootstrapLogging(label: "guestpass.devicecheck-standin")
        var configuration = StandInConfiguration(host: self.host, port: self.port, teamID: self.teamId, keyID: self.keyId, publicKey: publicKey)
        configuration.latency = .milliseconds(max(0, self.latencyMs))
        let app = buildDeviceCheckStandIn(configuration: configuration, logger: logger)
        try await runStandIn(app, listener: .standIn(Self.configuration, host: self.host, port: self.port), logger: logger)
    }
}
