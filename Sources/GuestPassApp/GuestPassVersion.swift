/// GuestPass's version: the one place its number lives. `guestpass --version` prints it with the commit the binary
/// was built from (`guestpass 0.1.0 (commit abc1234)`), and `GET /openapi.json` carries it as `info.version`
/// (`OpenAPIDocument` writes it over the document's placeholder), so the two cannot disagree.
public enum GuestPassVersion {
    /// Semantic versioning; 0.x until a first release.
    public static let number = "0.1.0"
}
