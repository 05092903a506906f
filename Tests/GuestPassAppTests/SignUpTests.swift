import Foundation
@testable import GuestPassApp
import GuestPassCrypto
import HTTPTypes
import Testing
import GuestPassPostgres
import GuestPassJSON

@Suite struct SignUpTests {
    @Test func signUpReturnsASessionWhoseTokenVerifiesWithThePublishedKeys() async throws {
        try await TestService.with { service in
            let tenant = try await service.createTenant()
            let secret = UUID().uuidString.lowercased()

            try await service.withServer { client in
                let response = try await client.signUp(
                    tenant, deviceSecret: secret,
                    extra:
                        #","device":{"model":"iPhone15,2","os_version":"18.1","app_version":"1.2","build_number":"42","is_simulator":true},"theme":"dark""#
                )
                #expect(response.status == .ok)
                #expect(!response.text.contains(secret), "the device secret never appears in a response")
                let access = try #require(response.string("access_token"))
                #expect(response.string("token_type") == "bearer")
                #expect(response["expires_in"] == .number(3600))
                #expect(response.string("refresh_token")?.isEmpty == false)
                let user = try #require(response.user)
                #expect(user["is_anonymous"] == .bool(true))
                #expect(user["aud"] == .string("authenticated"))
                #expect(user["user_metadata"] == .object(["theme": .string("dark")]))

                // Verify with nothing but the JWKS endpoint's keys.
                let jwks = try await client.call(.get, "/auth/v1/.well-known/jwks.json", apiKey: nil)
                #expect(jwks.headers[.cacheControl] == "public, max-age=600")
                let keys = try #require(jwks["keys"]).arrayMembers.map { entry -> JWTVerificationKey in
                    let members = entry.objectValue!.compactMapValues(\.stringValue)
                    return .es256(try ES256PublicKey(jwk: members), keyID: members["kid"])
                }
                let verifier = try JWTVerifier(keys: keys, issuers: ["guestpass-test"], audiences: ["authenticated"])
                let payload = try JSONValue.parse(String(decoding: try verifier.verify(access).payload, as: UTF8.self)).objectValue!
                #expect(payload["sub"] == user["id"])
                #expect(payload["role"] == .string("authenticated"))
                #expect(payload["is_anonymous"] == .bool(true))
                #expect(payload["app_id"] == .string(tenant.appID.uuidString.lowercased()))
                #expect(payload["session_id"]?.stringValue != nil)
                let deviceID = try #require(payload["device_id"]?.stringValue)
                #expect(deviceID != secret)
                #expect(!access.contains(secret))

                // The device row holds the facts; only a hash of the secret is stored, apart (guestpass.device_secrets).
                let facts = try await service.owner.execute(
                    """
                    SELECT d.model, d.os_version, d.app_version, d.build_number, d.is_simulator, s.secret_hash
                    FROM public.devices AS d JOIN guestpass.device_secrets AS s ON s.device_id = d.id WHERE d.id = $1
                    """,
                    [UUID(uuidString: deviceID)!]
                ).rows[0]
                #expect(try facts.decode(String.self, "model") == "iPhone15,2")
                #expect(try facts.decode(String.self, "build_number") == "42")
                #expect(try facts.decode(Bool.self, "is_simulator") == true)
                #expect(try facts.decode(String.self, "secret_hash") == Digest.sha256Hex(secret))
            }
        }
    }

    /// Metadata numbers keep their digits through the database, the token and the profile, and one no `Double` holds
    /// (`1e399`) leaves the token usable: verifying a token does not decode the metadata.
    @Test func metadataNumbersKeepTheirDigits() async throws {
        try await TestService.with { service in
            let tenant = try await service.createTenant()
            try await service.withServer { client in
                let session = try await client.signUp(
                    tenant, deviceSecret: UUID().uuidString,
                    extra: #","big":9007199254740993,"exact":0.1000000000000000055511151231257827,"huge":1e399"#
                )
                #expect(session.status == .ok, "\(session.text)")
                let access = try #require(session.string("access_token"))
                let claims = try #require(access.split(separator: ".").dropFirst().first.flatMap { Base64URL.decode(String($0)) })
                let huge = "1" + String(repeating: "0", count: 399)
                for text in [session.text, String(decoding: claims, as: UTF8.self)] {
                    #expect(text.contains(#""big":9007199254740993"#))
                    #expect(text.contains(#""exact":0.1000000000000000055511151231257827"#))
                }
                let profile = try await client.call(.get, "/auth/v1/user", apiKey: tenant.publishableKey, bearer: access)
                #expect(profile.status == .ok, "\(profile.text)")
                #expect(profile.text.contains(#""big":9007199254740993"#))
                #expect(profile.text.contains(#""huge":\#(huge)"#), "PostgreSQL writes numbers out in full")
            }
        }
    }

    @Test func hundredConcurrentSignUpsWithOneDeviceMakeOneUser() async throws {
        try await TestService.with({ $0.signupBurstPerIP = 1000 }) { service in
            let tenant = try await service.createTenant()
            let secret = UUID().uuidString

            let subjects = try await service.withServer { client in
                // AsyncHTTPClient holds 8 connections to the server, so at most 8 sign-ups are in flight however many
                // are sent; the rest would wait in its pool, whose wait times out on a loaded machine. 8 at a time,
                // each next one sent as one finishes.
                try await withThrowingTaskGroup(of: (HTTPResponse.Status, String?).self) { group in
                    let signUp = { @Sendable () async throws -> (HTTPResponse.Status, String?) in
                        let response = try await client.signUp(tenant, deviceSecret: secret)
                        return (response.status, response.user?["id"]?.stringValue)
                    }
                    for _ in 0..<8 { group.addTask(operation: signUp) }
                    var all: [(HTTPResponse.Status, String?)] = []
                    for try await outcome in group {
                        all.append(outcome)
                        if all.count + 8 <= 100 { group.addTask(operation: signUp) }
                    }
                    return all
                }
            }
            #expect(subjects.count == 100)
            #expect(subjects.allSatisfy { $0.0 == .ok })
            #expect(Set(subjects.compactMap(\.1)).count == 1, "every session belongs to the same guest")
            #expect(try await service.count("SELECT count(*) FROM public.users") == 1)
            #expect(try await service.count("SELECT count(*) FROM public.devices") == 1)
            #expect(try await service.count("SELECT count(*) FROM guestpass.sessions") == 100)
        }
    }

    @Test func sameDeviceSecretInTwoAppsMakesTwoUsers() async throws {
        try await TestService.with { service in
            let first = try await service.createTenant(name: "first")
            let second = try await service.createTenant(name: "second")
            let secret = UUID().uuidString

            try await service.withServer { client in
                let a = try await client.signUp(first, deviceSecret: secret)
                let b = try await client.signUp(second, deviceSecret: secret)
                let again = try await client.signUp(first, deviceSecret: secret)
                #expect(a.status == .ok && b.status == .ok)
                #expect(a.user?["id"] != nil && a.user?["id"] != b.user?["id"])
                #expect(again.user?["id"] == a.user?["id"])
                // Without a device id every sign-up is a new guest.
                let loose1 = try await client.signUp(first)
                let loose2 = try await client.signUp(first)
                #expect(loose1.user?["id"] != loose2.user?["id"])
            }
            #expect(try await service.count("SELECT count(*) FROM public.users") == 4)
        }
    }

    @Test func badInputGetsClearErrors() async throws {
        try await TestService.with { service in
            let tenant = try await service.createTenant()

            try await service.withServer { client in
                let notRandom = try await client.signUp(tenant, deviceSecret: "00000000-0000-1000-8000-000000000000")
                #expect(notRandom.status == .badRequest)
                #expect(notRandom.errorCode == GoTrueCode.validationFailed)
                let notUUID = try await client.signUp(tenant, deviceSecret: "my-device")
                #expect(notUUID.status == .badRequest)
                let badFacts = try await client.signUp(tenant, deviceSecret: UUID().uuidString, extra: #","device":{"is_simulator":"yes"}"#)
                #expect(badFacts.status == .badRequest)
                #expect(badFacts.errorCode == GoTrueCode.validationFailed)
                let notJSON = try await client.call(.post, "/auth/v1/signup", apiKey: tenant.publishableKey, json: "{nope")
                #expect(notJSON.status == .badRequest)
                #expect(notJSON.errorCode == GoTrueCode.badJson)
                let array = try await client.call(.post, "/auth/v1/signup", apiKey: tenant.publishableKey, json: "[1]")
                #expect(array.status == .badRequest)
                let noKey = try await client.call(.post, "/auth/v1/signup", apiKey: nil, json: "{}")
                #expect(noKey.status == .unauthorized)
                #expect(noKey.errorCode == GoTrueCode.noApiKey)
                let wrongKey = try await client.call(.post, "/auth/v1/signup", apiKey: "gp_pub_nope", json: "{}")
                #expect(wrongKey.status == .unauthorized)
                #expect(wrongKey.errorCode == GoTrueCode.invalidApiKey)
                #expect(wrongKey.headers[HTTPField.Name("x-sb-error-code")!] == "invalid_api_key")
                let versioned = try await client.call(
                    .post, "/auth/v1/signup", apiKey: "gp_pub_nope", json: "{}",
                    headers: [HTTPField.Name("X-Supabase-Api-Version")!: "2024-01-01"]
                )
                #expect(versioned.headers[HTTPField.Name("X-Supabase-Api-Version")!] == "2024-01-01")
                // The bearer may equal the API key (no session yet).
                let keyAsBearer = try await client.call(
                    .post, "/auth/v1/signup", apiKey: tenant.publishableKey, bearer: tenant.publishableKey, json: "{}"
                )
                #expect(keyAsBearer.status == .ok)
                // The header name is case-insensitive, as Swift sends `Apikey` and Python `apiKey`.
                let mixedCase = try await client.call(
                    .post, "/auth/v1/signup", apiKey: nil, json: "{}", headers: [HTTPField.Name("ApiKey")!: tenant.publishableKey]
                )
                #expect(mixedCase.status == .ok)
            }
        }
    }

    @Test func signUpIsRateLimitedPerClientIP() async throws {
        try await TestService.with({ auth in
            auth.signupBurstPerIP = 3
            auth.signupsPerHourPerIP = 1
            auth.trustedProxyHeader = "X-Forwarded-For"
        }) { service in
            let tenant = try await service.createTenant()

            try await service.withServer { client in
                func signUp(from ip: String) async throws -> JSONResponse {
                    try await client.call(
                        .post, "/auth/v1/signup", apiKey: tenant.publishableKey, json: "{}",
                        headers: [HTTPField.Name("X-Forwarded-For")!: "198.51.100.1, \(ip)"]
                    )
                }
                for _ in 0..<3 { #expect(try await signUp(from: "203.0.113.9").status == .ok) }
                let limited = try await signUp(from: "203.0.113.9")
                #expect(limited.status == .tooManyRequests)
                #expect(limited.errorCode == GoTrueCode.overRequestRateLimit)
                #expect(Int(limited.headers[.retryAfter] ?? "") ?? 0 >= 1)
                #expect(try await signUp(from: "203.0.113.10").status == .ok)
            }
            #expect(try await service.count("SELECT count(*) FROM public.users") == 4)
        }
    }
}

extension JSONValue {
    var arrayMembers: [JSONValue] {
        if case .array(let members) = self { return members }
        return []
    }
}
