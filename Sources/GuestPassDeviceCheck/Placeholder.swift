// Apple DeviceCheck client (being written)
