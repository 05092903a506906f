// The core migrations ship inside the `guestpass` binary as SwiftPM resources.
// The SQL itself lives next to this file, in `sql/migrations/NNNN_verb_object.sql`.
import Foundation

/// Locates the core migration files bundled with the binary.
public enum CoreMigrations {
    /// The folder holding the core `NNNN_verb_object.sql` files.
    public static var directory: URL {
        Bundle.module.resourceURL!.appendingPathComponent("migrations", isDirectory: true)
    }
}
