import Foundation

/// Runs a program to completion with `posix_spawn` + `waitpid`, its output captured in a temporary file.
///
/// Foundation's `Process.waitUntilExit()` was seen hanging on Linux after the child had exited (when the child
/// started a daemon, e.g. `pg_ctl start`); plain `waitpid` does not.
public enum ChildProcess {
    public struct Outcome: Sendable {
        public let status: Int32
        /// Standard output.
        public let output: String
        /// Standard error.
        public let errors: String
    }

    /// Runs `executable` as `run` does, on a thread of its own, so that waiting for the child blocks no thread of
    /// Swift's cooperative pool (several children may run at once).
    public static func run(
        _ executable: String, _ arguments: [String], environment: [String: String] = [:]
    ) async throws -> Outcome {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(with: Result { try Self.runBlocking(executable, arguments, environment: environment) })
            }
        }
    }

    /// Runs `executable` with `arguments` and extra `environment` entries, capturing stdout and stderr; blocks the
    /// calling thread until the child exits.
    public static func runBlocking(_ executable: String, _ arguments: [String], environment: [String: String] = [:]) throws -> Outcome {
        let outputPath = FileManager.default.temporaryDirectory.appendingPathComponent("gp-child-\(UUID().uuidString).out").path
        let errorPath = outputPath.replacingOccurrences(of: ".out", with: ".err")
        defer {
            try? FileManager.default.removeItem(atPath: outputPath)
            try? FileManager.default.removeItem(atPath: errorPath)
        }

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, errorPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)

        var merged = ProcessInfo.processInfo.environment
        for (key, value) in environment { merged[key] = value }
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = merged.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, executable, &actions, nil, argv, envp)
        guard spawned == 0 else {
            throw ClusterError("could not start \(executable): \(String(cString: strerror(spawned)))")
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            guard errno == EINTR else { throw ClusterError("waitpid failed for \(executable)") }
        }
        let exitCode: Int32 = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        let output = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        let errors = (try? String(contentsOfFile: errorPath, encoding: .utf8)) ?? ""
        return Outcome(status: exitCode, output: output, errors: errors)
    }
}
