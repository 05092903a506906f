import Testing

@testable import GuestPassApp

/// The `X-Request-Id` a client gets back: its own when sane, else the server's at a fixed width.
@Suite struct RequestIDTests {
    /// The id a CI run saw: Hummingbird left out the high half's leading zero, and the id had 31 digits.
    @Test func theServersIdAlwaysHas32HexDigits() {
        #expect(RequestLogMiddleware.serverRequestID("725fe0530ca6c6d1179b273a5b53c51") == "0725fe0530ca6c6d1179b273a5b53c51")
        #expect(
            RequestLogMiddleware.serverRequestID("1" + String(repeating: "0", count: 16)) == String(repeating: "0", count: 15) + "1"
                + String(repeating: "0", count: 16))
        let full = "f0e1d2c3b4a5968778695a4b3c2d1e0f"
        #expect(RequestLogMiddleware.serverRequestID(full) == full)
    }

    @Test func onlyASaneClientIdIsKept() {
        #expect(RequestLogMiddleware.saneRequestID("trace-abc.123_X") == "trace-abc.123_X")
        #expect(RequestLogMiddleware.saneRequestID("no spaces allowed") == nil)
        #expect(RequestLogMiddleware.saneRequestID("") == nil)
        #expect(RequestLogMiddleware.saneRequestID(String(repeating: "a", count: 129)) == nil)
        #expect(RequestLogMiddleware.saneRequestID("line\r\nbreak") == nil)
    }
}
