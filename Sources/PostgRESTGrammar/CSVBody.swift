/// PostgREST's CSV request body (`Content-Type: text/csv`, PostgREST's `csvToJson` over cassava's `decodeByName`):
/// the first record names the columns, each further record is a row of text values, and an unquoted or quoted `NULL`
/// is SQL NULL. Records end at LF or CRLF (the last may end the body instead); a field may be quoted (`"a,b"`), a quote
/// inside doubled (`""`), and then holds commas and line ends. Refused: a record with another number of fields than
/// the header (PostgREST's "All lines must have same number of fields"), an unterminated quote or text after a closing
/// quote, a header naming a column twice or none, invalid UTF-8 and NUL (PostgreSQL cannot hold it).
public enum CSVBody {
    /// Why a body is refused, in words for the client.
    public struct Failure: Error, Sendable, Equatable {
        public let message: String
    }

    /// The header's names and each row's values (nil for `NULL`), in the body's order.
    public static func parse(_ bytes: some Collection<UInt8>) throws(Failure) -> (names: [String], rows: [[String?]]) {
        var records = try Self.records(Array(bytes))
        guard !records.isEmpty else { throw Failure(message: "The CSV body has no header line") }
        let names = records.removeFirst()
        guard !names.contains(where: \.isEmpty) else { throw Failure(message: "A column name in the CSV header is empty") }
        guard Set(names).count == names.count else { throw Failure(message: "The CSV header names a column twice") }
        guard records.allSatisfy({ $0.count == names.count }) else { throw Failure(message: "All lines must have same number of fields") }
        return (names, records.map { record in record.map { $0 == "NULL" ? nil : $0 } })
    }

    private static let quote = UInt8(ascii: "\""), comma = UInt8(ascii: ","), cr = UInt8(ascii: "\r"), lf = UInt8(ascii: "\n")

    /// The body's records as text fields.
    private static func records(_ bytes: [UInt8]) throws(Failure) -> [[String]] {
        var records: [[String]] = []
        var record: [String] = []
        var field: [UInt8] = []
        var quoted = false
        var inQuotes = false
        func endField() throws(Failure) {
            guard !field.contains(0) else { throw Failure(message: "A CSV field holds a NUL character") }
            guard let text = String(validating: field, as: UTF8.self) else { throw Failure(message: "The CSV body is not valid UTF-8") }
            record.append(text)
            field.removeAll(keepingCapacity: true)
            quoted = false
        }
        func endRecord() {
            records.append(record)
            record = []
        }
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if inQuotes {
                if byte == Self.quote {
                    if index + 1 < bytes.count, bytes[index + 1] == Self.quote {
                        field.append(Self.quote)
                        index += 2
                        continue
                    }
                    inQuotes = false
                    index += 1
                    if index < bytes.count, ![Self.comma, Self.cr, Self.lf].contains(bytes[index]) {
                        throw Failure(message: "A quoted CSV field must end at a comma or a line end")
                    }
                    continue
                }
                field.append(byte)
                index += 1
                continue
            }
            switch byte {
            case Self.quote where field.isEmpty && !quoted:
                inQuotes = true
                quoted = true
                index += 1
            case Self.comma:
                try endField()
                index += 1
            case Self.cr where index + 1 < bytes.count && bytes[index + 1] == Self.lf:
                try endField()
                endRecord()
                index += 2
            case Self.lf:
                try endField()
                endRecord()
                index += 1
            default:
                field.append(byte)
                index += 1
            }
        }
        guard !inQuotes else { throw Failure(message: "A quoted CSV field is not closed") }
        // A last record without a line end (nothing at all after a final line end is no record).
        if !field.isEmpty || !record.isEmpty || quoted {
            try endField()
            endRecord()
        }
        return records
    }
}
