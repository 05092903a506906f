import Foundation
import GuestPassJSON
import GuestPassPostgres
import GuestPassStore
import Logging
import RealtimeProtocol

/// Who a channel's changes are checked for: the verified identity, and what ends it.
struct SubscriberIdentity {
    let identity: RequestIdentity
    let sessionID: UUID?
    let expiresAt: Int?
}

extension RealtimeSocket {
    // MARK: Join

    /// `phx_join`: checks the topic, config and token, replies with the bindings echoed (ids added), then validates
    /// each binding and says so with a `system` message; an invalid binding leaves the channel joined, as in Realtime.
    func join(_ message: RealtimeMessage) async {
        do {
            _ = try RealtimeTopic(message.topic)
        } catch {
            return self.refuseJoin(message, error.code == .topicNameRequired ? "TopicNameRequired: \(error.message)" : error.message)
        }
        let config: RealtimeJoinConfig
        do {
            config = try RealtimeJoinConfig.parse(payload: message.payload)
        } catch {
            return self.refuseJoin(message, "InvalidJoinPayload: \(error)")
        }
        if config.isPrivate {
            return self.refuseJoin(message, "Unauthorized: private channels are not supported by this server")
        }
        if let previous = self.hub.leave(socketID: self.id, topic: message.topic, reason: "rejoin") {
            // Phoenix closes a channel joined twice before the new join.
            self.send(RealtimeOutboundMessage.close(topic: message.topic, joinRef: previous.joinRef))
            await self.services.presence.leaveAll(of: previous)
        }
        guard self.hub.channelCount(socketID: self.id) < self.services.limits.channelsPerSocket else {
            RealtimeMetrics.refused("channels_per_socket")
            return self.refuseJoin(message, "ChannelRateLimitReached: Too many channels")
        }
        guard config.postgresChanges.count <= self.services.limits.bindingsPerChannel else {
            return self.refuseJoin(message, "InvalidJoinPayload: Too many postgres_changes bindings")
        }
        let subscriberIdentity: SubscriberIdentity
        switch self.verify(token: config.accessToken) {
        case .success(let verified): subscriberIdentity = verified
        case .failure(let refusal): return self.refuseJoin(message, "InvalidJWTToken: " + refusal.message)
        }
        var subscriber = RealtimeSubscriber(
            socketID: self.id, outbox: self.outbox, version: self.version, topic: message.topic, joinRef: message.joinRef,
            appID: self.grant.appID, identity: subscriberIdentity.identity, sessionID: subscriberIdentity.sessionID,
            expiresAt: subscriberIdentity.expiresAt, broadcastSelf: config.broadcast.includeSelf,
            broadcastAck: config.broadcast.ack,
            presenceKey: config.presence.key.isEmpty ? UUID().uuidString.lowercased() : config.presence.key
        )
        self.hub.join(subscriber)
        self.reply(message, RealtimePayload.joinReply(bindings: config.postgresChanges))
        if config.presence.enabled {
            let state = (try? await self.services.presence.state(app: self.grant.appID, topic: message.topic)) ?? .emptyObject
            self.send(joinRef: message.joinRef, ref: nil, topic: message.topic, event: "presence_state", payload: state)
        }
        guard !config.postgresChanges.isEmpty else { return }
        var errors: [String] = []
        for binding in config.postgresChanges {
            switch await self.validate(binding, role: subscriber.identity.role) {
            case .success(let valid): subscriber.bindings.append(valid)
            case .failure(let refusal): errors.append(refusal.message)
            }
        }
        let bindings = subscriber.bindings
        guard self.hub.update(socketID: self.id, topic: message.topic, joinRef: message.joinRef, { $0.bindings = bindings }) else { return }
        let status: RealtimeStatus = errors.isEmpty ? .ok : .error
        let text =
            errors.isEmpty
            ? "Subscribed to PostgreSQL"
            : "Unable to subscribe to changes with given parameters. " + errors.joined(separator: " ")
        self.send(
            joinRef: message.joinRef, ref: nil, topic: message.topic, event: "system",
            payload: RealtimePayload.system(.postgresChanges, status, message: text, channel: subscriber.channelName))
    }

    private func refuseJoin(_ message: RealtimeMessage, _ reason: String) {
        RealtimeMetrics.refused("join")
        self.reply(message, RealtimePayload.replyError(reason: reason))
    }

    /// The identity a token gives: none, null, the API key itself or a new-style `sb_` key mean the key's own identity
    /// (as REST does when the bearer is the key); anything else must be a valid access token of the key's app.
    func verify(token: String?) -> Result<SubscriberIdentity, RealtimeRefusal> {
        guard let token, !token.isEmpty, token != self.apiKey, !token.hasPrefix("sb_") else {
            let caller = Caller(grant: self.grant, token: nil, clientAddress: self.address)
            return .success(SubscriberIdentity(identity: caller.identity, sessionID: nil, expiresAt: nil))
        }
        let verified: VerifiedAccessToken
        do {
            verified = try self.services.tokens.accessToken(token, ofApp: self.grant.appID)
        } catch {
            switch error {
            case .expired: return .failure(RealtimeRefusal("Token has expired"))
            case .invalid, .malformed, .notYetValid, .issuedInFuture: return .failure(RealtimeRefusal("Invalid access token"))
            case .otherApp: return .failure(RealtimeRefusal("The access token belongs to another app"))
            }
        }
        // The verifier's leeway is for clock skew on requests; a channel would only be closed a second later.
        let now = Int(Date().timeIntervalSince1970)
        guard verified.expiresAt > now else { return .failure(RealtimeRefusal("Token has expired \(now - verified.expiresAt) seconds ago")) }
        let caller = Caller(grant: self.grant, token: verified, clientAddress: self.address)
        return .success(SubscriberIdentity(identity: caller.identity, sessionID: verified.sessionID, expiresAt: verified.expiresAt))
    }

    /// Checks one binding against the catalog for the subscriber's role: a known event, a table of an exposed schema
    /// that is in the `supabase_realtime` publication and that the role can read, a filter that parses, names columns
    /// the role can read and whose values cast to the columns' types.
    func validate(_ binding: RealtimeBinding, role: DatabaseRole) async -> Result<ChannelBinding, RealtimeRefusal> {
        let kind: CapturedChange.Kind? =
            switch binding.event {
            case .all: nil
            case .insert: .insert
            case .update: .update
            case .delete: .delete
            }
        let schema = binding.schema
        if let select = binding.select, !select.isEmpty {
            return .failure(RealtimeRefusal("Column subsets (select) are not supported by this server: subscribe to whole rows."))
        }
        guard let tableName = binding.table, !tableName.isEmpty, tableName != "*" else {
            return .failure(RealtimeRefusal("A table is required: this server does not subscribe to whole schemas."))
        }
        guard self.services.schemas.contains(schema) else {
            return .failure(RealtimeRefusal("Schema \"\(schema)\" is not exposed."))
        }
        let table: RealtimeTable?
        do {
            table = try await self.services.tables.table(schema: schema, name: tableName, role: role)
        } catch {
            self.logger.error("realtime: reading the catalog failed", metadata: ["error": "\(error)"])
            return .failure(RealtimeRefusal("The table could not be checked; try again."))
        }
        guard let table else { return .failure(RealtimeRefusal("Table \(schema).\(tableName) does not exist.")) }
        guard table.published else {
            return .failure(RealtimeRefusal("Table \(schema).\(tableName) is not in the supabase_realtime publication."))
        }
        // A role that cannot read the table is subscribed all the same and receives nothing, as on Supabase: an error
        // here would make supabase-py rejoin forever.
        let conditions: [RealtimeFilter.Condition]
        do {
            conditions = try binding.parsedFilter().conditions
        } catch {
            return .failure(RealtimeRefusal("Invalid filter: \(error)"))
        }
        for condition in conditions {
            // A column the role cannot read would let events reveal its values: refused, unless nothing is readable.
            guard let column = table.column(condition.column), column.selectable || !table.readable else {
                return .failure(RealtimeRefusal("invalid column for filter \(condition.column)"))
            }
        }
        do {
            if let invalid = try await RealtimeVisibility.validateValues(pool: self.services.pool, table: table, conditions: conditions) {
                return .failure(RealtimeRefusal("Invalid filter value: \(invalid)"))
            }
        } catch {
            return .failure(RealtimeRefusal("The filter could not be checked; try again."))
        }
        return .success(ChannelBinding(id: binding.id, kind: kind, schema: schema, table: tableName, conditions: conditions))
    }

    // MARK: Leave and token refresh

    /// `phx_leave`: ok to the push, then `phx_close` with the join's ref.
    func leave(_ message: RealtimeMessage) async {
        self.reply(message, RealtimePayload.reply(.ok))
        let left = self.hub.leave(socketID: self.id, topic: message.topic, reason: "leave")
        self.send(RealtimeOutboundMessage.close(topic: message.topic, joinRef: message.joinRef))
        if let left { await self.services.presence.leaveAll(of: left) }
    }

    /// `access_token`: a new token swaps the channel's identity in place (no reply); an invalid or expired one ends
    /// the channel. A null token, the API key or an `sb_` key is ignored, as Realtime does.
    func refreshToken(_ message: RealtimeMessage) async {
        guard let channel = self.hub.channel(socketID: self.id, topic: message.topic) else { return }
        guard let token = message.payload.objectValue?["access_token"]?.stringValue, !token.isEmpty, token != self.apiKey,
            !token.hasPrefix("sb_")
        else { return }
        switch self.verify(token: token) {
        case .failure(let refusal):
            await self.shutDown(topic: message.topic, joinRef: channel.joinRef, reason: refusal.message)
        case .success(let verified):
            self.hub.update(socketID: self.id, topic: message.topic, joinRef: channel.joinRef) {
                $0.identity = verified.identity
                $0.sessionID = verified.sessionID
                $0.expiresAt = verified.expiresAt
            }
        }
    }
}

/// Why a join, a binding or a token was refused, in words for the client.
struct RealtimeRefusal: Error {
    let message: String
    init(_ message: String) { self.message = message }
}
