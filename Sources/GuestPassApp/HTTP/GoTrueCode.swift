/// The error codes of the GoTrue dialect (`/auth/v1` and GuestPass's own `/v1`): one name each, so that a route, the
/// error mapping and a test cannot disagree on a spelling. The codes are GoTrue's where GoTrue has one.
enum GoTrueCode {
    /// 400: the body is not the JSON the route takes.
    static let badJson = "bad_json"
    /// 401: the bearer token does not verify (signature, issuer, app, format).
    static let badJwt = "bad_jwt"
    static let badOauthCallback = "bad_oauth_callback"
    /// 400: the HTTP layer refused the request.
    static let badRequest = "bad_request"
    /// 503: the database is down or busy; retry.
    static let databaseUnavailable = "database_unavailable"
    static let deviceInUse = "device_in_use"
    static let deviceRevoked = "device_revoked"
    static let deviceTokenReused = "device_token_reused"
    static let devicecheckBusy = "devicecheck_busy"
    static let devicecheckNotConfigured = "devicecheck_not_configured"
    static let devicecheckUnavailable = "devicecheck_unavailable"
    static let emailProviderDisabled = "email_provider_disabled"
    /// 422: the address belongs to another user of the app.
    static let emailExists = "email_exists"
    /// 400: the password was right, but the address is not confirmed yet.
    static let emailNotConfirmed = "email_not_confirmed"
    /// 404 / 403: a PKCE authorization code that is unknown, used or old, or a verifier that does not match it.
    static let flowStateNotFound = "flow_state_not_found"
    static let badCodeVerifier = "bad_code_verifier"
    /// 400: unknown address, no password, or a wrong one (one answer for all three).
    static let invalidCredentials = "invalid_credentials"
    /// 403: the one-time code or link is wrong, used, expired or dead after 5 wrong tries.
    static let otpExpired = "otp_expired"
    /// 422: a one-time code for an unknown address with `create_user: false`.
    static let otpDisabled = "otp_disabled"
    /// 429: mail to this address (or the app's hourly mail) is throttled.
    static let overEmailSendRateLimit = "over_email_send_rate_limit"
    /// 400 / 422: a password change needs a reauthentication nonce, or the one sent is not valid.
    static let reauthenticationNeeded = "reauthentication_needed"
    static let reauthenticationNotValid = "reauthentication_not_valid"
    /// 422: the new password is the current one.
    static let samePassword = "same_password"
    /// 422: sign-up with a confirmed address when the app autoconfirms.
    static let userAlreadyExists = "user_already_exists"
    /// 422: the password breaks the app's rules; the body lists `weak_password.reasons`.
    static let weakPassword = "weak_password"
    static let grantInProgress = "grant_in_progress"
    static let identityAlreadyExists = "identity_already_exists"
    /// 401: an unknown, revoked or malformed API key.
    static let invalidApiKey = "invalid_api_key"
    static let invalidDeviceToken = "invalid_device_token"
    static let invalidRecoveryCode = "invalid_recovery_code"
    static let invalidTransferCode = "invalid_transfer_code"
    static let mergeConflict = "merge_conflict"
    /// 405: the path does not serve this method; `Allow` lists those it does.
    static let methodNotAllowed = "method_not_allowed"
    /// 401: no `apikey` header (or `?apikey=` for a publishable key).
    static let noApiKey = "no_api_key"
    /// 401: the route needs a signed-in user's bearer token.
    static let noAuthorization = "no_authorization"
    static let notAGuest = "not_a_guest"
    /// 404: no such route.
    static let notFound = "not_found"
    /// 429: a rate limit; `Retry-After` says when.
    static let overRequestRateLimit = "over_request_rate_limit"
    /// 422: `PUT /auth/v1/user` with a phone number (phones are not offered).
    static let phoneChangeDisabled = "phone_change_disabled"
    static let providerDisabled = "provider_disabled"
    /// 429: the Realtime socket limit per address or app is reached.
    static let realtimeTooManyConnections = "too_many_connections"
    /// 400: a Realtime socket asked for a `vsn` other than 1.0.0 and 2.0.0.
    static let realtimeUnsupportedVersion = "unsupported_vsn"
    /// 426: a plain HTTP request to the Realtime socket's path.
    static let realtimeUpgradeRequired = "websocket_upgrade_required"
    static let providerUnavailable = "provider_unavailable"
    static let refreshTokenAlreadyUsed = "refresh_token_already_used"
    static let refreshTokenNotFound = "refresh_token_not_found"
    /// 413: the body is over the route's limit (`BodyLimits`).
    static let requestTooLarge = "request_too_large"
    static let sameUser = "same_user"
    /// 401: a secret key in the URL (proxies log URLs).
    static let secretKeyInUrl = "secret_key_in_url"
    /// 403: the access token verified, but its session or user is gone (logout, revoked device, deleted account).
    static let sessionNotFound = "session_not_found"
    /// 503: the statement ran out of time; retry.
    static let statementTimeout = "statement_timeout"
    /// 401: the access token has expired.
    static let tokenExpired = "token_expired"
    /// 500: a failure of the server's own; logged, never detailed.
    static let unexpectedFailure = "unexpected_failure"
    static let unsupportedGrantType = "unsupported_grant_type"
    /// 400: a value the route refuses.
    static let validationFailed = "validation_failed"
}
