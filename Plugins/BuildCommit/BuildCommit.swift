import Foundation
import PackagePlugin

/// Stamps the `guestpass` binary with the git commit it is built from: a build command runs `build-commit.sh`, which
/// writes `BuildCommit.swift` (`let buildCommit: String?`, the abbreviated hash of HEAD, nil outside a git checkout)
/// into the target it is applied to (GuestPassCLI, for `guestpass --version`).
///
/// Why a build command with git's files as its inputs, and not something lighter (each tried with SwiftPM 6.3):
/// - `Context.gitInformation` in Package.swift: SwiftPM caches the evaluated manifest and does not evaluate it again
///   when HEAD moves, so the commit is stale after the next commit.
/// - A prebuild command: SwiftPM runs it only when it plans the build anew (a manifest or source-set change), not on
///   every `swift build`; stale after a commit too.
/// - A committed generated file is stale by construction; one written by the scripts that build (`scripts/serve`,
///   `scripts/test`, `docker/Dockerfile`) is skipped by a `swift build` run by hand.
///
/// This command declares `HEAD` and `logs/HEAD` of the checkout's git directory as its inputs (the reflog gets a line
/// on every commit, checkout, reset, merge, rebase and pull), so the build system runs it when HEAD may have moved,
/// and otherwise not at all: a `swift build` with nothing changed stays a no-op. The script rewrites its file only
/// when the text changes, so a checkout that comes back to the same commit recompiles nothing. No network, nothing
/// to install but git, and a fresh clone works. Only files git never deletes are inputs: the build system fails a
/// build whose declared input is gone (a branch's ref file goes when `git gc` packs refs).
///
/// Limits: without a `.git` (a source tarball; `docker build`, whose context leaves `.git` out) the binary says
/// `commit unknown`; so does a package directory that is not the top of its git checkout (vendored into another
/// repository), rather than naming the other repository's commit. Uncommitted changes are not marked. With the reflog
/// turned off (`core.logAllRefUpdates=false`) only a change of branch is noticed, not a commit. A `.git` deleted
/// after a build fails the next one ("missing inputs") until SwiftPM plans again: `touch Package.swift`.
@main
struct BuildCommit: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: any Target) throws -> [Command] {
        let package = context.package.directoryURL
        let script = package.appending(path: "Plugins/BuildCommit/build-commit.sh")
        let output = context.pluginWorkDirectoryURL.appending(path: "BuildCommit.swift")
        return [
            .buildCommand(
                displayName: "Stamping the git commit of \(target.name)",
                executable: URL(fileURLWithPath: "/bin/sh"),
                arguments: [script.path, package.path, output.path],
                environment: ["PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"],
                inputFiles: [script] + GitFiles(package: package).headInputs,
                outputFiles: [output]
            )
        ]
    }
}

/// The files of a checkout's git directory that change when its HEAD moves; read from the file system, no git run.
struct GitFiles {
    /// The checkout's own git directory (`.git`, or where a worktree's `.git` file points); nil outside a checkout.
    let gitDirectory: URL?

    init(package: URL) {
        let dotGit = package.appending(path: ".git")
        var isDirectory: ObjCBool = false
        if !FileManager.default.fileExists(atPath: dotGit.path, isDirectory: &isDirectory) {
            self.gitDirectory = nil
        } else if isDirectory.boolValue {
            self.gitDirectory = dotGit
        } else {
            self.gitDirectory = Self.pointer(in: dotGit, relativeTo: package)
        }
    }

    /// `HEAD` and `logs/HEAD`, those of them that exist.
    var headInputs: [URL] {
        guard let gitDirectory else { return [] }
        return [gitDirectory.appending(path: "HEAD"), gitDirectory.appending(path: "logs/HEAD")].filter {
            FileManager.default.fileExists(atPath: $0.path)
        }
    }

    /// The directory a worktree's `.git` file points at (`gitdir: <path>`, absolute or relative to `base`).
    private static func pointer(in file: URL, relativeTo base: URL) -> URL? {
        let prefix = "gitdir: "
        guard let text = try? String(contentsOf: file, encoding: .utf8), text.hasPrefix(prefix) else { return nil }
        let path = text.dropFirst(prefix.count).trimmingCharacters(in: .whitespacesAndNewlines)
        guard !path.isEmpty else { return nil }
        return path.hasPrefix("/") ? URL(fileURLWithPath: path).standardizedFileURL : base.appending(path: path).standardizedFileURL
    }
}
