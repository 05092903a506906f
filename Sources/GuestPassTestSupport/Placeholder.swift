// GuestPassTestSupport
