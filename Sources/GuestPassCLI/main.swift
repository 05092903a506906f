print("guestpass")
