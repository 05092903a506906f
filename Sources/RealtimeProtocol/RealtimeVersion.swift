/// The framing a socket speaks, chosen once per socket by the `vsn` query parameter of the upgrade request.
///
/// - `v1` (`vsn` absent or `1.0.0`; supabase-py): every frame is a JSON text object
///   `{"topic","event","payload","ref","join_ref"}`; no binary frames.
/// - `v2` (`vsn=2.0.0`; supabase-js ≥ 2.91, supabase-swift): text frames are JSON arrays
///   `[join_ref, ref, topic, event, payload]`; clients may push broadcasts as binary frames (kind 3); the server answers in text frames.
///
/// Phoenix treats a missing `vsn` as 1.0.0 and refuses one no serializer matches, so any other value is nil and the
/// server refuses the upgrade.
public enum RealtimeVersion: String, Sendable, Equatable, CaseIterable {
    /// `vsn=1.0.0`: JSON objects.
    case v1 = "1.0.0"
    /// `vsn=2.0.0`: JSON arrays and binary broadcast frames.
    case v2 = "2.0.0"

    /// The version of a `vsn` query value: nil (absent) or `1.0.0` → `v1`, `2.0.0` → `v2`, anything else (`2.0`, `""`,
    /// `3.0.0`) → nil. The comparison is exact, as Phoenix's.
    public init?(vsn: String?) {
        guard let vsn else {
            self = .v1
            return
        }
        self.init(rawValue: vsn)
    }
}

/// The bounds applied to every inbound frame, before and while it is parsed.
///
/// The server caps WebSocket frames at 1 MiB (`maxFrameBytes`; Realtime allows 5 MB, HummingbirdWebSocket defaults to
/// 16 KiB); a frame over the bound is refused before any parsing. JSON is parsed by `GuestPassJSON`'s strict parser with
/// `maxDepth` and `maxValues`: a 1 MiB frame is parsed in one linear pass whatever it holds.
public struct RealtimeLimits: Sendable, Equatable {
    /// The largest frame accepted, in bytes (text as UTF-8, binary as is).
    public var maxFrameBytes: Int
    /// The deepest nesting of JSON arrays and objects accepted in a frame (the framing's own array or object counts).
    public var maxDepth: Int
    /// The most JSON values (scalars, arrays, objects) accepted in one frame.
    public var maxValues: Int

    /// Sets each bound.
    public init(maxFrameBytes: Int, maxDepth: Int, maxValues: Int) {
        self.maxFrameBytes = maxFrameBytes
        self.maxDepth = maxDepth
        self.maxValues = maxValues
    }

    /// 1 MiB frames, 32 levels of nesting, 200,000 values: a broadcast of 100,000 small numbers fits, and the slowest
    /// frame of that many values (all numbers) parses in about 15 ms in a release build.
    public static let standard = RealtimeLimits(maxFrameBytes: 1 << 20, maxDepth: 32, maxValues: 200_000)
}
