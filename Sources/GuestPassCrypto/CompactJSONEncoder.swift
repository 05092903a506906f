import Foundation

/// Encodes `Encodable` values as compact JSON bytes, for the hot paths (token claims, session responses) where
/// Foundation's `JSONEncoder` cost a tenth of the server's CPU per request.
///
/// Output: object members sorted by the UTF-8 bytes of their keys (deterministic, whatever a dictionary's order), a key
/// encoded twice in one container appearing once with its last value (as with `JSONEncoder`), no whitespace, `/` not
/// escaped, `"` `\` and control characters escaped (`\n`, `\r`, `\t`, `\b`, `\f`, else `\u00XX`), other characters as
/// UTF-8. Numbers: integers as integers, floating-point values as Swift prints them (`1.5`, `1e+20`), a whole one
/// without `.0`; non-finite ones throw `EncodingError.invalidValue`, as `JSONEncoder` does; a `JSONNumberLiteral` as
/// written, digit for digit. `Date` is seconds since 1970 (the JWT NumericDate), `Data` base64, `URL` its absolute
/// string. Optional members that are nil are omitted (`encodeIfPresent`), as with `JSONEncoder`.
///
/// Design: one pass over the value builds a small tree, then one pass writes the bytes (a container is only known to be
/// finished when the value's `encode(to:)` returns). Only containers are nodes of the tree: every scalar is written
/// once, when it is encoded, into one byte buffer shared by the whole encoding, and its container keeps the range. A
/// coding path is built only for an error's message, from the nodes' parents.
public struct CompactJSONEncoder: Sendable {
    public init() {}

    /// The JSON text of `value`.
    ///
    /// - Throws: `EncodingError.invalidValue` for a non-finite number or a value that encodes nothing.
    public func encode<T: Encodable>(_ value: T) throws -> [UInt8] {
        try Self.encoding(value).bytes
    }

    /// The JSON text of `value` when it is an object in which no value sits inside more than `maximumDepth` containers
    /// (the object's own members sit inside 1); nil for anything else. With `StrictJSON.maximumDepth` this is exactly
    /// what `StrictJSON.isObject` accepts, checked without parsing the text again: the encoder writes no duplicate
    /// key, no unescaped control character and no lone surrogate.
    ///
    /// - Throws: as `encode(_:)`.
    public func encodeObject<T: Encodable>(_ value: T, maximumDepth: Int) throws -> [UInt8]? {
        let (bytes, isObject, depth) = try Self.encoding(value)
        return isObject && depth <= maximumDepth ? bytes : nil
    }

    /// The bytes, whether the top-level value is an object, and the most containers any value sits inside.
    private static func encoding<T: Encodable>(_ value: T) throws -> (bytes: [UInt8], isObject: Bool, depth: Int) {
        let root = JSONNode(arena: JSONArena(), parent: nil, key: nil)
        try JSONNode.encode(value, into: root)
        var writer = JSONWriter(arena: root.arena)
        try writer.write(root, depth: 0)
        let isObject = if case .object = root.kind { true } else { false }
        return (writer.bytes, isObject, writer.deepest)
    }
}

// MARK: - The tree

/// The bytes of every scalar of one encoding, appended as each is encoded; containers keep ranges into it.
final class JSONArena {
    var bytes: [UInt8] = []

    init() {
        self.bytes.reserveCapacity(512)
    }

    func literal(_ text: StaticString) -> Range<Int> {
        self.appending { bytes in text.withUTF8Buffer { bytes.append(contentsOf: $0) } }
    }

    func integer(_ value: some BinaryInteger & CustomStringConvertible) -> Range<Int> {
        self.appending { $0.append(contentsOf: value.description.utf8) }
    }

    /// `text` unchanged: a `JSONNumberLiteral`'s, checked when it was made.
    func verbatim(_ text: String) -> Range<Int> {
        self.appending { $0.append(contentsOf: text.utf8) }
    }

    func string(_ text: String) -> Range<Int> {
        self.appending { JSONString.append(text, to: &$0) }
    }

    func number<F: BinaryFloatingPoint & LosslessStringConvertible>(_ value: F, at path: @autoclosure () -> [any CodingKey]) throws
        -> Range<Int>
    {
        guard value.isFinite else {
            throw EncodingError.invalidValue(value, .init(codingPath: path(), debugDescription: "\(value) is not valid in JSON"))
        }
        var text = value.description
        if text.hasSuffix(".0") { text.removeLast(2) }
        return self.appending { $0.append(contentsOf: text.utf8) }
    }

    /// The range of the bytes `write` appends.
    private func appending(_ write: (inout [UInt8]) -> Void) -> Range<Int> {
        let start = self.bytes.count
        write(&self.bytes)
        return start..<self.bytes.count
    }
}

/// A member or element: a scalar's bytes in the arena, or a node.
enum JSONSlot {
    case scalar(Range<Int>)
    case node(JSONNode)
}

/// A container of the tree, or a value whose kind is not known until its `encode(to:)` has run.
final class JSONNode {
    enum Kind {
        case empty
        case scalar(Range<Int>)
        case object
        case array
    }

    let arena: JSONArena
    /// The container holding this value (nil at the top), for coding paths; it outlives this node while encoding.
    unowned(unsafe) let parent: JSONNode?
    let key: JSONPathKey?
    var kind: Kind = .empty
    var members: [(key: String, slot: JSONSlot)] = []
    var elements: [JSONSlot] = []

    init(arena: JSONArena, parent: JSONNode?, key: JSONPathKey?) {
        self.arena = arena
        self.parent = parent
        self.key = key
    }

    /// Where this value is, from the top (errors only).
    var codingPath: [any CodingKey] {
        var path: [any CodingKey] = []
        var node: JSONNode? = self
        while let current = node, let key = current.key {
            path.append(key)
            node = current.parent
        }
        return path.reversed()
    }

    static func encode<T: Encodable>(_ value: T, into node: JSONNode) throws {
        // Comparing metadata is cheap; a dynamic cast (`as? Date`) on every value is not.
        if T.self == Date.self, let date = value as? Date {
            node.kind = .scalar(try node.arena.number(date.timeIntervalSince1970, at: node.codingPath))
        } else if T.self == Data.self, let data = value as? Data {
            node.kind = .scalar(node.arena.string(data.base64EncodedString()))
        } else if T.self == URL.self, let url = value as? URL {
            node.kind = .scalar(node.arena.string(url.absoluteString))
        } else {
            try value.encode(to: NodeEncoder(node: node))
        }
    }

    /// `value` encoded as a child of this node; a scalar keeps no node.
    func child<T: Encodable>(_ value: T, key: JSONPathKey) throws -> JSONSlot {
        let node = JSONNode(arena: self.arena, parent: self, key: key)
        try Self.encode(value, into: node)
        if case .scalar(let range) = node.kind { return .scalar(range) }
        return .node(node)
    }

    /// An empty child container, filled later through the container returned for it.
    func childNode(key: JSONPathKey) -> JSONNode {
        JSONNode(arena: self.arena, parent: self, key: key)
    }

    /// The members in output order: sorted by key bytes, a key given twice only with its last value.
    func sortedMembers() -> [(key: String, slot: JSONSlot)] {
        let members = self.members
        var ascending = true
        for index in members.indices.dropFirst() where Self.compareUTF8(members[index - 1].key, members[index].key) >= 0 {
            ascending = false
            break
        }
        if ascending { return members }
        let order = members.indices.sorted { left, right in
            let comparison = Self.compareUTF8(members[left].key, members[right].key)
            return comparison == 0 ? left < right : comparison < 0
        }
        var sorted: [(key: String, slot: JSONSlot)] = []
        sorted.reserveCapacity(order.count)
        for (position, index) in order.enumerated() {
            let isOverwritten = position + 1 < order.count && Self.compareUTF8(members[order[position + 1]].key, members[index].key) == 0
            if !isOverwritten { sorted.append(members[index]) }
        }
        return sorted
    }

    /// The order of two keys' UTF-8 bytes (negative, zero, positive); not `String`'s `<`, which compares canonical
    /// equivalents as equal.
    static func compareUTF8(_ left: String, _ right: String) -> Int {
        var left = left
        var right = right
        return left.withUTF8 { leftBytes in
            right.withUTF8 { rightBytes in
                let common = min(leftBytes.count, rightBytes.count)
                let order = common == 0 ? 0 : memcmp(leftBytes.baseAddress!, rightBytes.baseAddress!, common)
                return order != 0 ? Int(order) : leftBytes.count - rightBytes.count
            }
        }
    }
}

/// A key of a coding path.
struct JSONPathKey: CodingKey {
    let stringValue: String
    let intValue: Int?

    init(stringValue: String) {
        self.stringValue = stringValue
        self.intValue = nil
    }

    init(intValue: Int) {
        self.stringValue = "Index \(intValue)"
        self.intValue = intValue
    }

    init(_ key: some CodingKey) {
        self.stringValue = key.stringValue
        self.intValue = key.intValue
    }
}

// MARK: - Writing

/// Writes a finished tree; `deepest` is the most containers any value sat inside.
struct JSONWriter {
    let arena: JSONArena
    var bytes: [UInt8] = []
    var deepest = 0

    init(arena: JSONArena) {
        self.arena = arena
        self.bytes.reserveCapacity(arena.bytes.count + 64)
    }

    mutating func write(_ node: JSONNode, depth: Int) throws {
        self.deepest = max(self.deepest, depth)
        switch node.kind {
        case .empty:
            throw EncodingError.invalidValue(node, .init(codingPath: node.codingPath, debugDescription: "the value encoded nothing"))
        case .scalar(let range):
            self.bytes.append(contentsOf: self.arena.bytes[range])
        case .object:
            self.bytes.append(UInt8(ascii: "{"))
            for (index, member) in node.sortedMembers().enumerated() {
                if index > 0 { self.bytes.append(UInt8(ascii: ",")) }
                JSONString.append(member.key, to: &self.bytes)
                self.bytes.append(UInt8(ascii: ":"))
                try self.write(member.slot, depth: depth + 1)
            }
            self.bytes.append(UInt8(ascii: "}"))
        case .array:
            self.bytes.append(UInt8(ascii: "["))
            for (index, element) in node.elements.enumerated() {
                if index > 0 { self.bytes.append(UInt8(ascii: ",")) }
                try self.write(element, depth: depth + 1)
            }
            self.bytes.append(UInt8(ascii: "]"))
        }
    }

    private mutating func write(_ slot: JSONSlot, depth: Int) throws {
        switch slot {
        case .scalar(let range):
            self.deepest = max(self.deepest, depth)
            self.bytes.append(contentsOf: self.arena.bytes[range])
        case .node(let node):
            try self.write(node, depth: depth)
        }
    }
}
