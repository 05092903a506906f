// DeviceCheck stand-in (being written)
