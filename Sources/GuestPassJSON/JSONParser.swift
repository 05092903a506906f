import Foundation
import GuestPassCrypto

/// A strict single-pass JSON parser (RFC 8259) into `JSONValue`, for request bodies.
///
/// Each value's type is decided by its first byte, so the work is linear in the body's size. It refuses, with a
/// `JSONParser.Failure` the routes turn into a 400: invalid UTF-8, unpaired surrogate escapes, NUL (`\u0000` or a raw
/// byte; PostgreSQL text cannot hold it), control characters in strings, nesting deeper than `maxDepth`, more than
/// `maxValues` values in one document (a 1 MiB body of `[{},{},…]` is 330,000 of them), and trailing bytes.
/// Strings are validated and copied byte runs at a time, then decoded once.
/// Numbers keep their text (`JSONNumber`), refused only beyond `maxNumberLength`; for duplicate keys the last one wins.
public struct JSONParser {
    /// Why a document was refused (for a 400's details).
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// The deepest nesting of arrays and objects accepted.
    public static let defaultMaxDepth = 32
    /// The most values (scalars, arrays and objects) accepted in one document: far more than any call of an app
    /// needs, few enough that the worst document of that many values parses in a few milliseconds.
    public static let defaultMaxValues = 20_000
    /// The longest number accepted, in bytes, both as written and as PostgreSQL writes it back: `numeric` and `jsonb`
    /// keep numbers as exact decimals and write them in plain decimal (`-5.7e231` comes back as 232 digits, `5e-324` as
    /// 326 characters), which `SessionUser` reads back from the metadata a request stored, so what is stored must parse
    /// again. Every finite `Double` written in full fits; `1e399` (400 digits) is accepted though no `Double` holds it,
    /// `1e400` and `1e-399` are a 400. (PostgreSQL's own limit, 131072 digits before the point, is far beyond.)
    public static let maxNumberLength = 400

    private let bytes: UnsafeBufferPointer<UInt8>
    private var index = 0
    private let maxDepth: Int
    private var valuesLeft: Int

    private init(_ bytes: UnsafeBufferPointer<UInt8>, maxDepth: Int, maxValues: Int) {
        self.bytes = bytes
        self.maxDepth = maxDepth
        self.valuesLeft = maxValues
    }

    /// Parses one JSON document.
    public static func parse(
        _ bytes: some Collection<UInt8>, maxDepth: Int = defaultMaxDepth, maxValues: Int = defaultMaxValues
    ) throws -> JSONValue {
        let array = Array(bytes)
        return try array.withUnsafeBufferPointer { buffer in
            var parser = JSONParser(buffer, maxDepth: maxDepth, maxValues: maxValues)
            parser.skipWhitespace()
            let value = try parser.value(depth: 0)
            parser.skipWhitespace()
            guard parser.index == buffer.count else { throw Failure(description: "unexpected bytes after the JSON value") }
            return value
        }
    }

    // MARK: Values

    private mutating func value(depth: Int) throws -> JSONValue {
        self.valuesLeft -= 1
        guard self.valuesLeft >= 0 else { throw Failure(description: "too many values in one document") }
        guard let byte = self.peek() else { throw Failure(description: "unexpected end of the document") }
        switch byte {
        case UInt8(ascii: "{"): return try self.object(depth: depth + 1)
        case UInt8(ascii: "["): return try self.array(depth: depth + 1)
        case UInt8(ascii: "\""): return .string(try self.string())
        case UInt8(ascii: "t"):
            try self.literal("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try self.literal("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try self.literal("null")
            return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try self.number())
        default: throw Failure(description: "unexpected character at byte \(self.index)")
        }
    }

    private mutating func object(depth: Int) throws -> JSONValue {
        guard depth <= self.maxDepth else { throw Failure(description: "nested deeper than \(self.maxDepth) levels") }
        self.index += 1
        var members: [String: JSONValue] = [:]
        self.skipWhitespace()
        if self.peek() == UInt8(ascii: "}") {
            self.index += 1
            return .object(members)
        }
        while true {
            self.skipWhitespace()
            guard self.peek() == UInt8(ascii: "\"") else { throw Failure(description: "expected a member name at byte \(self.index)") }
            let key = try self.string()
            self.skipWhitespace()
            try self.expect(UInt8(ascii: ":"))
            self.skipWhitespace()
            members[key] = try self.value(depth: depth)
            self.skipWhitespace()
            guard let next = self.peek() else { throw Failure(description: "unterminated object") }
            self.index += 1
            if next == UInt8(ascii: "}") { return .object(members) }
            guard next == UInt8(ascii: ",") else { throw Failure(description: "expected , or } at byte \(self.index - 1)") }
        }
    }

    private mutating func array(depth: Int) throws -> JSONValue {
        guard depth <= self.maxDepth else { throw Failure(description: "nested deeper than \(self.maxDepth) levels") }
        self.index += 1
        var elements: [JSONValue] = []
        self.skipWhitespace()
        if self.peek() == UInt8(ascii: "]") {
            self.index += 1
            return .array(elements)
        }
        while true {
            self.skipWhitespace()
            elements.append(try self.value(depth: depth))
            self.skipWhitespace()
            guard let next = self.peek() else { throw Failure(description: "unterminated array") }
            self.index += 1
            if next == UInt8(ascii: "]") { return .array(elements) }
            guard next == UInt8(ascii: ",") else { throw Failure(description: "expected , or ] at byte \(self.index - 1)") }
        }
    }

    // MARK: Strings

    private mutating func string() throws -> String {
        self.index += 1  // the opening quote
        var utf8: [UInt8] = []
        while true {
            // A run up to the next quote, backslash or control byte is checked and copied at once.
            let runStart = self.index
            var highBits: UInt8 = 0
            while self.index < self.bytes.count {
                let byte = self.bytes[self.index]
                if byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { break }
                highBits |= byte
                self.index += 1
            }
            if self.index > runStart {
                let run = UnsafeBufferPointer(rebasing: self.bytes[runStart..<self.index])
                // Not ASCII: the standard library's validation refuses overlong forms, surrogates and truncation.
                if highBits >= 0x80, String(validating: run, as: UTF8.self) == nil {
                    throw Failure(description: "invalid UTF-8 in the string at byte \(runStart)")
                }
                utf8.append(contentsOf: run)
            }
            guard let byte = self.peek() else { throw Failure(description: "unterminated string") }
            switch byte {
            case UInt8(ascii: "\""):
                self.index += 1
                return String(decoding: utf8, as: UTF8.self)
            case UInt8(ascii: "\\"):
                self.index += 1
                Self.appendUTF8(of: try self.escape(), to: &utf8)
            case 0x00:
                throw Failure(description: "strings must not contain NUL")
            default:
                throw Failure(description: "control character in a string at byte \(self.index)")
            }
        }
    }

    private mutating func escape() throws -> Unicode.Scalar {
        guard let byte = self.peek() else { throw Failure(description: "unterminated escape") }
        self.index += 1
        switch byte {
        case UInt8(ascii: "\""): return "\""
        case UInt8(ascii: "\\"): return "\\"
        case UInt8(ascii: "/"): return "/"
        case UInt8(ascii: "b"): return "\u{08}"
        case UInt8(ascii: "f"): return "\u{0C}"
        case UInt8(ascii: "n"): return "\n"
        case UInt8(ascii: "r"): return "\r"
        case UInt8(ascii: "t"): return "\t"
        case UInt8(ascii: "u"):
            let unit = try self.hex4()
            if unit == 0 { throw Failure(description: "strings must not contain NUL (\\u0000)") }
            if (0xDC00...0xDFFF).contains(unit) { throw Failure(description: "unpaired low surrogate escape") }
            if (0xD800...0xDBFF).contains(unit) {
                guard self.peek() == UInt8(ascii: "\\"), self.peek(at: 1) == UInt8(ascii: "u") else {
                    throw Failure(description: "unpaired high surrogate escape")
                }
                self.index += 2
                let low = try self.hex4()
                guard (0xDC00...0xDFFF).contains(low) else { throw Failure(description: "unpaired high surrogate escape") }
                return Unicode.Scalar(0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00))!
            }
            return Unicode.Scalar(unit)!
        default:
            throw Failure(description: "invalid escape at byte \(self.index - 1)")
        }
    }

    private static func appendUTF8(of scalar: Unicode.Scalar, to bytes: inout [UInt8]) {
        let value = scalar.value
        switch value {
        case 0..<0x80:
            bytes.append(UInt8(value))
        case 0x80..<0x800:
            bytes.append(0xC0 | UInt8(value >> 6))
            bytes.append(0x80 | UInt8(value & 0x3F))
        case 0x800..<0x10000:
            bytes.append(0xE0 | UInt8(value >> 12))
            bytes.append(0x80 | UInt8((value >> 6) & 0x3F))
            bytes.append(0x80 | UInt8(value & 0x3F))
        default:
            bytes.append(0xF0 | UInt8(value >> 18))
            bytes.append(0x80 | UInt8((value >> 12) & 0x3F))
            bytes.append(0x80 | UInt8((value >> 6) & 0x3F))
            bytes.append(0x80 | UInt8(value & 0x3F))
        }
    }

    private mutating func hex4() throws -> UInt32 {
        guard self.index + 4 <= self.bytes.count else { throw Failure(description: "unterminated \\u escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = self.bytes[self.index]
            let digit: UInt32
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A") + 10)
            default: throw Failure(description: "invalid \\u escape")
            }
            value = value << 4 | digit
            self.index += 1
        }
        return value
    }

    // MARK: Numbers and literals

    private mutating func number() throws -> JSONNumber {
        let start = self.index
        if self.peek() == UInt8(ascii: "-") { self.index += 1 }
        if self.peek() == UInt8(ascii: "0") {
            self.index += 1
        } else {
            guard self.skipDigits() > 0 else { throw Failure(description: "invalid number at byte \(start)") }
        }
        if self.peek() == UInt8(ascii: ".") {
            self.index += 1
            guard self.skipDigits() > 0 else { throw Failure(description: "invalid number at byte \(start)") }
        }
        if self.peek() == UInt8(ascii: "e") || self.peek() == UInt8(ascii: "E") {
            self.index += 1
            if self.peek() == UInt8(ascii: "+") || self.peek() == UInt8(ascii: "-") { self.index += 1 }
            guard self.skipDigits() > 0 else { throw Failure(description: "invalid number at byte \(start)") }
        }
        guard self.index - start <= Self.maxNumberLength else { throw Failure(description: "number out of range at byte \(start)") }
        let text = String(decoding: UnsafeBufferPointer(rebasing: self.bytes[start..<self.index]), as: UTF8.self)
        guard DecimalParts(text).plainDecimalLength <= Self.maxNumberLength else {
            throw Failure(description: "number out of range at byte \(start)")
        }
        guard let literal = JSONNumberLiteral(text) else { throw Failure(description: "invalid number at byte \(start)") }
        return JSONNumber(literal)
    }

    private mutating func skipDigits() -> Int {
        let start = self.index
        while let byte = self.peek(), (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) { self.index += 1 }
        return self.index - start
    }

    private mutating func literal(_ word: String) throws {
        for (offset, expected) in word.utf8.enumerated() where self.peek(at: offset) != expected {
            throw Failure(description: "unexpected character at byte \(self.index + offset)")
        }
        self.index += word.utf8.count
    }

    // MARK: Bytes

    private func peek(at offset: Int = 0) -> UInt8? {
        self.index + offset < self.bytes.count ? self.bytes[self.index + offset] : nil
    }

    private mutating func expect(_ byte: UInt8) throws {
        guard self.peek() == byte else { throw Failure(description: "expected \(Character(Unicode.Scalar(byte))) at byte \(self.index)") }
        self.index += 1
    }

    private mutating func skipWhitespace() {
        while let byte = self.peek(), byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 { self.index += 1 }
    }
}
