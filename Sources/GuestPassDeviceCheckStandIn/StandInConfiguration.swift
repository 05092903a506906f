public import GuestPassCrypto

/// Where the DeviceCheck stand-in listens and which DeviceCheck key it accepts.
public struct StandInConfiguration: Sendable {
    /// The address to bind (default `127.0.0.1`: the stand-in is for development and tests only).
    public var host: String
    /// The port to bind; 0 picks a free one (reported through `onServerRunning`).
    public var port: Int
    /// The team id the authorization JWT's `iss` must equal.
    public var teamID: String
    /// The key id the authorization JWT's `kid` must equal.
    public var keyID: String
    /// The public half of the DeviceCheck key the client signs with.
    public var publicKey: ES256PublicKey
    /// How long every Apple endpoint takes to answer (Apple's own round trips are about 100–200 ms), for benchmarks.
    public var latency: Duration = .zero

    /// Creates a configuration.
    public init(host: String = "127.0.0.1", port: Int = 0, teamID: String, keyID: String, publicKey: ES256PublicKey) {
        self.host = host
        self.port = port
        self.teamID = teamID
        self.keyID = keyID
        self.publicKey = publicKey
    }
}
