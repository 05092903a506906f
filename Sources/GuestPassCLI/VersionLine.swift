import GuestPassApp

/// `guestpass --version`: `guestpass <GuestPassVersion.number> (commit <abbreviated hash>)`, the commit the binary was
/// built from (`buildCommit`, written at build time by the BuildCommit plugin), or `(commit unknown)` for a binary
/// built outside a git checkout (a source tarball, a `docker build`).
let versionLine = "guestpass \(GuestPassVersion.number) (commit \(buildCommit ?? "unknown"))"
