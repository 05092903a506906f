/// A strict JSON (RFC 8259) syntax check run on JWT headers and payloads before they reach `JSONDecoder`, and on the text
/// of a `JSONNumberLiteral`.
///
/// It accepts exactly one top-level object, rejects duplicate member names at every level (compared after
/// unescaping, so `"alg"` and `"\u0061lg"` collide, as RFC 7515 §4 requires of headers), lone surrogates,
/// unescaped control characters, trailing content and nesting deeper than `maximumDepth`.
/// It builds no values: the typed decoding is left to `JSONDecoder`.
struct StrictJSON {
    static let maximumDepth = 32

    private let bytes: [UInt8]
    private var index = 0

    /// Whether `bytes` is a single, strictly valid JSON object.
    static func isObject(_ bytes: [UInt8]) -> Bool {
        var parser = StrictJSON(bytes: bytes)
        guard parser.skipWhitespace(), parser.peek == UInt8(ascii: "{"), parser.parseValue(depth: 0) else {
            return false
        }
        _ = parser.skipWhitespace()
        return parser.index == bytes.count
    }

    /// Whether `bytes` is exactly one JSON number, nothing around it.
    static func isNumber(_ bytes: [UInt8]) -> Bool {
        var parser = StrictJSON(bytes: bytes)
        return parser.parseNumber() && parser.index == bytes.count
    }

    private init(bytes: [UInt8]) {
        self.bytes = bytes
    }

    private var peek: UInt8? { self.index < self.bytes.count ? self.bytes[self.index] : nil }

    @discardableResult
    private mutating func skipWhitespace() -> Bool {
        while let byte = self.peek, byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D { self.index += 1 }
        return true
    }

    private mutating func consume(_ byte: UInt8) -> Bool {
        guard self.peek == byte else { return false }
        self.index += 1
        return true
    }

    private mutating func parseValue(depth: Int) -> Bool {
        guard depth <= Self.maximumDepth else { return false }
        self.skipWhitespace()
        switch self.peek {
        case UInt8(ascii: "{"): return self.parseObject(depth: depth + 1)
        case UInt8(ascii: "["): return self.parseArray(depth: depth + 1)
        case UInt8(ascii: "\""): return self.parseString() != nil
        case UInt8(ascii: "t"): return self.parseLiteral("true")
        case UInt8(ascii: "f"): return self.parseLiteral("false")
        case UInt8(ascii: "n"): return self.parseLiteral("null")
        default: return self.parseNumber()
        }
    }

    private mutating func parseObject(depth: Int) -> Bool {
        guard self.consume(UInt8(ascii: "{")) else { return false }
        var names = Set<[UInt8]>()
        self.skipWhitespace()
        if self.consume(UInt8(ascii: "}")) { return true }
        repeat {
            self.skipWhitespace()
            guard let name = self.parseString(), names.insert(name).inserted else { return false }
            self.skipWhitespace()
            guard self.consume(UInt8(ascii: ":")), self.parseValue(depth: depth) else { return false }
            self.skipWhitespace()
        } while self.consume(UInt8(ascii: ","))
        return self.consume(UInt8(ascii: "}"))
    }

    private mutating func parseArray(depth: Int) -> Bool {
        guard self.consume(UInt8(ascii: "[")) else { return false }
        self.skipWhitespace()
        if self.consume(UInt8(ascii: "]")) { return true }
        repeat {
            guard self.parseValue(depth: depth) else { return false }
            self.skipWhitespace()
        } while self.consume(UInt8(ascii: ","))
        return self.consume(UInt8(ascii: "]"))
    }

    private mutating func parseLiteral(_ literal: StaticString) -> Bool {
        let expected = UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount)
        guard self.bytes.count - self.index >= expected.count,
            self.bytes[self.index..<self.index + expected.count].elementsEqual(expected)
        else { return false }
        self.index += expected.count
        return true
    }

    private mutating func parseNumber() -> Bool {
        func digits(_ parser: inout StrictJSON) -> Int {
            let start = parser.index
            while let byte = parser.peek, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) { parser.index += 1 }
            return parser.index - start
        }
        _ = self.consume(UInt8(ascii: "-"))
        if self.consume(UInt8(ascii: "0")) {
            if let byte = self.peek, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) { return false }
        } else if digits(&self) == 0 {
            return false
        }
        if self.consume(UInt8(ascii: ".")), digits(&self) == 0 { return false }
        if self.consume(UInt8(ascii: "e")) || self.consume(UInt8(ascii: "E")) {
            if !self.consume(UInt8(ascii: "+")) { _ = self.consume(UInt8(ascii: "-")) }
            if digits(&self) == 0 { return false }
        }
        return true
    }

    /// Parses a string and returns its unescaped content as UTF-8, or nil if it is invalid.
    private mutating func parseString() -> [UInt8]? {
        guard self.consume(UInt8(ascii: "\"")) else { return nil }
        var content: [UInt8] = []
        while let byte = self.peek {
            self.index += 1
            switch byte {
            case UInt8(ascii: "\""):
                return content
            case UInt8(ascii: "\\"):
                guard let escaped = self.peek else { return nil }
                self.index += 1
                switch escaped {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): content.append(escaped)
                case UInt8(ascii: "b"): content.append(0x08)
                case UInt8(ascii: "f"): content.append(0x0C)
                case UInt8(ascii: "n"): content.append(0x0A)
                case UInt8(ascii: "r"): content.append(0x0D)
                case UInt8(ascii: "t"): content.append(0x09)
                case UInt8(ascii: "u"):
                    guard let scalar = self.parseUnicodeEscape() else { return nil }
                    content.append(contentsOf: Array(String(Character(scalar)).utf8))
                default: return nil
                }
            case 0x00..<0x20:
                return nil
            default:
                content.append(byte)
            }
        }
        return nil
    }

    /// After `\u`: one BMP scalar, or a high surrogate followed by `\uDC00`–`\uDFFF`.
    private mutating func parseUnicodeEscape() -> Unicode.Scalar? {
        guard let first = self.parseHex4() else { return nil }
        switch first {
        case 0xD800..<0xDC00:
            guard self.consume(UInt8(ascii: "\\")), self.consume(UInt8(ascii: "u")), let second = self.parseHex4(),
                (0xDC00..<0xE000).contains(second)
            else { return nil }
            return Unicode.Scalar(0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00))
        case 0xDC00..<0xE000:
            return nil
        default:
            return Unicode.Scalar(first)
        }
    }

    private mutating func parseHex4() -> UInt32? {
        guard self.bytes.count - self.index >= 4 else { return nil }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = self.bytes[self.index]
            self.index += 1
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: return nil
            }
            value = value << 4 | UInt32(digit)
        }
        return value
    }
}
