public import AsyncHTTPClient
import Foundation
public import GuestPassCrypto
public import Logging
import Metrics
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1

/// Apple's Sign in with Apple public keys (`<base>/auth/keys`, a JWKS of RS256 keys), cached by `kid`.
///
/// Design and limits:
/// - Keys are fetched on first use and again when a token names a `kid` the cache does not hold, or when the cached
///   set is older than `maxAge` (default one hour); at most once per `refreshInterval` (default one minute) per store,
///   so tokens with made-up `kid`s cannot make the server hammer Apple. Concurrent lookups that need a fetch share one.
/// - A fetch that succeeds replaces the cached set, as JWKS caches do: a `kid` Apple no longer lists stops verifying
///   (Apple withdraws a key when it must not be trusted any more). A fetch that fails, or answers a set without one
///   usable key, leaves the cache as it was: while Apple is unreachable, tokens signed with cached keys still verify.
///   Only a cold cache with Apple unreachable is `keysUnavailable` (the server answers 503).
/// - Unreachable fails fast: the fetch uses `AppleHTTP.shared`, which does not retry a failed connection, so a refused
///   connection or a name that does not resolve answers in milliseconds; any fetch ends within `timeout`.
/// - A JWKS entry that is not a usable RS256 key (wrong `kty`, under 2048 bits) is skipped.
public final class AppleKeyStore: Sendable {
    /// Where the keys are published: `<baseURL>/auth/keys`.
    public let keysURL: String
    private let httpClient: HTTPClient
    private let refreshInterval: Duration
    private let maxAge: Duration
    private let timeout: Duration
    private let logger: Logger
    private let state = NIOLockedValueBox(State())

    private struct State {
        var keys: [String: RSAPublicKey] = [:]
        /// When the cached set was fetched (nil: never).
        var fetchedAt: ContinuousClock.Instant?
        /// When the last fetch started, whatever its outcome: the rate limit.
        var lastFetch: ContinuousClock.Instant?
        var fetch: Task<Void, Never>?
    }

    /// - Parameters:
    ///   - baseURL: Apple's base URL (`https://appleid.apple.com`) or a stand-in's.
    ///   - refreshInterval: the least time between two fetches.
    ///   - maxAge: how long a fetched set is used before a lookup fetches it again.
    ///   - timeout: the longest a fetch may take, connecting included.
    public init(
        baseURL: String, httpClient: HTTPClient = AppleHTTP.shared, refreshInterval: Duration = .seconds(60),
        maxAge: Duration = .seconds(3600), timeout: Duration = AppleHTTP.defaultTimeout, logger: Logger
    ) {
        self.keysURL = baseURL.hasSuffix("/") ? baseURL + "auth/keys" : baseURL + "/auth/keys"
        self.httpClient = httpClient
        self.refreshInterval = refreshInterval
        self.maxAge = maxAge
        self.timeout = timeout
        self.logger = logger
    }

    /// The key with `kid` `keyID`, fetching Apple's keys when it is not cached (or the cached set is older than
    /// `maxAge`) and the last fetch is old enough.
    ///
    /// - Throws: `AppleSignInError(.unknownKey)` when Apple does not list it; `.keysUnavailable` when nothing is cached
    ///   and the keys cannot be fetched.
    public func key(id keyID: String) async throws -> RSAPublicKey {
        let fresh = self.state.withLockedValue { state -> RSAPublicKey? in
            guard let fetchedAt = state.fetchedAt, ContinuousClock.now - fetchedAt < self.maxAge else { return nil }
            return state.keys[keyID]
        }
        if let fresh { return fresh }
        let fetch: Task<Void, Never>? = self.state.withLockedValue { state in
            if let running = state.fetch { return running }
            if let last = state.lastFetch, ContinuousClock.now - last < self.refreshInterval { return nil }
            state.lastFetch = .now
            let task = Task { await self.fetchKeys() }
            state.fetch = task
            return task
        }
        await fetch?.value
        let (key, anyCached) = self.state.withLockedValue { ($0.keys[keyID], !$0.keys.isEmpty) }
        if let key { return key }
        guard anyCached else { throw AppleSignInError(.keysUnavailable, "Apple's keys could not be fetched from \(self.keysURL)") }
        throw AppleSignInError(.unknownKey, "no Apple key with this kid")
    }

    private func fetchKeys() async {
        let started = ContinuousClock.now
        var outcome = "error"
        defer {
            self.state.withLockedValue { $0.fetch = nil }
            AppleCallMetrics.record("keys", outcome: outcome, since: started)
        }
        do {
            var request = HTTPClientRequest(url: self.keysURL)
            request.headers.add(name: "Accept", value: "application/json")
            let response = try await self.httpClient.execute(
                request, timeout: self.timeout.timeAmount, logger: self.logger)
            guard response.status == .ok else {
                outcome = "http_\(response.status.code)"
                self.logger.warning("Apple keys fetch answered \(response.status.code)", metadata: ["apple.keys_url": "\(self.keysURL)"])
                return
            }
            let body = try await response.body.collect(upTo: 256 * 1024)
            let keys = try Self.parse(Data(body.readableBytesView))
            guard !keys.isEmpty else {
                outcome = "no_usable_key"
                self.logger.warning("Apple keys fetch listed no usable key; keeping the cached ones", metadata: ["apple.keys_url": "\(self.keysURL)"])
                return
            }
            // The new set replaces the old: a kid Apple no longer lists is no longer trusted.
            self.state.withLockedValue { state in
                let withdrawn = state.keys.keys.filter { keys[$0] == nil }
                if !withdrawn.isEmpty {
                    self.logger.notice("Apple no longer lists keys; they stop verifying", metadata: ["apple.kids": "\(withdrawn.sorted())"])
                }
                state.keys = keys
                state.fetchedAt = .now
            }
            outcome = "ok"
            self.logger.debug("Apple keys fetched", metadata: ["apple.keys": "\(keys.count)"])
        } catch {
            self.logger.warning("Apple keys fetch failed", metadata: ["apple.keys_url": "\(self.keysURL)", "error": "\(error)"])
        }
    }

    /// The usable RS256 keys of a JWKS document (members all strings, as Apple's are), by `kid`.
    static func parse(_ data: Data) throws -> [String: RSAPublicKey] {
        struct KeySet: Decodable {
            let keys: [[String: String]]
        }
        var result: [String: RSAPublicKey] = [:]
        for entry in try JSONDecoder().decode(KeySet.self, from: data).keys {
            guard let id = entry["kid"], let key = try? RSAPublicKey(jwk: entry) else { continue }
            result[id] = key
        }
        return result
    }
}

/// Apple calls by endpoint (`keys`, `token`, `revoke`) and outcome (`ok`, `http_<status>`, Apple's error code,
/// `unreachable`), with their latency. Each handle is made once per label and dimensions, not per call.
enum AppleCallMetrics {
    private static let counters = NIOLockedValueBox<[String: Counter]>([:])
    private static let timers = NIOLockedValueBox<[String: Metrics.Timer]>([:])

    static func record(_ endpoint: String, outcome: String, since started: ContinuousClock.Instant) {
        let counter = self.counters.withLockedValue { counters in
            let key = endpoint + "\u{0}" + outcome
            if let existing = counters[key] { return existing }
            let made = Counter(label: "guestpass_apple_calls_total", dimensions: [("endpoint", endpoint), ("outcome", outcome)])
            counters[key] = made
            return made
        }
        counter.increment()
        let timer = self.timers.withLockedValue { timers in
            if let existing = timers[endpoint] { return existing }
            let made = Metrics.Timer(label: "guestpass_apple_call_duration_seconds", dimensions: [("endpoint", endpoint)])
            timers[endpoint] = made
            return made
        }
        timer.recordNanoseconds(Int64((ContinuousClock.now - started) / .nanoseconds(1)))
    }
}
