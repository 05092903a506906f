/// The two per-device bits Apple stores for the developer team, as read by `DeviceCheckClient.queryTwoBits(_:)`.
public struct DeviceBits: Sendable, Hashable {
    /// The first bit.
    public var bit0: Bool
    /// The second bit.
    public var bit1: Bool
    /// The month of the last update, `YYYY-MM` as Apple sends it; nil when the bits were never set.
    public var lastUpdateTime: String?

    /// Creates a value.
    public init(bit0: Bool, bit1: Bool, lastUpdateTime: String?) {
        self.bit0 = bit0
        self.bit1 = bit1
        self.lastUpdateTime = lastUpdateTime
    }

    /// The state of a device whose bits were never set ("Failed to find bit state"): both false, no update time.
    public static let neverSet = DeviceBits(bit0: false, bit1: false, lastUpdateTime: nil)

    /// Whether Apple has ever stored bits for this device.
    public var wasEverSet: Bool { self.lastUpdateTime != nil }
}
