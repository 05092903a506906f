import Foundation

// The `Encoder` of `CompactJSONEncoder`: containers that add to a `JSONNode`, scalars written straight into the arena.

struct NodeEncoder: Encoder {
    let node: JSONNode
    var codingPath: [any CodingKey] { self.node.codingPath }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        if case .object = self.node.kind {} else { self.node.kind = .object }
        return KeyedEncodingContainer(KeyedNodeContainer<Key>(node: self.node))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        if case .array = self.node.kind {} else { self.node.kind = .array }
        return UnkeyedNodeContainer(node: self.node)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        SingleNodeContainer(node: self.node)
    }
}

private struct KeyedNodeContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let node: JSONNode
    var codingPath: [any CodingKey] { self.node.codingPath }
    private var arena: JSONArena { self.node.arena }

    private func add(_ key: Key, _ slot: JSONSlot) {
        self.node.members.append((key.stringValue, slot))
    }

    private func add(_ key: Key, scalar: Range<Int>) {
        self.add(key, .scalar(scalar))
    }

    mutating func encodeNil(forKey key: Key) throws { self.add(key, scalar: self.arena.literal("null")) }
    mutating func encode(_ value: Bool, forKey key: Key) throws { self.add(key, scalar: self.arena.literal(value ? "true" : "false")) }
    mutating func encode(_ value: String, forKey key: Key) throws { self.add(key, scalar: self.arena.string(value)) }
    mutating func encode(_ value: Double, forKey key: Key) throws {
        self.add(key, scalar: try self.arena.number(value, at: self.codingPath + [key]))
    }
    mutating func encode(_ value: Float, forKey key: Key) throws {
        self.add(key, scalar: try self.arena.number(value, at: self.codingPath + [key]))
    }
    mutating func encode(_ value: Int, forKey key: Key) throws { self.add(key, scalar: self.arena.integer(value)) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { self.add(key, scalar: self.arena.integer(value)) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { self.add(key, scalar: self.arena.integer(value)) }
    mutating func encode(_ value: Int8, forKey key: Key) throws { self.add(key, scalar: self.arena.integer(value)) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { self.add(key, scalar: self.arena.integer(value)) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { self.add(key, scalar: self.arena.integer(value)) }
    mutating func encode(_ value: UInt, forKey key: Key) throws { self.add(key, scalar: self.arena.integer(value)) }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { self.add(key, scalar: self.arena.integer(value)) }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { self.add(key, scalar: self.arena.integer(value)) }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { self.add(key, scalar: self.arena.integer(value)) }
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        self.add(key, try self.node.child(value, key: JSONPathKey(key)))
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
        let child = self.node.childNode(key: JSONPathKey(key))
        self.add(key, .node(child))
        return NodeEncoder(node: child).container(keyedBy: keyType)
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        let child = self.node.childNode(key: JSONPathKey(key))
        self.add(key, .node(child))
        return NodeEncoder(node: child).unkeyedContainer()
    }

    mutating func superEncoder() -> any Encoder { self.superEncoder(forKey: Key(stringValue: "super")!) }

    mutating func superEncoder(forKey key: Key) -> any Encoder {
        let child = self.node.childNode(key: JSONPathKey(key))
        self.add(key, .node(child))
        return NodeEncoder(node: child)
    }
}

private struct UnkeyedNodeContainer: UnkeyedEncodingContainer {
    let node: JSONNode
    var codingPath: [any CodingKey] { self.node.codingPath }
    var count: Int { self.node.elements.count }
    private var arena: JSONArena { self.node.arena }
    private var nextKey: JSONPathKey { JSONPathKey(intValue: self.count) }

    private func add(scalar: Range<Int>) {
        self.node.elements.append(.scalar(scalar))
    }

    mutating func encodeNil() throws { self.add(scalar: self.arena.literal("null")) }
    mutating func encode(_ value: Bool) throws { self.add(scalar: self.arena.literal(value ? "true" : "false")) }
    mutating func encode(_ value: String) throws { self.add(scalar: self.arena.string(value)) }
    mutating func encode(_ value: Double) throws { self.add(scalar: try self.arena.number(value, at: self.codingPath + [self.nextKey])) }
    mutating func encode(_ value: Float) throws { self.add(scalar: try self.arena.number(value, at: self.codingPath + [self.nextKey])) }
    mutating func encode(_ value: Int) throws { self.add(scalar: self.arena.integer(value)) }
    mutating func encode(_ value: Int64) throws { self.add(scalar: self.arena.integer(value)) }
    mutating func encode(_ value: UInt64) throws { self.add(scalar: self.arena.integer(value)) }
    mutating func encode(_ value: Int8) throws { self.add(scalar: self.arena.integer(value)) }
    mutating func encode(_ value: Int16) throws { self.add(scalar: self.arena.integer(value)) }
    mutating func encode(_ value: Int32) throws { self.add(scalar: self.arena.integer(value)) }
    mutating func encode(_ value: UInt) throws { self.add(scalar: self.arena.integer(value)) }
    mutating func encode(_ value: UInt8) throws { self.add(scalar: self.arena.integer(value)) }
    mutating func encode(_ value: UInt16) throws { self.add(scalar: self.arena.integer(value)) }
    mutating func encode(_ value: UInt32) throws { self.add(scalar: self.arena.integer(value)) }
    mutating func encode<T: Encodable>(_ value: T) throws {
        self.node.elements.append(try self.node.child(value, key: self.nextKey))
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        let child = self.node.childNode(key: self.nextKey)
        self.node.elements.append(.node(child))
        return NodeEncoder(node: child).container(keyedBy: keyType)
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        let child = self.node.childNode(key: self.nextKey)
        self.node.elements.append(.node(child))
        return NodeEncoder(node: child).unkeyedContainer()
    }

    mutating func superEncoder() -> any Encoder {
        let child = self.node.childNode(key: self.nextKey)
        self.node.elements.append(.node(child))
        return NodeEncoder(node: child)
    }
}

private struct SingleNodeContainer: SingleValueEncodingContainer {
    let node: JSONNode
    var codingPath: [any CodingKey] { self.node.codingPath }
    private var arena: JSONArena { self.node.arena }

    private func set(_ scalar: Range<Int>) {
        self.node.kind = .scalar(scalar)
    }

    mutating func encodeNil() throws { self.set(self.arena.literal("null")) }
    mutating func encode(_ value: Bool) throws { self.set(self.arena.literal(value ? "true" : "false")) }
    mutating func encode(_ value: String) throws { self.set(self.arena.string(value)) }
    mutating func encode(_ value: Double) throws { self.set(try self.arena.number(value, at: self.codingPath)) }
    mutating func encode(_ value: Float) throws { self.set(try self.arena.number(value, at: self.codingPath)) }
    mutating func encode(_ value: Int) throws { self.set(self.arena.integer(value)) }
    mutating func encode(_ value: Int64) throws { self.set(self.arena.integer(value)) }
    mutating func encode(_ value: UInt64) throws { self.set(self.arena.integer(value)) }
    mutating func encode(_ value: Int8) throws { self.set(self.arena.integer(value)) }
    mutating func encode(_ value: Int16) throws { self.set(self.arena.integer(value)) }
    mutating func encode(_ value: Int32) throws { self.set(self.arena.integer(value)) }
    mutating func encode(_ value: UInt) throws { self.set(self.arena.integer(value)) }
    mutating func encode(_ value: UInt8) throws { self.set(self.arena.integer(value)) }
    mutating func encode(_ value: UInt16) throws { self.set(self.arena.integer(value)) }
    mutating func encode(_ value: UInt32) throws { self.set(self.arena.integer(value)) }
    mutating func encode<T: Encodable>(_ value: T) throws {
        try JSONNode.encode(value, into: self.node)
    }
}
