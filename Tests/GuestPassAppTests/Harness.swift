import Foundation
import GuestPassApp
import GuestPassCrypto
import GuestPassPostgres
import GuestPassTestSupport
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import Testing
import GuestPassJSON
@testable import GuestPassStore

/// One app (tenant) of the service under test, with its two API keys.
struct TestTenant: Sendable {
    let appID: UUID
    let publishableKey: String
    let secretKey: String
}

/// A migrated throwaway database, tenants in it, and the configuration to serve it.
struct TestService: Sendable {
    let database: TestDatabase
    var configuration: AppConfiguration
    let owner: PostgresPool

    static func make(examples: Bool = false, _ adjust: (inout AuthConfiguration) -> Void = { _ in }) async throws -> TestService {
        let database = try await TestDatabase.create(examples: examples)
        var auth = try AuthConfiguration(signer: JWTSigner(key: try ES256PrivateKey.generate()))
        auth.issuer = "guestpass-test"
        adjust(&auth)
        var configuration = AppConfiguration(databaseURL: database.loginURL, auth: auth)
        configuration.port = 0
        configuration.databasePoolSize = 8
        // Tests fire hundreds of requests at once on a shared two-CPU machine: wait for a connection rather than 503.
        configuration.databaseAcquireTimeout = .seconds(60)
        // Mail is delivered and tested end to end (e2e/test_email_*.py); here the sender's poll would only share the pool.
        configuration.mailSender = false
        return TestService(database: database, configuration: configuration, owner: database.ownerPool())
    }

    /// Runs `body` with a fresh service and tears it down afterwards, whether `body` returns or throws (the teardown is
    /// awaited: the database is gone before the test ends).
    static func with<R: Sendable>(
        examples: Bool = false, _ adjust: (inout AuthConfiguration) -> Void = { _ in }, _ body: (TestService) async throws -> R
    ) async throws -> R {
        let service = try await Self.make(examples: examples, adjust)
        return try await withCleanup {
            try await body(service)
        } cleanup: {
            await service.tearDown()
        }
    }

    /// Runs `body` with a fresh service (`with`), one tenant of it (`createTenant`) and a client of the service running
    /// (`withServer`): where most tests of the HTTP API start.
    static func withServedTenant<R: Sendable>(
        examples: Bool = false, _ adjust: (inout AuthConfiguration) -> Void = { _ in },
        _ body: @Sendable (TestService, TestTenant, any TestClientProtocol) async throws -> R
    ) async throws -> R {
        try await Self.with(examples: examples, adjust) { service in
            let tenant = try await service.createTenant()
            return try await service.withServer { client in try await body(service, tenant, client) }
        }
    }

    /// Registers an app with a publishable and a secret key, as `guestpass apps create` does (`Administration`).
    func createTenant(name: String = "test") async throws -> TestTenant {
        let (appID, publishable, secret) = try await Administration(pool: self.owner).createApp(name: name)
        return TestTenant(appID: appID, publishableKey: publishable.value, secretKey: secret.value)
    }

    /// Runs `body` against the real server over real HTTP (AsyncHTTPClient, so requests may run concurrently).
    func withServer<R: Sendable>(_ body: @Sendable (any TestClientProtocol) async throws -> R) async throws -> R {
        var logger = Logger(label: "test")
        logger.logLevel = .warning
        let app = try buildApplication(configuration: self.configuration, logger: logger)
        return try await app.test(.ahc(.http), body)
    }

    func count(_ sql: String, _ parameters: [any PostgresEncodable] = []) async throws -> Int {
        try await self.owner.execute(sql, parameters).rows[0].decode(Int.self, at: 0)
    }

    func tearDown() async {
        await self.owner.shutdown()
        await self.database.drop()
    }
}

/// A decoded JSON response.
struct JSONResponse: Sendable {
    let status: HTTPResponse.Status
    let headers: HTTPFields
    let body: [String: JSONValue]
    let text: String

    subscript(_ key: String) -> JSONValue? { self.body[key] }
    func string(_ key: String) -> String? { self.body[key]?.stringValue }
    var user: [String: JSONValue]? { self.body["user"]?.objectValue }
    var errorCode: String? { self.string("code") }
}

extension TestClientProtocol {
    /// Sends a request and decodes a JSON object body (or `{}` for an empty body).
    func call(
        _ method: HTTPRequest.Method, _ uri: String, apiKey: String?, bearer: String? = nil, json: String? = nil,
        headers extra: HTTPFields = [:]
    ) async throws -> JSONResponse {
        var headers = extra
        if let apiKey { headers[HTTPField.Name("apikey")!] = apiKey }
        if let bearer { headers[.authorization] = "Bearer \(bearer)" }
        if json != nil { headers[.contentType] = "application/json" }
        let response = try await self.executeRequest(
            uri: uri, method: method, headers: headers, body: json.map { ByteBuffer(string: $0) }
        )
        let text = String(buffer: response.body)
        var body: [String: JSONValue] = [:]
        if !text.isEmpty, let object = (try? JSONValue.parse(text))?.objectValue { body = object }
        return JSONResponse(status: response.status, headers: response.headers, body: body, text: text)
    }

    func signUp(_ tenant: TestTenant, deviceSecret: String? = nil, extra: String = "") async throws -> JSONResponse {
        let data = deviceSecret.map { #"{"device_id":"\#($0)"\#(extra)}"# } ?? "{}"
        return try await self.call(.post, "/auth/v1/signup", apiKey: tenant.publishableKey, json: #"{"data":\#(data)}"#)
    }

    func refresh(_ tenant: TestTenant, _ refreshToken: String) async throws -> JSONResponse {
        try await self.call(
            .post, "/auth/v1/token?grant_type=refresh_token", apiKey: tenant.publishableKey,
            json: #"{"refresh_token":"\#(refreshToken)"}"#
        )
    }
}
