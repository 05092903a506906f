import Foundation
import GuestPassPostgres

/// The history table, `guestpass_migrations.history`: one row per applied file.
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
            """
        )
    }

    static func exists(on connection: PostgresConnection) throws -> Bool {
        try connection.execute("SELECT to_regclass('guestpass_migrations.history') IS NOT NULL").rows[0].decode(Bool.self, at: 0)
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
