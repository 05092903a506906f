import Foundation
import GuestPassStore
import NIOConcurrencyHelpers
import RealtimeProtocol

/// Presence across replicas: each tracked meta is a row of `guestpass.realtime_presence` under this process's lease,
/// and every track, untrack and expiry logs a `presence_diff` that each replica's change feed pushes to its sockets on
/// the topic. A replica renews its leases every `renewInterval`; the metas of one that stops (crash, kill) expire after
/// `leaseSeconds` and their leaves are logged once, by whichever replica removes them first.
final class RealtimePresence: Sendable {
    /// This process, as the owner of its presence leases.
    let replica = UUID()
    let feed: RealtimeFeed
    let leaseSeconds = 45
    let renewInterval: Duration = .seconds(15)

    private struct Tracked: Hashable {
        let socketID: UUID
        let topic: String
    }

    /// The meta each of this process's channels tracks (one per channel: tracking again replaces it).
    private let tracked = NIOLockedValueBox<[Tracked: (key: String, ref: String)]>([:])

    init(feed: RealtimeFeed) {
        self.feed = feed
    }

    /// Tracks `metaJSON` (an object) for the channel under its presence key, replacing what it tracked before.
    func track(_ subscriber: RealtimeSubscriber, metaJSON: String) async throws {
        guard let key = subscriber.presenceKey else { return }
        let ref = Self.newRef()
        let previous = self.tracked.withLockedValue {
            $0.updateValue((key, ref), forKey: Tracked(socketID: subscriber.socketID, topic: subscriber.topic))
        }
        if let previous {
            try await self.feed.presenceUntrack(
                app: subscriber.appID, topic: subscriber.topic, key: previous.key, replica: self.replica, ref: previous.ref)
        }
        try await self.feed.presenceTrack(
            app: subscriber.appID, topic: subscriber.topic, key: key, replica: self.replica, ref: ref, meta: metaJSON, leaseSeconds: self.leaseSeconds
        )
    }

    /// Stops tracking the channel's meta (a no-op when it tracks none).
    func untrack(_ subscriber: RealtimeSubscriber) async throws {
        let previous = self.tracked.withLockedValue { $0.removeValue(forKey: Tracked(socketID: subscriber.socketID, topic: subscriber.topic)) }
        guard let previous else { return }
        try await self.feed.presenceUntrack(
            app: subscriber.appID, topic: subscriber.topic, key: previous.key, replica: self.replica, ref: previous.ref)
    }

    /// Untracks a channel that is going away (leave, close, shutdown); a failure leaves the meta to expire with the
    /// lease instead.
    func leaveAll(of subscriber: RealtimeSubscriber) async {
        try? await self.untrack(subscriber)
    }

    /// The topic's presence state, `{"key":{"metas":[{"phx_ref":…,…}]}}` (each meta as the database wrote it, with its
    /// `phx_ref`).
    func state(app: UUID, topic: String) async throws -> RealtimeJSON {
        var keys: [String: [RealtimeJSON]] = [:]
        for entry in try await self.feed.presenceState(app: app, topic: topic) {
            keys[entry.key, default: []].append(RealtimeJSON(unchecked: entry.meta))
        }
        return RealtimePayload.presenceState(keys)
    }

    /// Renews this replica's leases and expires dead replicas' metas.
    func renew() async throws {
        try await self.feed.presenceRenew(replica: self.replica, leaseSeconds: self.leaseSeconds)
    }

    /// A Phoenix-like ref: unique, opaque, short.
    static func newRef() -> String {
        "F" + String(UInt64.random(in: 0...UInt64.max), radix: 36)
    }
}
