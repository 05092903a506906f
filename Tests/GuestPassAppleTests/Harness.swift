import Foundation
import GuestPassApple
import GuestPassAppleStandIn
import Hummingbird
import HummingbirdTesting
import Logging
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A running Apple stand-in (real HTTP on a free port) and production `AppleKeyStore`s pointed at it.
struct AppleHarness: Sendable {
    static let audience = "com.example.tests"

    let state: AppleStandInState
    let port: Int

    var baseURL: String { "http://127.0.0.1:\(self.port)" }

    /// A key store on the stand-in; `refreshInterval` zero lets every lookup that needs a fetch make one.
    func store(refreshInterval: Duration = .seconds(60), maxAge: Duration = .seconds(3600)) -> AppleKeyStore {
        AppleKeyStore(baseURL: self.baseURL, refreshInterval: refreshInterval, maxAge: maxAge, logger: quietLogger)
    }

    func verifier(_ store: AppleKeyStore) -> AppleIdentityVerifier { AppleIdentityVerifier(keys: store) }

    func token(_ sub: String = "apple-user", nonce: String? = nil, expiresIn: Int = 600, kid: String? = nil, foreignKey: Bool = false)
        throws -> String
    {
        try self.state.identityToken(sub: sub, aud: Self.audience, nonce: nonce, expiresIn: expiresIn, kid: kid, foreignKey: foreignKey)
    }
}

let quietLogger: Logger = {
    var logger = Logger(label: "apple-test")
    logger.logLevel = .critical
    return logger
}()

/// Starts a stand-in on a free port for the duration of `body`.
func withAppleStandIn<R: Sendable>(_ body: @Sendable (AppleHarness) async throws -> R) async throws -> R {
    let state = try AppleStandInState()
    let app = buildAppleStandIn(host: "127.0.0.1", port: 0, state: state, logger: quietLogger)
    return try await app.test(.live) { http in
        let port = try #require(http.port)
        return try await body(AppleHarness(state: state, port: port))
    }
}

/// The `AppleSignInError` reason `operation` throws, or nil.
func refusal(_ operation: () async throws -> Void) async -> AppleSignInError.Reason? {
    do {
        try await operation()
        return nil
    } catch let error as AppleSignInError {
        return error.reason
    } catch {
        Issue.record("unexpected error \(error)")
        return nil
    }
}

/// A loopback TCP socket bound to a free port, held until deinit so no other process can take the port. `listening`:
/// it accepts connections into the backlog and never reads or answers (a host that swallows requests); else it only
/// stays bound, and a bound socket that does not listen refuses every connection.
final class LoopbackSocket: Sendable {
    let port: Int
    private let descriptor: Int32

    init(listening: Bool) throws {
        #if canImport(Glibc)
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
            let fd = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard fd >= 0 else { throw POSIXError(.EIO) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else {
            close(fd)
            throw POSIXError(.EADDRINUSE)
        }
        self.port = Int(UInt16(bigEndian: address.sin_port))
        if listening { _ = listen(fd, 16) }
        self.descriptor = fd
    }

    deinit {
        close(self.descriptor)
    }
}
