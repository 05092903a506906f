// GuestPassPostgres
