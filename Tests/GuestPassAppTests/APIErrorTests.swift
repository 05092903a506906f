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

    /// PostgREST's `Error.hs`: 42P17 (a policy that recurses) and 54001 (a trigger that does) are 500 with
    /// PostgreSQL's own message, which names the app's relation, not the masked "Unexpected failure".
    @Test func aRecursingPolicyOrTriggerIsA500ThatSaysSo() {
        let recursion = PostgresError(
            .server, message: #"infinite recursion detected in policy for relation "readings""#, sqlState: .infiniteRecursion)
        let answer = APIError.answer(for: recursion, dialect: .postgREST, anonymous: false)
        #expect(answer.status == .internalServerError && answer.code == "42P17" && answer.message.contains("readings"))
        let tooDeep = PostgresError(.server, message: "stack depth limit exceeded", sqlState: .statementTooComplex, hint: "Increase …")
        let deep = APIError.answer(for: tooDeep, dialect: .postgREST, anonymous: false)
        #expect(deep.status == .internalServerError && deep.message == "stack depth limit exceeded" && deep.hint == "Increase …")
    }

    /// An app's `RAISE SQLSTATE 'PGRST'` answers as its JSON says; not JSON is PostgREST's 500 `PGRST121`.
    @Test func anAppsPGRSTRaiseControlsTheResponse() {
        let raised = PostgresError(
            .server, message: #"{"code":"123","message":"ABC","details":"DEF","hint":"XYZ"}"#, sqlState: .postgREST,
            detail: #"{"status":332,"status_text":"My Custom Status","headers":{"X-Header":"str"}}"#)
        let answer = APIError.answer(for: raised, dialect: .postgREST, anonymous: true)
        #expect(answer.status.code == 332 && answer.status.reasonPhrase == "My Custom Status")
        #expect(answer.code == "123" && answer.message == "ABC" && answer.details == "DEF" && answer.hint == "XYZ")
        #expect(answer.headers[HTTPField.Name("X-Header")!] == "str")
        let noDetail = PostgresError(.server, message: #"{"code":"1","message":"m"}"#, sqlState: .postgREST)
        let unparsed = APIError.answer(for: noDetail, dialect: .postgREST, anonymous: true)
        #expect(unparsed.status == .internalServerError && unparsed.code == "PGRST121")
        #expect(unparsed.details == "DETAIL is missing in the RAISE statement")
        let notJSON = PostgresError(.server, message: "oops", sqlState: .postgREST, detail: "{}")
        #expect(APIError.answer(for: notJSON, dialect: .postgREST, anonymous: true).details == "Invalid JSON value for MESSAGE: 'oops'")
    }

    /// A refused bearer token in PostgREST's words on `/rest/v1` (`PostgRESTTokenComplaint`), from its shape alone.
    @Test func aRefusedTokenIsDescribedAsPostgRESTDescribesIt() {
        let twoParts = PostgRESTTokenComplaint(bearer: "eyJhbGciOiJIUzI1NiJ9.e30", refusal: .malformed)
        #expect(twoParts.code == "PGRST301" && twoParts.message == "Expected 3 parts in JWT; got 2")
        #expect(PostgRESTTokenComplaint(bearer: "a.b.c", refusal: .malformed).message == "JWT cryptographic operation failed")
        let none = PostgRESTTokenComplaint(bearer: "eyJ0eXAiOiJKV1QiLCJhbGciOiJub25lIn0.e30.x", refusal: .invalid)
        #expect(none.message == "Wrong or unsupported encoding algorithm" && none.details == "JWT is unsecured but expected 'alg' was not 'none'")
        let expired = PostgRESTTokenComplaint(bearer: "eyJhbGciOiJFUzI1NiJ9.e30.x", refusal: .expired)
        #expect(expired.code == "PGRST303" && expired.message == "JWT expired")
        let otherKey = PostgRESTTokenComplaint(bearer: "eyJhbGciOiJIUzI1NiJ9.e30.x", refusal: .invalid)
        #expect(otherKey.message == "No suitable key or wrong key type" && otherKey.details == "None of the keys was able to decode the JWT")
    }
}
