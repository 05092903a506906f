import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A bare TCP client for what HTTP clients will not do, such as hanging up in the middle of an exchange.
enum RawHTTP {
    struct Failure: Error {}

    /// Connects to 127.0.0.1:`port`, sends `request` and closes the socket `after` that long without reading.
    static func sendAndHangUp(port: Int, _ request: String, after delay: Duration) throws {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw Failure() }
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw Failure() }
        let bytes = Array(request.utf8)
        guard bytes.withUnsafeBytes({ send(descriptor, $0.baseAddress, $0.count, 0) }) == bytes.count else { throw Failure() }
        usleep(UInt32(delay.components.attoseconds / 1_000_000_000_000 + delay.components.seconds * 1_000_000))
    }
}
