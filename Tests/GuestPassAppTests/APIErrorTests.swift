import GuestPassPostgres
import Testing

@testable import GuestPassApp
import HTTPTypes

/// The one error mapping (`APIError.answer(for:dialect:anonymous:)`): statuses and codes of both dialects.
@Suite struct APIErrorTests {
    /// Found by schemathesis (issue 13): after a logout the access token still verifies, and the account routes' SQL
    /// refuses it with 42501, which the GoTrue dialect answered as a 500.
    @Test func aRefusedTokenIsA403InTheGoTrueDialect() {
        let refused = PostgresError(.server, message: "the session has ended", sqlState: .insufficientPrivilege)
        let goTrue = APIError.answer(for: refused, dialect: .goTrue, anonymous: false)
        #expect(goTrue.status == .forbidden)
        #expect(goTrue.code == GoTrueCode.sessionNotFound)
        #expect(!goTrue.message.contains("ended"), "the database's own words stay inside")
        let postgREST = APIError.answer(for: refused, dialect: .postgREST, anonymous: false)
        #expect(postgREST.status == .forbidden && postgREST.code == SQLState.insufficientPrivilege.rawValue)
    }

    @Test func anUnknownDatabaseFailureIsStillA500() {
        let failure = PostgresError(.server, message: "boom", sqlState: SQLState("XX000"))
        #expect(APIError.answer(for: failure, dialect: .goTrue, anonymous: false).status == .internalServerError)
    }
}
