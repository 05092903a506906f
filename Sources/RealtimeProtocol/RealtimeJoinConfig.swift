public import GuestPassJSON

/// A channel topic: `realtime:` followed by the channel's name.
public struct RealtimeTopic: Sendable, Equatable, Hashable {
    /// The prefix every channel topic has.
    public static let prefix = "realtime:"

    /// The whole topic, as the client sent it (`realtime:room1`).
    public let topic: String
    /// The name without the prefix (`room1`): the `channel` of `system` messages.
    public let channelName: String

    /// Checks a topic.
    ///
    /// - Throws: `topicNameRequired` for `realtime:` alone (Realtime's `TopicNameRequired: You must provide a topic
    ///   name`); `unmatchedTopic` when it does not start with `realtime:` (Phoenix replies `unmatched topic`).
    public init(_ topic: String) throws(RealtimeProtocolError) {
        guard topic.hasPrefix(Self.prefix) else {
            throw RealtimeProtocolError(.unmatchedTopic, "unmatched topic")
        }
        let name = Self.channelName(of: topic)
        guard !name.isEmpty else { throw RealtimeProtocolError(.topicNameRequired, "You must provide a topic name") }
        self.topic = topic
        self.channelName = name
    }

    /// The channel name of a topic already checked: `topic` without the `realtime:` prefix.
    public static func channelName(of topic: String) -> String {
        String(topic.dropFirst(topic.hasPrefix(Self.prefix) ? Self.prefix.count : 0))
    }
}

/// The typed content of a `phx_join` payload:
/// `{"config":{"broadcast":{"ack","self"},"presence":{"key","enabled"},"postgres_changes":[…],"private"},
///   "access_token":…}` as supabase-js, supabase-swift and supabase-py build it.
///
/// Tolerant where the clients differ: `config` and each of its members may be absent or null (defaults below),
/// unknown members are ignored (`version`, `broadcast.replay`, `broadcast.replication_ready`…), booleans may also be
/// the strings `"true"`/`"false"` in any case (Realtime's `FlexibleBoolean`). Strict on types: any other type for a
/// known member is an `invalidField` error naming its path. (Realtime logs such a payload and joins with whatever
/// could be read; no official client sends one, and a clear refusal is easier to diagnose.)
public struct RealtimeJoinConfig: Sendable, Equatable {
    /// `config.broadcast`.
    public struct Broadcast: Sendable, Equatable {
        /// `ack`: reply ok to each broadcast push.
        public var ack = false
        /// `self`: deliver the sender's own broadcasts back to it.
        public var includeSelf = false

        /// The defaults: no ack, not to self.
        public init(ack: Bool = false, includeSelf: Bool = false) {
            self.ack = ack
            self.includeSelf = includeSelf
        }
    }

    /// `config.presence`.
    public struct Presence: Sendable, Equatable {
        /// `key`: the client's presence key; `""` (the default) means the server picks one.
        public var key = ""
        /// `enabled`: the client listens to presence (push `presence_state` after the join).
        public var enabled = false

        /// The defaults: no key, disabled.
        public init(key: String = "", enabled: Bool = false) {
            self.key = key
            self.enabled = enabled
        }
    }

    /// `config.broadcast`.
    public var broadcast = Broadcast()
    /// `config.presence`.
    public var presence = Presence()
    /// `config.postgres_changes`, in the order sent (empty when absent or null).
    public var postgresChanges: [RealtimeBinding] = []
    /// `config.private`.
    public var isPrivate = false
    /// `access_token`, or the legacy `user_token` when `access_token` is absent or null; nil when neither is a string.
    public var accessToken: String?

    /// Makes a config.
    public init(
        broadcast: Broadcast = Broadcast(), presence: Presence = Presence(), postgresChanges: [RealtimeBinding] = [], isPrivate: Bool = false,
        accessToken: String? = nil
    ) {
        self.broadcast = broadcast
        self.presence = presence
        self.postgresChanges = postgresChanges
        self.isPrivate = isPrivate
        self.accessToken = accessToken
    }

    /// Reads a `phx_join` payload.
    ///
    /// - Throws: `invalidField` when the payload is not an object or a known member has the wrong type.
    public static func parse(payload: JSONValue) throws(RealtimeProtocolError) -> RealtimeJoinConfig {
        guard case .object(let members) = payload else { throw Self.wrongType("payload", "an object") }
        var config = RealtimeJoinConfig()
        config.accessToken = try Self.string(members["access_token"], path: "access_token")
        if config.accessToken == nil { config.accessToken = try Self.string(members["user_token"], path: "user_token") }
        guard let configMembers = try Self.object(members["config"], path: "config") else { return config }
        if let broadcast = try Self.object(configMembers["broadcast"], path: "config.broadcast") {
            config.broadcast.ack = try Self.bool(broadcast["ack"], path: "config.broadcast.ack") ?? false
            config.broadcast.includeSelf = try Self.bool(broadcast["self"], path: "config.broadcast.self") ?? false
        }
        if let presence = try Self.object(configMembers["presence"], path: "config.presence") {
            config.presence.key = try Self.string(presence["key"], path: "config.presence.key") ?? ""
            config.presence.enabled = try Self.bool(presence["enabled"], path: "config.presence.enabled") ?? false
        }
        config.isPrivate = try Self.bool(configMembers["private"], path: "config.private") ?? false
        switch configMembers["postgres_changes"] {
        case nil, .null?: break
        case .array(let elements)?:
            for (index, element) in elements.enumerated() {
                let path = "config.postgres_changes[\(index)]"
                guard case .object(let binding) = element else { throw Self.wrongType(path, "an object") }
                config.postgresChanges.append(try RealtimeBinding(members: binding, path: path))
            }
        default: throw Self.wrongType("config.postgres_changes", "an array")
        }
        return config
    }

    // MARK: Typed members (null is the same as absent)

    static func wrongType(_ path: String, _ expected: String) -> RealtimeProtocolError {
        RealtimeProtocolError(.invalidField, "invalid join payload: \(path) must be \(expected)")
    }

    static func string(_ value: JSONValue?, path: String) throws(RealtimeProtocolError) -> String? {
        switch value {
        case nil, .null?: return nil
        case .string(let text)?: return text
        default: throw Self.wrongType(path, "a string")
        }
    }

    static func bool(_ value: JSONValue?, path: String) throws(RealtimeProtocolError) -> Bool? {
        switch value {
        case nil, .null?: return nil
        case .bool(let flag)?: return flag
        case .string(let text)? where text.lowercased() == "true": return true
        case .string(let text)? where text.lowercased() == "false": return false
        default: throw Self.wrongType(path, "a boolean")
        }
    }

    static func object(_ value: JSONValue?, path: String) throws(RealtimeProtocolError) -> [String: JSONValue]? {
        switch value {
        case nil, .null?: return nil
        case .object(let members)?: return members
        default: throw Self.wrongType(path, "an object")
        }
    }
}
