/// Every request-body limit of the API, in one place: the routes read them from here, and `BodyLimitsTests` compares
/// them with the README's sentence ("at most 32 KiB for sign-up, 4 KiB for tokens, 8 KiB for the welcome grant and
/// 1 MiB for RPC") and its table API's limit, so the documents and the code cannot drift apart. A body one byte over
/// its limit is 413 before it is parsed (`Request.jsonObject(limit:)`); `e2e/test_request_bodies.py` sends limit + 1
/// bytes to each route.
enum BodyLimits {
    /// `POST /auth/v1/signup` and `PUT /auth/v1/user`: `data` holds at most 16 KiB of metadata plus the device id,
    /// the device facts and the codes.
    static let signUp = 32 * 1024
    /// `POST /auth/v1/token`, both grants: a refresh token, or an Apple identity token (about 1 KiB) with a nonce and
    /// an authorization code (at most 1 KiB each); also `POST /v1/account/merge` (a guest's refresh token).
    static let token = 4 * 1024
    /// `POST /v1/devicecheck/grant`: one DeviceCheck token (about 2.5 KiB of base64).
    static let welcomeGrant = 8 * 1024
    /// `POST /rest/v1/rpc/<fn>`: named arguments as one JSON object, as PostgREST's default.
    static let rpc = 1024 * 1024
    /// `POST`/`PATCH /rest/v1/<table>`: the table API's write body (1,000 example rows take about 60 KiB).
    static let tableWrite = 1024 * 1024
}
