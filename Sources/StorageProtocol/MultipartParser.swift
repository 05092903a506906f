#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif
public import NIOCore

/// A streaming reader of a `multipart/form-data` upload body (RFC 7578), as Supabase Storage reads one: the form
/// fields that come before the first file part (`cacheControl`, `metadata`, `contentType`), then that file part's
/// bytes as they arrive, never the whole body in memory. Parts after the first file are read and dropped.
///
/// Feed it the body's chunks in order; it answers events. A body must end with the closing delimiter: `finish()`
/// throws `truncated` otherwise, so a cut-off upload is never taken for a whole one. Limits: part headers 16 KiB,
/// fields 1 MiB in all and 32 parts; past them it throws rather than buffer.
public struct MultipartParser {
    /// What the body held, in order.
    public enum Event: Equatable {
        /// A form field (a part without a file name): its name and value.
        case field(name: String, value: [UInt8])
        /// The first file part starts: the bytes that follow are its content.
        case fileStart(FilePart)
        /// Some of the file's bytes.
        case fileBytes(ByteBuffer)
        /// The file part ended.
        case fileEnd
    }

    /// The headers of the file part.
    public struct FilePart: Equatable, Sendable {
        /// The form field's name: `file` from supabase-py, empty from supabase-swift.
        public let fieldName: String
        public let filename: String
        /// The part's `Content-Type`, if it has one.
        public let contentType: String?

        public init(fieldName: String, filename: String, contentType: String?) {
            self.fieldName = fieldName
            self.filename = filename
            self.contentType = contentType
        }
    }

    /// Why a body is not a readable form.
    public enum Failure: Error, Equatable, Sendable {
        /// The body ended before the closing delimiter.
        case truncated
        /// Not multipart/form-data as RFC 7578 writes it; the reason.
        case malformed(String)
        /// Over a limit (headers, fields, parts).
        case tooLarge(String)
    }

    private enum State {
        case preamble
        case afterDelimiter
        case headers
        case field(name: String, value: [UInt8])
        case file
        case skippedPart
        case epilogue
    }

    private static let maxHeaderBytes = 16 * 1024
    private static let maxFieldBytes = 1024 * 1024
    private static let maxParts = 32

    private let delimiter: [UInt8]
    private var pending: ByteBuffer
    private var state = State.preamble
    private var fieldBytes = 0
    private var parts = 0
    private var sawFile = false

    /// A parser for the body of a request whose boundary is `boundary` (see `boundary(contentType:)`).
    public init(boundary: String) {
        self.delimiter = Array("\r\n--\(boundary)".utf8)
        // The first delimiter may open the body with no CRLF before it: one is supplied.
        self.pending = ByteBuffer(bytes: [13, 10])
    }

    /// The `boundary` parameter of a `multipart/form-data` content type, or nil when the type is something else or
    /// the boundary is missing or not 1 to 70 characters (RFC 2046).
    public static func boundary(contentType: String) -> String? {
        let parts = contentType.split(separator: ";").map { $0.trimmingCharacters(in: " \t") }
        guard let type = parts.first, type.lowercased() == "multipart/form-data" else { return nil }
        for parameter in parts.dropFirst() {
            guard let equals = parameter.firstIndex(of: "=") else { continue }
            guard parameter[..<equals].trimmingCharacters(in: " \t").lowercased() == "boundary" else { continue }
            var value = parameter[parameter.index(after: equals)...].trimmingCharacters(in: " \t")
            if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") { value = String(value.dropFirst().dropLast()) }
            guard (1...70).contains(value.utf8.count), !value.utf8.contains(where: { $0 < 32 || $0 > 126 }) else { return nil }
            return value
        }
        return nil
    }

    /// Whether the closing delimiter has been read (what follows it is ignored).
    public var isComplete: Bool {
        if case .epilogue = self.state { return true }
        return false
    }

    /// Reads `chunk`, the body's next bytes, and answers the events it completes.
    public mutating func feed(_ chunk: ByteBuffer) throws(Failure) -> [Event] {
        if case .epilogue = self.state { return [] }
        var chunk = chunk
        self.pending.writeBuffer(&chunk)
        var events: [Event] = []
        while try self.step(&events) {}
        return events
    }

    /// The body ended: throws `truncated` unless the closing delimiter was read.
    public func finish() throws(Failure) {
        guard self.isComplete else { throw .truncated }
    }

    /// One step of the state machine; false when it needs more bytes.
    private mutating func step(_ events: inout [Event]) throws(Failure) -> Bool {
        switch self.state {
        case .epilogue:
            self.pending.clear()
            return false
        case .preamble:
            guard let index = self.find(self.delimiter) else {
                // Keep only what could still begin a delimiter.
                let keep = min(self.pending.readableBytes, self.delimiter.count - 1)
                self.pending.moveReaderIndex(forwardBy: self.pending.readableBytes - keep)
                self.pending.discardReadBytes()
                return false
            }
            self.pending.moveReaderIndex(forwardBy: index + self.delimiter.count)
            self.state = .afterDelimiter
            return true
        case .afterDelimiter:
            guard self.pending.readableBytes >= 2, let two = self.pending.readBytes(length: 2) else { return false }
            if two == [45, 45] {
                self.state = .epilogue
                self.pending.clear()
                return false
            }
            guard two == [13, 10] else { throw .malformed("a boundary must be followed by CRLF or --") }
            self.parts += 1
            guard self.parts <= Self.maxParts else { throw .tooLarge("more than \(Self.maxParts) parts") }
            self.state = .headers
            return true
        case .headers:
            let end: Int
            let skip: Int
            if self.pending.readableBytes >= 2, self.pending.getBytes(at: self.pending.readerIndex, length: 2) == [13, 10] {
                (end, skip) = (0, 2)
            } else if let index = self.find([13, 10, 13, 10]) {
                (end, skip) = (index, index + 4)
            } else {
                guard self.pending.readableBytes <= Self.maxHeaderBytes else { throw .tooLarge("part headers over 16 KiB") }
                return false
            }
            guard end <= Self.maxHeaderBytes else { throw .tooLarge("part headers over 16 KiB") }
            let text = self.pending.getString(at: self.pending.readerIndex, length: end) ?? ""
            self.pending.moveReaderIndex(forwardBy: skip)
            let headers = try Self.partHeaders(text)
            guard let disposition = headers.disposition else { throw .malformed("a part without Content-Disposition: form-data") }
            if let filename = disposition.filename {
                if self.sawFile {
                    self.state = .skippedPart
                } else {
                    self.sawFile = true
                    events.append(.fileStart(FilePart(fieldName: disposition.name, filename: filename, contentType: headers.contentType)))
                    self.state = .file
                }
            } else {
                self.state = .field(name: disposition.name, value: [])
            }
            return true
        case .field(let name, var value):
            let found = self.find(self.delimiter)
            let available = found ?? max(0, self.pending.readableBytes - (self.delimiter.count - 1))
            self.fieldBytes += available
            guard self.fieldBytes <= Self.maxFieldBytes else { throw .tooLarge("form fields over 1 MiB") }
            value += self.pending.readBytes(length: available) ?? []
            guard found != nil else {
                self.state = .field(name: name, value: value)
                self.pending.discardReadBytes()
                return false
            }
            self.pending.moveReaderIndex(forwardBy: self.delimiter.count)
            events.append(.field(name: name, value: value))
            self.state = .afterDelimiter
            return true
        case .file, .skippedPart:
            let isFile: Bool
            if case .file = self.state { isFile = true } else { isFile = false }
            if let index = self.find(self.delimiter) {
                if index > 0, let bytes = self.pending.readSlice(length: index), isFile { events.append(.fileBytes(bytes)) }
                self.pending.moveReaderIndex(forwardBy: self.delimiter.count)
                if isFile { events.append(.fileEnd) }
                self.state = .afterDelimiter
                return true
            }
            let safe = self.pending.readableBytes - (self.delimiter.count - 1)
            if safe > 0, let bytes = self.pending.readSlice(length: safe), isFile { events.append(.fileBytes(bytes)) }
            // The slices handed out keep the storage they view; the few bytes left move to storage of their own.
            self.pending.discardReadBytes()
            return false
        }
    }

    /// The offset, from the reader index, of the first occurrence of `pattern` in the pending bytes.
    private func find(_ pattern: [UInt8]) -> Int? {
        self.pending.withUnsafeReadableBytes { buffer -> Int? in
            guard let base = buffer.baseAddress, buffer.count >= pattern.count, let first = pattern.first else { return nil }
            var offset = 0
            let last = buffer.count - pattern.count
            while offset <= last {
                guard let hit = memchr(base + offset, Int32(first), last - offset + 1) else { return nil }
                let at = base.distance(to: UnsafeRawPointer(hit))
                let matches = pattern.withUnsafeBytes { memcmp(base + at, $0.baseAddress!, pattern.count) == 0 }
                if matches { return at }
                offset = at + 1
            }
            return nil
        }
    }

    private struct Disposition {
        var name: String
        var filename: String?
    }

    private static func partHeaders(_ text: String) throws(Failure) -> (disposition: Disposition?, contentType: String?) {
        var disposition: Disposition?
        var contentType: String?
        for line in text.split(separator: "\r\n", omittingEmptySubsequences: true) {
            guard let colon = line.firstIndex(of: ":") else { throw .malformed("a part header without a colon") }
            let name = line[..<colon].trimmingCharacters(in: " \t").lowercased()
            let value = line[line.index(after: colon)...].trimmingCharacters(in: " \t")
            switch name {
            case "content-disposition": disposition = Self.disposition(value)
            case "content-type": contentType = value
            default: continue
            }
        }
        return (disposition, contentType)
    }

    /// `form-data; name="x"; filename="y"`: quoted values may hold `;` and escaped quotes.
    private static func disposition(_ value: String) -> Disposition? {
        var parameters: [String: String] = [:]
        var scalars = Substring(value)
        guard let semicolon = scalars.firstIndex(of: ";") ?? Optional(scalars.endIndex),
            scalars[..<semicolon].trimmingCharacters(in: " \t").lowercased() == "form-data"
        else { return nil }
        scalars = scalars[semicolon...]
        while let start = scalars.firstIndex(of: ";") {
            scalars = scalars[scalars.index(after: start)...]
            guard let equals = scalars.firstIndex(of: "=") else { break }
            let key = scalars[..<equals].trimmingCharacters(in: " \t").lowercased()
            var rest = scalars[scalars.index(after: equals)...].drop { $0 == " " || $0 == "\t" }
            var parsed = ""
            if rest.first == "\"" {
                rest = rest.dropFirst()
                var escaped = false
                var end = rest.endIndex
                for index in rest.indices {
                    let character = rest[index]
                    if escaped {
                        parsed.append(character)
                        escaped = false
                    } else if character == "\\" {
                        escaped = true
                    } else if character == "\"" {
                        end = index
                        break
                    } else {
                        parsed.append(character)
                    }
                }
                scalars = end < rest.endIndex ? rest[rest.index(after: end)...] : rest[rest.endIndex...]
            } else {
                let end = rest.firstIndex(of: ";") ?? rest.endIndex
                parsed = rest[..<end].trimmingCharacters(in: " \t")
                scalars = rest[end...]
            }
            if parameters[key] == nil { parameters[key] = parsed }
        }
        return Disposition(name: parameters["name"] ?? "", filename: parameters["filename"])
    }
}

extension StringProtocol {
    fileprivate func trimmingCharacters(in set: String) -> String {
        var text = Substring(self)
        while let first = text.first, set.contains(first) { text = text.dropFirst() }
        while let last = text.last, set.contains(last) { text = text.dropLast() }
        return String(text)
    }
}
