import Foundation
import GuestPassCrypto
public import Hummingbird
public import Logging

/// Builds a local stand-in for Apple's DeviceCheck servers: real HTTP speaking Apple's protocol, so the production
/// `DeviceCheckClient` runs unchanged against `http://<host>:<port>`. For development and tests only.
///
/// Apple's endpoints (`POST /v1/validate_device_token`, `/v1/query_two_bits`, `/v1/update_two_bits`) check the ES256
/// JWT (`kid` = `keyID`, `iss` = `teamID`, `iat` within the last hour and at most 60 s ahead) and the body
/// (`device_token` a stand-in token, `transaction_id`, `timestamp` in milliseconds within an hour of now) and
/// answer with Apple's statuses and literal texts.
///
/// Control endpoints, unauthenticated (never expose the stand-in beyond localhost):
/// - `POST /_standin/failures` `{"status":503,"count":2,"delay_ms":0,"body":"…","paths":["update_two_bits"]}`:
///   the next `count` (default 1) matching requests wait `delay_ms`, then answer `status` with `body`, or are
///   answered normally if `status` is 0 or absent;
/// - `POST /_standin/reset`: forget devices, failures and recorded requests;
/// - `GET /_standin/devices/<device id>`: `{"bit0","bit1","updates","last_update_time"}` (zeros and null if never set);
/// - `GET /_standin/devices/<device id>/token`: a new device token for that device (text/plain).
///
/// - Parameters:
///   - configuration: address and the accepted key.
///   - state: the devices and failure plan, shared with the caller for in-process tests.
///   - logger: the server's logger.
///   - onServerRunning: called with the bound port once the server listens (useful with port 0).
public func buildDeviceCheckStandIn(
    configuration: StandInConfiguration,
    state: StandInState = StandInState(),
    logger: Logger,
    onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
) -> some ApplicationProtocol {
    let router = Router()
    StandInRoutes(protocol: DeviceCheckProtocol(configuration: configuration, state: state), logger: logger, latency: configuration.latency)
        .register(on: router)
    return Application(
        router: router,
        configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "devicecheck-standin"),
        onServerRunning: { channel in await onServerRunning(channel.localAddress?.port ?? configuration.port) },
        logger: logger
    )
}

/// The stand-in's routes.
struct StandInRoutes: Sendable {
    let `protocol`: DeviceCheckProtocol
    let logger: Logger
    /// Added to every Apple endpoint's answer time.
    var latency: Duration = .zero

    /// The largest accepted request body.
    static let maximumBodySize = 64 * 1024

    var state: StandInState { self.protocol.state }

    func register(on router: Router<BasicRequestContext>) {
        for endpoint in StandInEndpoint.allCases {
            let path = RouterPath("/v1/\(endpoint.rawValue)")
            router.post(path) { request, _ in try await self.handle(endpoint, request: request) }
            for method in [HTTPRequest.Method.get, .put, .delete, .patch] {
                router.on(path, method: method) { _, _ in Self.response(.text(405, AppleMessage.methodNotAllowed)) }
            }
        }
        router.post("/_standin/failures") { request, _ in try await self.injectFailure(request) }
        router.post("/_standin/reset") { _, _ in
            await self.state.reset()
            return Self.response(.empty)
        }
        router.get("/_standin/devices/:id") { _, context in
            let deviceID = try Self.deviceID(context)
            let device = await self.state.device(deviceID)
            return Self.response(
                .json(
                    DeviceSnapshot(
                        bit0: device?.bit0 ?? false,
                        bit1: device?.bit1 ?? false,
                        updates: device?.updates ?? 0,
                        last_update_time: device?.lastUpdateTime
                    )
                )
            )
        }
        router.get("/_standin/devices/:id/token") { _, context in
            Self.response(.text(200, StandInState.makeDeviceToken(deviceID: try Self.deviceID(context))))
        }
    }

    private func handle(_ endpoint: StandInEndpoint, request: Request) async throws -> Response {
        let receivedAt = Date()
        let authorization = request.headers[.authorization]
        let body = try? await request.body.collect(upTo: Self.maximumBodySize).readableBytesView
        let reply: StandInReply
        if self.latency > .zero { try await Task.sleep(for: self.latency) }
        let failure = await self.state.takeFailure(for: endpoint.rawValue)
        if let failure, failure.delay > .zero { try await Task.sleep(for: failure.delay) }
        if let failure, let status = failure.status, status != 0 {
            reply = .text(status, failure.body ?? AppleMessage.forStatus(status))
        } else if let body {
            reply = await self.protocol.answer(endpoint, authorization: authorization, body: Array(body))
        } else {
            reply = .text(400, AppleMessage.badPayload)
        }
        await self.state.record(
            StandInRequest(
                endpoint: endpoint.rawValue,
                authorization: authorization,
                body: body.map(Array.init) ?? [],
                status: reply.status,
                receivedAt: receivedAt
            )
        )
        self.logger.debug("DeviceCheck stand-in answered", metadata: ["endpoint": "\(endpoint.rawValue)", "status": "\(reply.status)"])
        return Self.response(reply)
    }

    // MARK: Control

    /// The body of `POST /_standin/failures`.
    private struct FailureRequest: Decodable {
        let status: Int?
        let count: Int?
        let delay_ms: Int?
        let body: String?
        let paths: [String]?
    }

    private struct DeviceSnapshot: Encodable {
        let bit0: Bool
        let bit1: Bool
        let updates: Int
        let last_update_time: String?
    }

    private func injectFailure(_ request: Request) async throws -> Response {
        let body = try await request.body.collect(upTo: Self.maximumBodySize)
        guard let plan = try? JSONDecoder().decode(FailureRequest.self, from: Data(body.readableBytesView)),
            (plan.count ?? 1) >= 0, (plan.delay_ms ?? 0) >= 0
        else {
            return Self.response(.text(400, "expected {\"status\",\"count\",\"delay_ms\",\"body\",\"paths\"}"))
        }
        // "paths" may name endpoints as `update_two_bits` or `/v1/update_two_bits`.
        let endpoints = plan.paths.map { Set($0.map { String($0.split(separator: "/").last ?? "") }) }
        await self.state.injectFailure(
            StandInFailure(
                status: plan.status.flatMap { $0 == 0 ? nil : $0 },
                count: plan.count ?? 1,
                delay: .milliseconds(plan.delay_ms ?? 0),
                body: plan.body,
                endpoints: endpoints
            )
        )
        return Self.response(.json(["pending": await self.state.pendingFailures.reduce(0) { $0 + $1.count }]))
    }

    private static func deviceID(_ context: BasicRequestContext) throws -> String {
        let raw = try context.parameters.require("id")
        return raw.removingPercentEncoding ?? raw
    }

    static func response(_ reply: StandInReply) -> Response {
        var headers = HTTPFields()
        if let contentType = reply.contentType { headers[.contentType] = contentType }
        return Response(
            status: HTTPResponse.Status(code: reply.status),
            headers: headers,
            body: .init(byteBuffer: ByteBuffer(bytes: reply.body))
        )
    }
}
