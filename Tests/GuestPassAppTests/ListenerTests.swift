import Foundation
import Hummingbird
import Logging
import NIOCore
import NIOPosix
import Testing

@testable import GuestPassApp

/// A listener that cannot open is named with its address and the setting that moves it (`ListenerError`): by the
/// check `serve` runs before anything starts, and by `ListenerService` when the server itself loses the race for
/// the address. `e2e/test_listeners.py` runs the binary the same ways.
@Suite struct ListenerTests {
    static let metrics = "metrics listener"
    static let loopback = "127.0.0.1"

    /// A socket listening on a loopback port until `body` returns.
    func holdingAPort<T>(_ body: (Int) async throws -> T) async throws -> T {
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton).bind(host: Self.loopback, port: 0).get()
        do {
            let result = try await body(try #require(channel.localAddress?.port))
            try await channel.close()
            return result
        } catch {
            try? await channel.close()
            throw error
        }
    }

    func listener(_ name: String = Self.metrics, host: String = Self.loopback, port: Int) -> Listener {
        Listener(name: name, host: host, port: port, setting: AppConfiguration.ListenerVariable.metricsAddress)
    }

    @Test func theCheckNamesATakenPortsListenerAddressAndVariable() async throws {
        try await self.holdingAPort { port in
            let error = await #expect(throws: ListenerError.self) { try await self.listener(port: port).checkAvailable() }
            #expect(error?.reason == .addressInUse)
            #expect(error?.description == "metrics listener 127.0.0.1:\(port) (GUESTPASS_METRICS_ADDRESS): address already in use")
        }
    }

    /// Twice on one port: the first check held nothing. A port let go can be taken by a test running beside this one
    /// (an outgoing connection's local port comes from the same range) before either check, so another one is tried
    /// then; a check that kept its port would fail the second check every time.
    @Test func theCheckLetsAFreeAddressGo() async throws {
        for _ in 1...10 {
            let port = try await self.holdingAPort { $0 }
            do {
                try await self.listener(port: port).checkAvailable()
                try await self.listener(port: port).checkAvailable()
                return
            } catch {
                guard error.reason == .addressInUse else { throw error }
            }
        }
        Issue.record("ten free ports were all taken before they were checked twice")
    }

    @Test func anAddressOfNoInterfaceIsNotAvailable() async throws {
        let error = await #expect(throws: ListenerError.self) { try await self.listener(host: "192.0.2.1", port: 0).checkAvailable() }
        #expect(error?.reason == .addressNotAvailable)
    }

    /// The race the check cannot close: the address is taken after it; Hummingbird's `bind` fails, named all the same.
    @Test func aServerThatCannotBindIsNamedByItsService() async throws {
        try await self.holdingAPort { port in
            let app = Application(router: Router(), configuration: .init(address: .hostname(Self.loopback, port: port)), logger: Self.quiet)
            let error = await #expect(throws: ListenerError.self) { try await ListenerService(app, listener: self.listener(port: port)).run() }
            #expect(error == ListenerError(listener: self.listener(port: port), reason: .addressInUse))
        }
    }

    /// The metrics server runs inside the API application (one of its services): its failure keeps its own name.
    @Test func aListenerInsideAnotherKeepsItsName() async throws {
        try await self.holdingAPort { port in
            let inner = Application(router: Router(), configuration: .init(address: .hostname(Self.loopback, port: port)), logger: Self.quiet)
            let outer = Application(
                router: Router(), configuration: .init(address: .hostname(Self.loopback, port: 0)),
                services: [ListenerService(inner, listener: self.listener(port: port))], logger: Self.quiet)
            let api = self.listener("API listener", port: 0)
            let error = await #expect(throws: ListenerError.self) { try await ListenerService(outer, listener: api).run() }
            #expect(error?.listener.name == Self.metrics)
        }
    }

    @Test func onlyBindFailuresAreNamed() {
        struct Unrelated: Error {}
        #expect(ListenerError.Reason(bindError: Unrelated()) == nil)
        #expect(ListenerError.Reason(bindError: IOError(errnoCode: ECONNREFUSED, reason: "connect")) == nil)
        #expect(ListenerError.Reason(bindError: IOError(errnoCode: EACCES, reason: "bind")) == .permissionDenied)
    }

    static let quiet: Logger = {
        var logger = Logger(label: "listener-tests")
        logger.logLevel = .critical
        return logger
    }()
}
