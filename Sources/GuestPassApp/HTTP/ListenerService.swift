public import ServiceLifecycle

/// Runs a server (`base`, a Hummingbird application listening on `listener`) as a service whose failure to bind names
/// its listener: the `IOError` of `bind(2)` (or an unknown host) becomes a `ListenerError`. Any other error passes
/// through as it is, so a `ListenerError` of a listener run inside `base` (the metrics server inside the API
/// application) keeps its own name.
///
/// Limit: an `EADDRINUSE`, `EACCES` or `EADDRNOTAVAIL` `IOError` from anything else inside `base` would be taken for
/// its bind; none of `serve`'s services raises one (the pools speak libpq, mail libcurl, the object stores
/// AsyncHTTPClient, and their errors are their own types).
public struct ListenerService<Base: Service>: Service, CustomStringConvertible {
    /// The listener `base` opens.
    public let listener: Listener
    let base: Base

    public init(_ base: Base, listener: Listener) {
        self.base = base
        self.listener = listener
    }

    /// What swift-service-lifecycle logs of it: the listener's name.
    public var description: String { self.listener.name }

    public func run() async throws {
        do {
            try await self.base.run()
        } catch {
            guard !(error is ListenerError), let reason = ListenerError.Reason(bindError: error) else { throw error }
            throw ListenerError(listener: self.listener, reason: reason)
        }
    }
}
