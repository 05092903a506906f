import Foundation
import GuestPassCrypto
import GuestPassJSON
import GuestPassPostgres
import GuestPassStore
import GuestPassTestSupport
import Testing

/// `ConsoleStore` against PostgreSQL, logged in as `guestpass_console` as the console is: sign-in look-ups and their
/// limits, a session's life (second factor, sliding, idle, old, signed out), every function's refusal of another app,
/// each action with its audit row, and the user search by each kind. Sessions are aged in the database, not slept on.
@Suite struct ConsoleStoreTests {
    /// A migrated database with apps X and Y, an owner pool and a `ConsoleStore` on a `guestpass_console` pool.
    struct Fixture {
        let owner: PostgresPool
        let store: ConsoleStore
        let appX: UUID
        let appY: UUID

        static func with(_ body: (Fixture) async throws -> Void) async throws {
            let database = try await TestDatabase.create()
            try await withCleanup {
                try await withShutdown(database.ownerPool()) { owner in
                    try await withShutdown(database.consolePool()) { console in
                        let admin = Administration(pool: owner)
                        let appX = try await admin.createApp(name: "console-x").appID
                        let appY = try await admin.createApp(name: "console-y").appID
                        try await body(Fixture(owner: owner, store: ConsoleStore(pool: console), appX: appX, appY: appY))
                    }
                }
            } cleanup: {
                await database.drop()
            }
        }

        /// A new user of `app`.
        func user(in app: UUID, email: String? = nil) async throws -> UUID {
            try await self.owner.execute(
                "INSERT INTO public.users (app_id, email, is_anonymous) VALUES ($1, $2::text, $2::text IS NULL) RETURNING id", [app, email]
            ).rows[0].decode(UUID.self, at: 0)
        }

        /// A new device of `user`.
        func device(of user: UUID) async throws -> UUID {
            try await self.owner.execute(
                "INSERT INTO public.devices (app_id, user_id) SELECT app_id, id FROM public.users WHERE id = $1 RETURNING id", [user]
            ).rows[0].decode(UUID.self, at: 0)
        }

        /// A new API session of `user` (on `device`, if given) with one live refresh token.
        func apiSession(of user: UUID, device: UUID? = nil) async throws -> UUID {
            let id: UUID = try await self.owner.execute(
                "INSERT INTO guestpass.sessions (app_id, user_id, device_id) SELECT app_id, id, $2::uuid FROM public.users WHERE id = $1 RETURNING id",
                [user, device]
            ).rows[0].decode(UUID.self, at: 0)
            try await self.owner.execute(
                "INSERT INTO guestpass.refresh_tokens (session_id, counter, token_hash) VALUES ($1, 0, $2)", [id, Self.hex()])
            return id
        }

        /// An operator (password only) of `apps` signed in: the hash of its session token.
        func signedIn(_ email: String, apps: [UUID], allApps: Bool = false) async throws -> String {
            let id = try await Administration(pool: self.owner).createOperator(
                email: email, passwordHash: "not-a-real-hash", totpSecret: nil, totpRequired: false, allApps: allApps, apps: apps)
            let session = Self.hex()
            try await self.store.signInSucceeded(operatorID: id, tokenHash: session, secondFactorDone: true)
            return session
        }

        func count(_ sql: String, _ parameters: [any PostgresEncodable] = []) async throws -> Int {
            try await self.owner.execute(sql, parameters).rows[0].decode(Int.self, at: 0)
        }

        /// Ages the console session `session` (SQL assignments to its row, e.g. `last_seen_at = now() - interval '1 hour'`).
        func age(_ session: String, _ assignments: String) async throws {
            try await self.owner.execute("UPDATE guestpass.operator_sessions SET \(assignments) WHERE token_hash = $1", [session])
        }

        /// A random SHA-256-sized hex string (a token hash, as the server makes them).
        static func hex() -> String {
            (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
        }
    }

    /// The items of a JSON array (none for anything else).
    static func items(_ value: JSONValue) -> [JSONValue] {
        if case .array(let items) = value { return items }
        return []
    }

    /// `key` of each object of a JSON array, as text.
    static func strings(_ value: JSONValue, _ key: String) -> [String] {
        Self.items(value).map { $0.objectValue?[key]?.stringValue ?? "" }
    }

    /// Expects `body` to throw `ConsoleStoreError.invalid` (22023), whatever its message.
    static func expectInvalid(sourceLocation: SourceLocation = #_sourceLocation, _ body: () async throws -> Void) async {
        let error = await #expect(throws: ConsoleStoreError.self, sourceLocation: sourceLocation) { try await body() }
        var invalid = false
        if case .invalid? = error { invalid = true }
        #expect(invalid, "\(String(describing: error)) is not .invalid", sourceLocation: sourceLocation)
    }

    /// Expects `body` to throw a `PostgresError` of SQLSTATE `state`.
    static func expectState(_ state: SQLState, sourceLocation: SourceLocation = #_sourceLocation, _ body: () async throws -> Void) async {
        let error = await #expect(throws: PostgresError.self, sourceLocation: sourceLocation) { try await body() }
        #expect(error?.sqlState == state, sourceLocation: sourceLocation)
    }

    @Test func theSignInLookupGivesTheHashAndSecretAndLimitsFailures() async throws {
        try await Fixture.with { fixture in
            let password = Array("correct horse battery staple".utf8)
            let secret = [UInt8](repeating: 7, count: 20)
            let id = try await Administration(pool: fixture.owner).createOperator(
                email: "Ops@Example.com", passwordHash: try PasswordHash.hash(password), totpSecret: secret, totpRequired: true,
                allApps: false, apps: [fixture.appX])

            let lookup = try await fixture.store.signInLookup(email: "OPS@example.com", address: "192.0.2.1")
            #expect(lookup.operatorID == id && !lookup.limited && lookup.totpSecret == secret && lookup.totpRequired)
            #expect(PasswordHash.verify(password, against: try #require(lookup.passwordHash)) == .match(needsRehash: false))
            let unknown = try await fixture.store.signInLookup(email: "nobody@example.com", address: "192.0.2.1")
            #expect(unknown.operatorID == nil && unknown.passwordHash == nil && !unknown.limited)

            for _ in 0..<4 { try await fixture.store.signInFailed(email: "ops@example.com", address: "192.0.2.2") }
            #expect(try await fixture.store.signInLookup(email: "ops@example.com", address: "192.0.2.3").operatorID == id, "4 failures: not yet")
            try await fixture.store.signInFailed(email: "ops@example.com", address: "192.0.2.2")
            let limited = try await fixture.store.signInLookup(email: "ops@example.com", address: "192.0.2.3")
            #expect(limited.limited && limited.operatorID == nil && limited.passwordHash == nil && limited.totpSecret == nil)

            for n in 0..<20 { try await fixture.store.signInFailed(email: "guess\(n)@example.com", address: "198.51.100.7") }
            #expect(try await fixture.store.signInLookup(email: "other@example.com", address: "198.51.100.7").limited, "20 from one address")
            #expect(try await fixture.store.signInLookup(email: "other@example.com", address: "198.51.100.8").limited == false)

            try await fixture.owner.execute("UPDATE guestpass.operator_sign_in_failures SET failed_at = now() - interval '16 minutes'")
            #expect(try await fixture.store.signInLookup(email: "ops@example.com", address: "198.51.100.7").operatorID == id, "15 minutes on")
        }
    }

    @Test func aSessionWaitsForItsCodeSlidesAndEnds() async throws {
        try await Fixture.with { fixture in
            let admin = Administration(pool: fixture.owner)
            let withCode = try await admin.createOperator(
                email: "totp@example.com", passwordHash: "h", totpSecret: [1, 2, 3], totpRequired: true, allApps: true, apps: [])
            let pending = Fixture.hex()
            await #expect(throws: ConsoleStoreError.self, "an operator with a secret cannot skip the code") {
                try await fixture.store.signInSucceeded(operatorID: withCode, tokenHash: pending, secondFactorDone: true)
            }
            try await fixture.store.signInSucceeded(operatorID: withCode, tokenHash: pending, secondFactorDone: false)
            let waiting = try await fixture.store.session(pending)
            #expect(waiting.email == "totp@example.com" && waiting.allApps && !waiting.secondFactorDone)
            await #expect(throws: ConsoleStoreError.notSignedIn) { try await fixture.store.apps(session: pending) }
            #expect(try await fixture.store.secondFactorDone(session: pending, step: 1000))
            #expect(try await !fixture.store.secondFactorDone(session: pending, step: 1000), "a step is taken once")
            #expect(try await fixture.store.session(pending).secondFactorDone)
            #expect(Self.strings(try await fixture.store.apps(session: pending), "name") == ["console-x", "console-y"])
            #expect(
                Self.strings(try await fixture.store.audit(session: pending, app: nil, before: nil), "action") == ["sign_in"],
                "the completed sign-in is audited once")

            try await fixture.age(pending, "last_seen_at = now() - interval '25 minutes'")
            _ = try await fixture.store.apps(session: pending)
            #expect(
                try await fixture.count(
                    "SELECT count(*) FROM guestpass.operator_sessions WHERE token_hash = $1 AND last_seen_at > now() - interval '1 minute'",
                    [pending]) == 1, "a use slides the session")
            try await fixture.age(pending, "last_seen_at = now() - interval '31 minutes'")
            await #expect(throws: ConsoleStoreError.notSignedIn, "idle for 31 minutes") { try await fixture.store.session(pending) }

            let old = try await fixture.signedIn("old@example.com", apps: [fixture.appX])
            try await fixture.age(old, "created_at = now() - interval '12 hours 1 minute'")
            await #expect(throws: ConsoleStoreError.notSignedIn, "begun over 12 hours ago") { try await fixture.store.apps(session: old) }

            let out = try await fixture.signedIn("out@example.com", apps: [fixture.appX])
            #expect(Self.items(try await fixture.store.apps(session: out)).count == 1)
            try await fixture.store.signOut(session: out)
            await #expect(throws: ConsoleStoreError.notSignedIn, "signed out") { try await fixture.store.session(out) }

            let disabled = try await fixture.signedIn("gone@example.com", apps: [fixture.appX])
            try await fixture.owner.execute("UPDATE guestpass.operators SET disabled_at = now() WHERE email = 'gone@example.com'")
            await #expect(throws: ConsoleStoreError.notSignedIn, "a disabled operator") { try await fixture.store.apps(session: disabled) }
            await #expect(throws: ConsoleStoreError.notSignedIn, "an unknown session") { try await fixture.store.apps(session: Fixture.hex()) }
        }
    }

    @Test func everyFunctionRefusesAnotherAppsUserAndApp() async throws {
        try await Fixture.with { fixture in
            let session = try await fixture.signedIn("x@example.com", apps: [fixture.appX])
            let carol = try await fixture.user(in: fixture.appY, email: "carol@example.com")
            let device = try await fixture.device(of: carol)
            let apiSession = try await fixture.apiSession(of: carol, device: device)
            let key: UUID = try await fixture.owner.execute("SELECT id FROM guestpass.api_keys WHERE app_id = $1 LIMIT 1", [fixture.appY])
                .rows[0].decode(UUID.self, at: 0)
            let (store, appY) = (fixture.store, fixture.appY)

            await #expect(throws: ConsoleStoreError.forbidden) { try await store.app(session: session, app: appY) }
            await #expect(throws: ConsoleStoreError.forbidden) {
                try await store.setAppQuota(session: session, app: appY, dailyFreeAllowance: 1, welcomeGrantCredits: 1)
            }
            await #expect(throws: ConsoleStoreError.forbidden) { try await store.addKey(session: session, app: appY, key: .generate(kind: .secret)) }
            await #expect(throws: ConsoleStoreError.forbidden) { try await store.revokeKey(session: session, app: appY, key: key) }
            await #expect(throws: ConsoleStoreError.forbidden) { try await store.audit(session: session, app: appY, before: nil) }
            await #expect(throws: ConsoleStoreError.forbidden) { try await store.userPage(session: session, user: carol) }
            await #expect(throws: ConsoleStoreError.forbidden) { try await store.changeCredits(session: session, user: carol, delta: 5, reason: "x") }
            await #expect(throws: ConsoleStoreError.forbidden) { try await store.setPremium(session: session, user: carol, premium: true) }
            await #expect(throws: ConsoleStoreError.forbidden) { try await store.revokeDevice(session: session, user: carol, device: device) }
            await #expect(throws: ConsoleStoreError.forbidden) { try await store.endSession(session: session, user: carol, sessionID: apiSession) }
            await #expect(throws: ConsoleStoreError.forbidden) { try await store.deleteUser(session: session, user: carol, schemas: ["public"]) }
            for (kind, value) in [("user_id", carol.uuidString), ("device_id", device.uuidString), ("email", "carol@example.com")] {
                #expect(Self.items(try await store.findUsers(session: session, kind: kind, value: value)).isEmpty, "not found by \(kind)")
            }
            #expect(Self.strings(try await store.apps(session: session), "name") == ["console-x"])

            await #expect(throws: ConsoleStoreError.notFound) { try await store.userPage(session: session, user: UUID()) }
            await #expect(throws: ConsoleStoreError.notFound) { try await store.app(session: session, app: UUID()) }
            #expect(
                try await fixture.count(
                    """
                    SELECT (SELECT count(*) FROM guestpass.operator_audit WHERE action <> 'sign_in')
                         + (SELECT count(*) FROM public.users WHERE id = $1 AND (credits_balance <> 0 OR is_premium))
                         + (SELECT count(*) FROM guestpass.sessions WHERE revoked_at IS NOT NULL)
                         + (SELECT count(*) FROM guestpass.api_keys WHERE revoked_at IS NOT NULL)
                    """, [carol]) == 0, "nothing changed, nothing audited")
        }
    }

    @Test func eachActionWritesItsAuditRow() async throws {
        try await Fixture.with { fixture in
            let (store, appX) = (fixture.store, fixture.appX)
            let session = try await fixture.signedIn("x@example.com", apps: [appX])
            let alice = try await fixture.user(in: appX, email: "alice@example.com")
            let bob = try await fixture.user(in: appX)
            let device = try await fixture.device(of: alice)
            let onDevice = try await fixture.apiSession(of: alice, device: device)
            let other = try await fixture.apiSession(of: alice)

            #expect(try await store.changeCredits(session: session, user: alice, delta: 5, reason: "ticket 7") == 5)
            #expect(try await store.changeCredits(session: session, user: alice, delta: -2, reason: "refund") == 3)
            for (delta, reason) in [(-4, "more than the balance"), (0, "nothing"), (1, " "), (1, String(repeating: "r", count: 191))] {
                await Self.expectInvalid { _ = try await store.changeCredits(session: session, user: alice, delta: delta, reason: reason) }
            }
            try await store.setPremium(session: session, user: alice, premium: true)
            try await store.revokeDevice(session: session, user: alice, device: device)
            await #expect(throws: ConsoleStoreError.notFound, "a revoked device is not revoked twice") {
                try await store.revokeDevice(session: session, user: alice, device: device)
            }
            try await store.endSession(session: session, user: alice, sessionID: other)
            #expect(
                try await fixture.count(
                    """
                    SELECT (SELECT count(*) FROM guestpass.sessions WHERE id IN ($1, $2) AND revoked_at IS NOT NULL)
                         + (SELECT count(*) FROM guestpass.refresh_tokens WHERE session_id IN ($1, $2) AND revoked_at IS NOT NULL)
                    """, [onDevice, other]) == 4, "the device's session, the ended one and their refresh tokens are revoked")

            let key = try APIKey.generate(kind: .secret)
            let keyID = try await store.addKey(session: session, app: appX, key: key)
            let page = try await store.app(session: session, app: appX)
            let listed = try #require(
                Self.items(page.objectValue?["keys"] ?? .null).first { $0.objectValue?["id"]?.stringValue == keyID.uuidString.lowercased() })
            #expect(listed.objectValue?["prefix"]?.stringValue == key.prefix && listed.objectValue?["kind"]?.stringValue == "secret")
            #expect(!page.jsonText.contains(key.hash) && !page.jsonText.contains(key.value), "neither the key nor its hash")
            try await store.revokeKey(session: session, app: appX, key: keyID)
            try await store.setAppQuota(session: session, app: appX, dailyFreeAllowance: 7, welcomeGrantCredits: 2)
            let settings = try await store.app(session: session, app: appX).objectValue?["settings"]?.objectValue
            #expect(settings?["daily_free_allowance"] == .number(7) && settings?["welcome_grant_credits"] == .number(2))
            let deleted = try await store.deleteUser(session: session, user: bob, schemas: ["public"])
            #expect(deleted.app == appX && deleted.appleTokens.isEmpty)
            #expect(try await fixture.count("SELECT count(*) FROM public.users WHERE id = $1", [bob]) == 0)

            let audit = try await store.audit(session: session, app: nil, before: nil)
            #expect(
                Self.strings(audit, "action") == [
                    "account_deleted", "app_quota", "key_revoked", "key_created", "session_ended", "device_revoked", "premium", "credits",
                    "credits", "sign_in",
                ], "one row per action, newest first, none for a refusal")
            #expect(Set(Self.strings(audit, "operator_email")) == ["x@example.com"])
            let premium = try #require(Self.items(audit).first { $0.objectValue?["action"]?.stringValue == "premium" }?.objectValue)
            #expect(premium["before"]?.jsonText == #"{"is_premium":false}"# && premium["after"]?.jsonText == #"{"is_premium":true}"#)
            let newest = Int64(try #require(Self.items(audit).first?.objectValue?["id"]?.jsonText))
            #expect(Self.strings(try await store.audit(session: session, app: appX, before: newest), "action").first == "app_quota", "paged")

            let user = try await store.userPage(session: session, user: alice).objectValue ?? [:]
            #expect(user["user"]?.objectValue?["credits_balance"] == .number(3) && user["user"]?.objectValue?["is_premium"] == .bool(true))
            #expect(Self.strings(user["ledger"] ?? .null, "reason") == ["operator: refund", "operator: ticket 7"])
            #expect(Self.strings(user["audit"] ?? .null, "action") == ["session_ended", "device_revoked", "premium", "credits", "credits"])
            await #expect(throws: PostgresError.self, "the audit cannot be changed, even by the owner") {
                try await fixture.owner.execute("UPDATE guestpass.operator_audit SET action = 'x'")
            }
            await #expect(throws: PostgresError.self, "nor deleted") { try await fixture.owner.execute("DELETE FROM guestpass.operator_audit") }
        }
    }

    @Test func usersAreFoundByEachKind() async throws {
        try await Fixture.with { fixture in
            let (store, appX) = (fixture.store, fixture.appX)
            let session = try await fixture.signedIn("all@example.com", apps: [], allApps: true)
            let alice = try await fixture.user(in: appX, email: "Alice@Example.com")
            let device = try await fixture.device(of: alice)
            try await fixture.owner.execute("INSERT INTO guestpass.share_codes (user_id, app_id, code) VALUES ($1, $2, 'ABC234')", [alice, appX])
            try await fixture.owner.execute(
                "INSERT INTO guestpass.identities (app_id, user_id, provider, subject) VALUES ($2, $1, 'apple', '001234.abcdef')", [alice, appX])
            _ = try await fixture.user(in: fixture.appY, email: "alice@example.com")  // the same email in app Y: another user

            for (kind, value) in [
                ("user_id", alice.uuidString), ("device_id", device.uuidString), ("share_code", "abc234"), ("apple_subject", "001234.abcdef"),
            ] {
                let found = try await store.findUsers(session: session, kind: kind, value: value)
                #expect(Self.strings(found, "user_id") == [alice.uuidString.lowercased()], "by \(kind)")
                #expect(Self.strings(found, "app_name") == ["console-x"])
            }
            let byEmail = try await store.findUsers(session: session, kind: "email", value: "ALICE@example.com")
            #expect(Self.strings(byEmail, "app_name").sorted() == ["console-x", "console-y"], "an email in each app, whatever its case")
            #expect(Self.items(try await store.findUsers(session: session, kind: "user_id", value: "not-a-uuid")).isEmpty)
            #expect(Self.items(try await store.findUsers(session: session, kind: "device_id", value: "")).isEmpty)
            await Self.expectInvalid { _ = try await store.findUsers(session: session, kind: "password", value: "x") }
        }
    }

    @Test func operatorsAreCreatedAndListedByTheOwner() async throws {
        try await Fixture.with { fixture in
            let admin = Administration(pool: fixture.owner)
            let scoped = try await admin.createOperator(
                email: "B@example.com", passwordHash: "h", totpSecret: [9], totpRequired: true, allApps: false, apps: [fixture.appX, fixture.appY])
            let all = try await admin.createOperator(
                email: "a@example.com", passwordHash: "h", totpSecret: nil, totpRequired: false, allApps: true, apps: [])
            let list = try await admin.listOperators()
            #expect(list.map(\.id) == [all, scoped] && list.map(\.email) == ["a@example.com", "b@example.com"])
            #expect(list[0].allApps && !list[0].secondFactor && list[0].apps.isEmpty)
            #expect(
                !list[1].allApps && list[1].secondFactor && Set(list[1].apps) == Set([fixture.appX, fixture.appY].map { $0.uuidString.lowercased() }))

            await Self.expectState(.uniqueViolation) {
                _ = try await admin.createOperator(
                    email: "b@EXAMPLE.com", passwordHash: "h", totpSecret: nil, totpRequired: false, allApps: true, apps: [])
            }
            for apps in [[], [UUID()]] {
                await Self.expectState(.invalidParameterValue) {
                    _ = try await admin.createOperator(
                        email: "c@example.com", passwordHash: "h", totpSecret: nil, totpRequired: false, allApps: false, apps: apps)
                }
            }
        }
    }
}
