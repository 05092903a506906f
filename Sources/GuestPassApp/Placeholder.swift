// GuestPassApp
