import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A bare TCP client for what HTTP clients will not do, such as hanging up in the middle of an exchange.
/// It owns its socket: `hangUp()` closes it, and so does `deinit` if nobody did.
final class RawHTTPConnection {
    struct Failure: Error {}

    private var descriptor: Int32

    /// Connects to 127.0.0.1:`port` and sends `request` whole, reading nothing.
    init(port: Int, sending request: String) throws {
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw Failure() }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        let bytes = Array(request.utf8)
        guard connected == 0, bytes.withUnsafeBytes({ send(descriptor, $0.baseAddress, $0.count, 0) }) == bytes.count else {
            hangUp()
            throw Failure()
        }
    }

    /// Closes the socket without reading the answer.
    func hangUp() {
        if descriptor >= 0 { close(descriptor) }
        descriptor = -1
    }

    deinit { hangUp() }
}
