import Foundation
import NIOCore

/// A listener could not open: which one (its address and the setting that moves it, `Listener`) and why, in one line,
/// e.g. `metrics listener 127.0.0.1:9464 (GUESTPASS_METRICS_ADDRESS): address already in use`. `guestpass` prints it
/// as its error and exits 1, with no stack trace.
public struct ListenerError: Error, Equatable, CustomStringConvertible {
    /// Why the bind failed.
    public enum Reason: Sendable, Equatable, CustomStringConvertible {
        /// `EADDRINUSE`: something listens there already (another `guestpass serve`?).
        case addressInUse
        /// `EACCES`: a port below 1024 without the privilege to bind it.
        case permissionDenied
        /// `EADDRNOTAVAIL`: no interface of this machine has that address.
        case addressNotAvailable
        /// The host name does not resolve.
        case unknownHost
        /// Anything else, as the system said it.
        case other(String)

        /// The reason of `error` when it is a failure to bind an address: one of the errno codes above in an
        /// `IOError`, or a host that does not resolve. Nil for any other error.
        public init?(bindError error: any Error) {
            if error is SocketAddressError.UnknownHost {
                self = .unknownHost
                return
            }
            guard let error = error as? IOError else { return nil }
            switch error.errnoCode {
            case EADDRINUSE: self = .addressInUse
            case EACCES: self = .permissionDenied
            case EADDRNOTAVAIL: self = .addressNotAvailable
            default: return nil
            }
        }

        /// The reason in words, lower case, as it ends the error's line.
        public var description: String {
            switch self {
            case .addressInUse: "address already in use"
            case .permissionDenied: "permission denied (a port below 1024 needs root or CAP_NET_BIND_SERVICE)"
            case .addressNotAvailable: "address not available (no interface of this machine has it)"
            case .unknownHost: "unknown host"
            case .other(let text): text
            }
        }
    }

    /// The listener that did not open.
    public let listener: Listener
    /// Why.
    public let reason: Reason

    public init(listener: Listener, reason: Reason) {
        self.listener = listener
        self.reason = reason
    }

    /// `<listener> <host>:<port> (<setting>): <reason>`.
    public var description: String { "\(self.listener): \(self.reason)" }
}
