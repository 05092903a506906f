import Foundation
import GuestPassPostgres

/// The history tables: `guestpass_migrations.history`, one row per applied versioned file, and
/// `guestpass_migrations.repeatables`, one row per repeatable file with the checksum it was last applied with.
enum History {
    struct Key: Hashable {
        let scope: String
        let version: String
    }

    struct Entry {
        let name: String
        let checksum: String
        let success: Bool
        let appliedAt: Date
        let durationMilliseconds: Int
    }

    static func create(on connection: PostgresConnection) throws {
        try connection.executeScript(
            """
            CREATE SCHEMA IF NOT EXISTS guestpass_migrations;
            COMMENT ON SCHEMA guestpass_migrations IS 'Bookkeeping of guestpass migrate; never exposed to clients.';
            CREATE TABLE IF NOT EXISTS guestpass_migrations.history (
                scope         text        NOT NULL CHECK (scope IN ('core', 'app')),
                version       text        NOT NULL,
                name          text        NOT NULL,
                checksum      text        NOT NULL,
                transactional boolean     NOT NULL,
                success       boolean     NOT NULL,
                applied_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
                duration_ms   integer     NOT NULL DEFAULT 0,
                applied_by    text        NOT NULL DEFAULT current_user,
                PRIMARY KEY (scope, version)
            );
            COMMENT ON TABLE guestpass_migrations.history IS
                'One row per applied migration file: version, name, SHA-256 checksum, when and how long it took.';
            CREATE OR REPLACE FUNCTION guestpass_migrations.refuse_unfinished_commit() RETURNS trigger
                LANGUAGE plpgsql SET search_path = '' AS $$
            BEGIN
                IF EXISTS (SELECT 1 FROM guestpass_migrations.history h
                           WHERE h.scope = NEW.scope AND h.version = NEW.version AND h.transactional AND NOT h.success) THEN
                    RAISE EXCEPTION 'migration %_% ended the transaction itself; remove its BEGIN/COMMIT', NEW.version, NEW.name
                        USING ERRCODE = '2D000';
                END IF;
                RETURN NULL;
            END $$;
            COMMENT ON FUNCTION guestpass_migrations.refuse_unfinished_commit() IS
                'Deferred check: a transactional migration may only commit once the runner marked it done, so a file''s own COMMIT fails and rolls back.';
            DO $$ BEGIN
                IF NOT EXISTS (SELECT 1 FROM pg_trigger WHERE tgname = 'history_refuse_unfinished_commit') THEN
                    CREATE CONSTRAINT TRIGGER history_refuse_unfinished_commit
                        AFTER INSERT ON guestpass_migrations.history DEFERRABLE INITIALLY DEFERRED
                        FOR EACH ROW EXECUTE FUNCTION guestpass_migrations.refuse_unfinished_commit();
                END IF;
            END $$;
            ALTER TABLE guestpass_migrations.history ENABLE ROW LEVEL SECURITY;
            REVOKE ALL ON SCHEMA guestpass_migrations FROM PUBLIC;
            REVOKE ALL ON guestpass_migrations.history FROM PUBLIC;

            CREATE TABLE IF NOT EXISTS guestpass_migrations.repeatables (
                scope       text        NOT NULL CHECK (scope IN ('core', 'app')),
                name        text        NOT NULL,
                checksum    text        NOT NULL,
                success     boolean     NOT NULL,
                applied_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
                duration_ms integer     NOT NULL DEFAULT 0,
                applied_by  text        NOT NULL DEFAULT current_user,
                PRIMARY KEY (scope, name)
            );
            ALTER TABLE guestpass_migrations.repeatables ADD COLUMN IF NOT EXISTS applied_count integer NOT NULL DEFAULT 1;
            COMMENT ON TABLE guestpass_migrations.repeatables IS
                'One row per repeatable file (repeatable/<name>.sql): the SHA-256 checksum it was last applied with, when, '
                'and how many times; the file is applied again whenever its checksum differs.';
            CREATE OR REPLACE FUNCTION guestpass_migrations.refuse_unfinished_repeatable() RETURNS trigger
                LANGUAGE plpgsql SET search_path = '' AS $$
            BEGIN
                IF EXISTS (SELECT 1 FROM guestpass_migrations.repeatables r
                           WHERE r.scope = NEW.scope AND r.name = NEW.name AND NOT r.success) THEN
                    RAISE EXCEPTION 'repeatable/%.sql ended the transaction itself; remove its BEGIN/COMMIT', NEW.name
                        USING ERRCODE = '2D000';
                END IF;
                RETURN NULL;
            END $$;
            COMMENT ON FUNCTION guestpass_migrations.refuse_unfinished_repeatable() IS
                'Deferred check: a repeatable file may only commit once the runner marked it done, so a file''s own COMMIT fails and rolls back.';
            DO $$ BEGIN
                IF NOT EXISTS (SELECT 1 FROM pg_trigger WHERE tgname = 'repeatables_refuse_unfinished_commit') THEN
                    CREATE CONSTRAINT TRIGGER repeatables_refuse_unfinished_commit
                        AFTER INSERT OR UPDATE ON guestpass_migrations.repeatables DEFERRABLE INITIALLY DEFERRED
                        FOR EACH ROW EXECUTE FUNCTION guestpass_migrations.refuse_unfinished_repeatable();
                END IF;
            END $$;
            ALTER TABLE guestpass_migrations.repeatables ENABLE ROW LEVEL SECURITY;
            REVOKE ALL ON guestpass_migrations.repeatables FROM PUBLIC;
            """
        )
    }

    static func exists(on connection: PostgresConnection) throws -> Bool {
        try connection.execute("SELECT to_regclass('guestpass_migrations.history') IS NOT NULL").rows[0].decode(Bool.self, at: 0)
    }

    static func repeatablesExist(on connection: PostgresConnection) throws -> Bool {
        try connection.execute("SELECT to_regclass('guestpass_migrations.repeatables') IS NOT NULL").rows[0].decode(Bool.self, at: 0)
    }

    /// The recorded repeatable files, keyed by scope and name (the `Key`'s `version` holds the name).
    static func loadRepeatables(from connection: PostgresConnection) throws -> [Key: Entry] {
        let result = try connection.execute(
            "SELECT scope, name, checksum, success, applied_at, duration_ms FROM guestpass_migrations.repeatables"
        )
        var entries: [Key: Entry] = [:]
        for row in result.rows {
            let name: String = try row.decode(at: 1)
            entries[Key(scope: try row.decode(at: 0), version: name)] = Entry(
                name: name, checksum: try row.decode(at: 2), success: try row.decode(at: 3),
                appliedAt: try row.decode(at: 4), durationMilliseconds: try row.decode(at: 5)
            )
        }
        return entries
    }

    /// Records that `file` is being applied (unfinished until `markRepeatableSucceeded`, in the same transaction).
    static func recordRepeatable(_ file: MigrationFile, on connection: PostgresConnection) throws {
        try connection.execute(
            """
            INSERT INTO guestpass_migrations.repeatables AS r (scope, name, checksum, success)
            VALUES ($1, $2, $3, false)
            ON CONFLICT (scope, name) DO UPDATE SET
                checksum = excluded.checksum, success = false, applied_at = clock_timestamp(),
                applied_by = current_user, applied_count = r.applied_count + 1
            """,
            [file.scope.rawValue, file.name, file.checksum]
        )
    }

    static func markRepeatableSucceeded(_ file: MigrationFile, duration: Duration, on connection: PostgresConnection) throws {
        try connection.execute(
            "UPDATE guestpass_migrations.repeatables SET success = true, duration_ms = $3 WHERE scope = $1 AND name = $2",
            [file.scope.rawValue, file.name, duration.milliseconds]
        )
    }

    /// Forgets a repeatable file that no longer exists (its objects stay until a versioned file drops them).
    static func forgetRepeatable(scope: MigrationScope, name: String, on connection: PostgresConnection) throws {
        try connection.execute(
            "DELETE FROM guestpass_migrations.repeatables WHERE scope = $1 AND name = $2", [scope.rawValue, name]
        )
    }

    static func load(from connection: PostgresConnection) throws -> [Key: Entry] {
        let result = try connection.execute(
            "SELECT scope, version, name, checksum, success, applied_at, duration_ms FROM guestpass_migrations.history"
        )
        var entries: [Key: Entry] = [:]
        for row in result.rows {
            entries[Key(scope: try row.decode(at: 0), version: try row.decode(at: 1))] = Entry(
                name: try row.decode(at: 2), checksum: try row.decode(at: 3), success: try row.decode(at: 4),
                appliedAt: try row.decode(at: 5), durationMilliseconds: try row.decode(at: 6)
            )
        }
        return entries
    }

    static func record(_ file: MigrationFile, success: Bool, duration: Duration, on connection: PostgresConnection) throws {
        try connection.execute(
            """
            INSERT INTO guestpass_migrations.history (scope, version, name, checksum, transactional, success, duration_ms)
            VALUES ($1, $2, $3, $4, $5, $6, $7)
            """,
            [file.scope.rawValue, file.version, file.name, file.checksum, file.transactional, success, duration.milliseconds]
        )
    }

    static func markSucceeded(_ file: MigrationFile, duration: Duration, on connection: PostgresConnection) throws {
        try connection.execute(
            "UPDATE guestpass_migrations.history SET success = true, duration_ms = $3 WHERE scope = $1 AND version = $2",
            [file.scope.rawValue, file.version, duration.milliseconds]
        )
    }
}

extension Duration {
    /// Whole milliseconds.
    var milliseconds: Int {
        Int(self.components.seconds * 1000 + self.components.attoseconds / 1_000_000_000_000_000)
    }
}
