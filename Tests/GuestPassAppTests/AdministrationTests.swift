import Foundation
import GuestPassApp
import GuestPassPostgres
import Testing
@testable import GuestPassStore

/// The operator's operations go through the API's own SQL functions.
@Suite struct AdministrationTests {
    @Test func premiumAndCreditsGoThroughTheirFunctions() async throws {
        try await TestService.with { service in
            let admin = Administration(pool: service.owner)
            let (app, _, _) = try await admin.createApp(name: "admin-test")
            let user: UUID = try await service.owner.execute("INSERT INTO public.users (app_id) VALUES ($1) RETURNING id", [app]).rows[0].decode(
                at: 0)

            #expect(try await admin.setPremium(user: user, premium: true))
            #expect(try await service.count("SELECT count(*) FROM public.users WHERE id = $1 AND is_premium", [user]) == 1)
            #expect(try await admin.setPremium(user: UUID(), premium: true) == false, "an unknown user is reported, not ignored")

            #expect(try await admin.grantCredits(user: user, amount: 5, reason: "admin_grant") == 5)
            #expect(try await service.count("SELECT count(*) FROM guestpass.credit_ledger WHERE user_id = $1 AND change = 5", [user]) == 1)

            var settings = Administration.AppSettings()
            settings.dailyFreeAllowance = 7
            #expect(try await admin.configureApp(app, settings))
            #expect(try await service.count("SELECT daily_free_allowance FROM guestpass.apps WHERE id = $1", [app]) == 7)
            #expect(try await admin.configureApp(UUID(), settings) == false)
            settings.deviceCheckEnvironment = "staging"
            await #expect(throws: PostgresError.self, "the table's checks validate settings") { try await admin.configureApp(app, settings) }
        }
    }
}
