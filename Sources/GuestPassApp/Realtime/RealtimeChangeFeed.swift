import Foundation
import GuestPassPostgres
import GuestPassStore
import Logging
import ServiceLifecycle

/// The service that moves the change log to this process's sockets, and keeps their channels honest.
///
/// Every replica runs one and polls `guestpass.realtime_changes` on its own with a snapshot cursor (`RealtimeFeed.poll`):
/// no leader, no bus, no logical decoding, and it works through PgBouncer. Each poll's row changes are grouped by
/// table and by subscriber identity, checked once per group (`RealtimeDispatch`), and pushed in `seq` order, so a
/// row's changes reach a subscriber in commit order; the next poll starts only when this one is delivered. Broadcasts
/// and presence diffs come through the same log, which is what carries them between replicas.
///
/// Polls run every `activeInterval` while any channel has bindings, every `idleInterval` otherwise (so broadcasts
/// still flow). Alongside, once a second: channels whose token expired are closed, and idle sockets; every
/// `sessionCheckInterval`, channels whose session was signed out or whose device was revoked; every 15 s, presence
/// leases are renewed; every minute the capture triggers are synced with the publication and old log rows pruned.
struct RealtimeChangeFeed: Service, CustomStringConvertible {
    /// What swift-service-lifecycle logs of it: the name, never the token service's keys it reaches.
    var description: String { "RealtimeChangeFeed" }

    let services: RealtimeServices
    let logger: Logger
    var activeInterval: Duration = .milliseconds(100)
    var idleInterval: Duration = .milliseconds(500)
    var retentionSeconds = 300

    func run() async throws {
        let dispatch = RealtimeDispatch(services: self.services, logger: self.logger)
        await withGracefulShutdownHandler {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await self.pollLoop(dispatch) }
                group.addTask { await self.housekeepingLoop() }
                await group.waitForAll()
            }
        } onGracefulShutdown: {
            self.services.hub.finishAll()
        }
    }

    private func pollLoop(_ dispatch: RealtimeDispatch) async {
        var snapshot: String?
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            let started = ContinuousClock.now
            do {
                let poll = try await self.services.feed.poll(after: snapshot)
                if let oldest = poll.changes.first { RealtimeMetrics.pollLag(oldestCapturedAt: oldest.commitTimestamp) }
                if snapshot != nil { await dispatch.deliver(poll.changes) }
                snapshot = poll.snapshot
                RealtimeMetrics.polled(changes: poll.changes.count, seconds: started.duration(to: .now))
            } catch {
                RealtimeMetrics.pollFailed()
                self.logger.warning("realtime: poll failed", metadata: ["error": "\(error)"])
            }
            let interval = self.services.hub.hasBindings ? self.activeInterval : self.idleInterval
            try? await Task.sleep(for: interval)
        }
    }

    private func housekeepingLoop() async {
        var tick = 0
        _ = try? await self.services.feed.sync()
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            try? await Task.sleep(for: .seconds(1))
            tick += 1
            await self.closeExpiredChannels()
            if tick % Int(self.services.limits.sessionCheckInterval.components.seconds) == 0 { await self.closeRevokedChannels() }
            if tick % Int(self.services.presence.renewInterval.components.seconds) == 0 {
                do { try await self.services.presence.renew() } catch {
                    self.logger.warning("realtime: presence renewal failed", metadata: ["error": "\(error)"])
                }
            }
            if tick % 60 == 0 {
                do {
                    try await self.services.feed.sync()
                    try await self.services.feed.prune(retentionSeconds: self.retentionSeconds)
                } catch {
                    self.logger.warning("realtime: sync or prune failed", metadata: ["error": "\(error)"])
                }
            }
        }
    }

    /// Ends every channel whose token has expired, with Realtime's "Token has expired N seconds ago".
    private func closeExpiredChannels() async {
        let now = Int(Date().timeIntervalSince1970)
        for subscriber in self.services.hub.subscribers {
            guard let expiresAt = subscriber.expiresAt, expiresAt <= now else { continue }
            await self.services.hub.socket(subscriber.socketID)?.shutDown(
                topic: subscriber.topic, joinRef: subscriber.joinRef, reason: "Token has expired \(now - expiresAt) seconds ago")
        }
        for socket in self.services.hub.idle(longerThan: self.services.limits.idleTimeout) {
            socket.outbox.finish(.policy("No heartbeat"))
        }
    }

    /// Ends every channel whose session is no longer live (signed out, expired, or its device revoked).
    private func closeRevokedChannels() async {
        let subscribers = self.services.hub.subscribers.filter { $0.sessionID != nil }
        guard !subscribers.isEmpty else { return }
        do {
            let live = try await self.services.feed.liveSessions(Array(Set(subscribers.compactMap(\.sessionID))))
            for subscriber in subscribers where !live.contains(subscriber.sessionID!) {
                await self.services.hub.socket(subscriber.socketID)?.shutDown(
                    topic: subscriber.topic, joinRef: subscriber.joinRef, reason: "Session has ended")
            }
        } catch {
            self.logger.warning("realtime: session check failed", metadata: ["error": "\(error)"])
        }
    }
}
