import Foundation
import GuestPassMail
import GuestPassTestSupport
import Testing

/// A failure of the test harness itself (no Python, the catcher did not start), with a message saying what to do.
struct HarnessError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// One line of the catcher's `index.jsonl`.
struct CatcherEntry: Decodable, Sendable {
    let seq: Int
    let mail_from: String
    let rcpt_tos: [String]
    let subject: String
    let received_at: String
    let peer: String
    let tls: Bool
    let auth_user: String?
}

/// `scripts/mail-catcher` running as a child process on a free loopback port, storing into a temporary directory
/// (removed by `stop`), with a throwaway self-signed certificate for `localhost` and `127.0.0.1`.
///
/// The Python comes from `GUESTPASS_TEST_PYTHON` (`./scripts/test` points it at `.venv/bin/python`); when it is unset
/// or lacks aiosmtpd, `start` throws, so the SMTP tests fail with that message instead of passing silently.
final class MailCatcher: Sendable {
    static let username = "user"
    static let password = "pass"

    let port: Int
    let directory: URL
    let certificate: String
    private let pid: pid_t

    private init(port: Int, directory: URL, certificate: String, pid: pid_t) {
        self.port = port
        self.directory = directory
        self.certificate = certificate
        self.pid = pid
    }

    /// Runs `body` against a catcher started with `arguments` (besides `--dir`, `--port 0`, `--ready-file` and, when
    /// `tls`, the certificate); stops it afterwards, whether `body` threw or not.
    static func with<T>(
        tls: Bool = true,
        _ arguments: [String] = ["--require-tls", "--auth", "\(username):\(password)"],
        _ body: (MailCatcher) async throws -> T
    ) async throws -> T {
        let catcher = try await Self.start(tls: tls, arguments: arguments)
        do {
            let result = try await body(catcher)
            await catcher.stop()
            return result
        } catch {
            await catcher.stop()
            throw error
        }
    }

    private static func start(tls: Bool, arguments: [String]) async throws -> MailCatcher {
        let python = try await Self.python()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("gp-mail-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let certificate = directory.appendingPathComponent("cert.pem").path
        let key = directory.appendingPathComponent("key.pem").path
        var allArguments = [
            Self.repoRoot().appendingPathComponent("scripts/mail-catcher").path,
            "--port", "0", "--dir", directory.appendingPathComponent("box").path,
            "--ready-file", directory.appendingPathComponent("ready").path,
        ]
        if tls {
            let openssl = try Self.executable("openssl")
            let made = try await ChildProcess.run(
                openssl,
                [
                    "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1",
                    "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
                    "-keyout", key, "-out", certificate,
                ]
            )
            guard made.status == 0 else { throw HarnessError("openssl could not make a certificate: \(made.errors)") }
            allArguments += ["--tls-cert", certificate, "--tls-key", key]
        }
        allArguments += arguments
        let pid = try Self.spawn(python, allArguments, output: directory.appendingPathComponent("catcher.log").path)
        let readyFile = directory.appendingPathComponent("ready").path
        let ready = try await eventually(timeout: .seconds(30)) {
            FileManager.default.fileExists(atPath: readyFile) || Self.hasExited(pid)
        }
        let log = (try? String(contentsOf: directory.appendingPathComponent("catcher.log"), encoding: .utf8)) ?? ""
        guard ready, let text = try? String(contentsOfFile: readyFile, encoding: .utf8),
            let port = Int(text.trimmingCharacters(in: .whitespacesAndNewlines))
        else {
            await Self.terminate(pid)
            throw HarnessError("scripts/mail-catcher did not start: \(log)")
        }
        return MailCatcher(port: port, directory: directory, certificate: certificate, pid: pid)
    }

    /// Stops the catcher and removes its directory.
    func stop() async {
        await Self.terminate(self.pid)
        try? FileManager.default.removeItem(at: self.directory)
    }

    /// Settings for this catcher: STARTTLS, `user` with `password`, trusting its certificate when `trustCertificate`.
    func settings(
        password: String = MailCatcher.password,
        trustCertificate: Bool = true,
        security: SMTPSettings.Security = .startTLS,
        timeout: Duration = .seconds(15)
    ) throws -> SMTPSettings {
        try SMTPSettings(
            host: "127.0.0.1",
            port: self.port,
            username: security == .plain ? nil : Self.username,
            password: security == .plain ? nil : password,
            security: security,
            caFile: trustCertificate ? self.certificate : nil,
            timeout: timeout
        )
    }

    /// The index lines so far.
    func entries() throws -> [CatcherEntry] {
        let path = self.directory.appendingPathComponent("box/index.jsonl")
        guard let data = FileManager.default.contents(atPath: path.path) else { return [] }
        // Only whole lines: the catcher appends each in one write, and a half-written last line has no newline yet.
        let lines = data.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).dropLast()
        return try lines.filter { !$0.isEmpty }.map { try JSONDecoder().decode(CatcherEntry.self, from: Data($0)) }
    }

    /// The index lines once there are at least `count` (or what there is after `timeout`).
    func waitForEntries(_ count: Int, timeout: Duration = .seconds(20)) async throws -> [CatcherEntry] {
        _ = try await eventually(timeout: timeout) { try self.entries().count >= count }
        return try self.entries()
    }

    /// The bytes of message `seq` as stored.
    func message(_ seq: Int) throws -> [UInt8] {
        let path = self.directory.appendingPathComponent(String(format: "box/%06d.eml", seq)).path
        guard let data = FileManager.default.contents(atPath: path) else { throw HarnessError("no message \(seq)") }
        return Array(data)
    }

    /// What the catcher printed.
    func log() -> String {
        (try? String(contentsOf: self.directory.appendingPathComponent("catcher.log"), encoding: .utf8)) ?? ""
    }

    // MARK: Process plumbing

    /// `GUESTPASS_TEST_PYTHON`, checked to import aiosmtpd.
    private static func python() async throws -> String {
        guard let python = ProcessInfo.processInfo.environment["GUESTPASS_TEST_PYTHON"], !python.isEmpty else {
            throw HarnessError(
                "GUESTPASS_TEST_PYTHON is not set: the SMTP tests run scripts/mail-catcher with a Python that has aiosmtpd "
                    + "(./scripts/test sets it to .venv/bin/python; or export it to a venv with `pip install aiosmtpd`)"
            )
        }
        let check = try await ChildProcess.run(python, ["-c", "import aiosmtpd"])
        guard check.status == 0 else {
            throw HarnessError("GUESTPASS_TEST_PYTHON (\(python)) cannot import aiosmtpd: run `\(python) -m pip install aiosmtpd`")
        }
        return python
    }

    /// `GUESTPASS_REPO_ROOT`, or the folder above this file that holds `Package.swift`.
    static func repoRoot() -> URL {
        if let root = ProcessInfo.processInfo.environment["GUESTPASS_REPO_ROOT"], !root.isEmpty {
            return URL(fileURLWithPath: root)
        }
        var folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        while folder.path != "/" {
            if FileManager.default.fileExists(atPath: folder.appendingPathComponent("Package.swift").path) { return folder }
            folder = folder.deletingLastPathComponent()
        }
        return URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    }

    private static func executable(_ name: String) throws -> String {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for folder in path.split(separator: ":") where FileManager.default.isExecutableFile(atPath: "\(folder)/\(name)") {
            return "\(folder)/\(name)"
        }
        throw HarnessError("\(name) is not on PATH")
    }

    /// Starts `executable` in the background, stdin from /dev/null, stdout and stderr to `output`.
    private static func spawn(_ executable: String, _ arguments: [String], output: String) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = ProcessInfo.processInfo.environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for pointer in argv + envp { free(pointer) }
        }
        // The spawning thread may block signals (a test runner's threads do), and a child inherits that mask: give it
        // an empty mask and default handlers, or it would never see the SIGTERM that stops it.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGTERM, SIGINT, SIGHUP, SIGPIPE] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
        guard spawned == 0 else { throw HarnessError("could not start \(executable): \(String(cString: strerror(spawned)))") }
        return pid
    }

    /// Whether the child has exited (it is then reaped); also true when it is no child of ours any more.
    private static func hasExited(_ pid: pid_t) -> Bool {
        var status: Int32 = 0
        let result = waitpid(pid, &status, WNOHANG)
        return result == pid || (result < 0 && errno == ECHILD)
    }

    /// SIGTERM, up to 5 s for the child to exit (polled, so no thread blocks), then SIGKILL and the reaping.
    private static func terminate(_ pid: pid_t) async {
        kill(pid, SIGTERM)
        if (try? await eventually(timeout: .seconds(5), { Self.hasExited(pid) })) == true { return }
        kill(pid, SIGKILL)
        _ = try? await eventually(timeout: .seconds(5)) { Self.hasExited(pid) }
    }
}
