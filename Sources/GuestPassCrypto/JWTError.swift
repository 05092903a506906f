/// Why a JWT was rejected (or could not be produced).
///
/// Equality compares the reason only. The description names the reason and never includes the token, its
/// claims or any key material, so it is safe to log.
public struct JWTError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The reason code; a struct so that new codes can be added without breaking `switch`es.
    public struct Reason: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }
        public var description: String { self.name }

        /// Not a compact JWS: wrong number of segments, bad base64url, header or payload not a strict JSON
        /// object (duplicate members included), or the token is longer than the verifier accepts.
        public static let malformed = Reason("malformed")
        /// The header's `alg` is missing, `none`, or not one of ES256, HS256, RS256.
        public static let unsupportedAlgorithm = Reason("unsupportedAlgorithm")
        /// The header carries `crit`, which this verifier does not implement (RFC 7515 §4.1.11).
        public static let unsupportedHeader = Reason("unsupportedHeader")
        /// No configured key matches the `kid` (or, without `kid`, not exactly one key has the header's `alg`).
        public static let unknownKey = Reason("unknownKey")
        /// The header's `alg` differs from the algorithm of the key selected by `kid`.
        public static let algorithmMismatch = Reason("algorithmMismatch")
        /// The signature does not verify (including a DER or otherwise wrongly sized ES256 signature).
        public static let badSignature = Reason("badSignature")
        /// `exp` is in the past (beyond the leeway).
        public static let expired = Reason("expired")
        /// `nbf` is in the future (beyond the leeway).
        public static let notYetValid = Reason("notYetValid")
        /// `iat` is in the future (beyond the leeway).
        public static let issuedInFuture = Reason("issuedInFuture")
        /// A claim the verifier requires (`exp`, or `iss`/`aud` when it checks them) is absent.
        public static let missingClaim = Reason("missingClaim")
        /// `aud` names none of the accepted audiences, or is present when the verifier accepts none.
        public static let wrongAudience = Reason("wrongAudience")
        /// `iss` is not an accepted issuer.
        public static let wrongIssuer = Reason("wrongIssuer")
        /// The header's `typ` is not the one the verifier expects.
        public static let wrongType = Reason("wrongType")
        /// A registered claim has the wrong JSON type, or the payload does not decode as the requested claims type.
        public static let invalidClaims = Reason("invalidClaims")
        /// The verifier was configured with two keys sharing one `kid`.
        public static let duplicateKeyID = Reason("duplicateKeyID")
    }

    /// The reason code.
    public let reason: Reason

    public init(_ reason: Reason) {
        self.reason = reason
    }

    public var description: String { "JWTError(\(self.reason))" }
}
