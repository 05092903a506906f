// The core migrations ship inside the `guestpass` binary as SwiftPM resources.
// The SQL itself lives next to this file: versioned files in `sql/migrations/NNNN_<area>.sql`, repeatable
// definitions (functions, triggers, policies, grants) in `sql/migrations/repeatable/<NN_area>.sql`.
public import Foundation

/// Locates the core migration files bundled with the binary.
public enum CoreMigrations {
    /// The folder holding the core `NNNN_<area>.sql` files, and their repeatable files in its `repeatable/` subfolder.
    public static var directory: URL {
        Bundle.module.resourceURL!.appendingPathComponent("migrations", isDirectory: true)
    }

    /// The folder holding the core repeatable files.
    public static var repeatableDirectory: URL {
        directory.appendingPathComponent("repeatable", isDirectory: true)
    }
}
