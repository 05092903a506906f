import ArgumentParser
import Foundation
import GuestPassCrypto
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
    @Option(help: "The apps' Apple team id (client secrets' iss), for /auth/token and /auth/revoke.") var teamId: String?
    @Option(help: "The Sign in with Apple key id (client secrets' kid).") var keyId: String?
    @Option(help: "The Sign in with Apple key: its .p8 private key or public PEM.") var keyFile: String?

    func run() async throws {
        let logger = bootstrapLogging(label: "guestpass.apple-standin")
        var clientKey: AppleStandInState.ClientKey?
        if let teamID = self.teamId, let keyID = self.keyId, let keyFile = self.keyFile {
            clientKey = AppleStandInState.ClientKey(teamID: teamID, keyID: keyID, publicKey: try standInPublicKey(file: keyFile))
        }
        let state = try AppleStandInState(clientKey: clientKey)
        let app = buildAppleStandIn(host: self.host, port: self.port, state: state, logger: logger)
        try await runStandIn(app, listener: .standIn(Self.configuration, host: self.host, port: self.port), logger: logger)
    }
}

/// The public key of a stand-in's `--key-file`: a .p8 private key (the one the server signs with) or a public PEM.
func standInPublicKey(file path: String) throws -> ES256PublicKey {
    let pem = try String(contentsOfFile: path, encoding: .utf8)
    return try (try? ES256PrivateKey(pemRepresentation: pem))?.publicKey ?? ES256PublicKey(pemRepresentation: pem)
}
