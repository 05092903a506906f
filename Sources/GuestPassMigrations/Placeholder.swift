// GuestPassMigrations
