import CLibPQ
import Foundation

/// The rows of one statement's result. Owns its `PGresult`, which `PQclear` frees when the last reference goes.
///
/// `@unchecked Sendable`: libpq documents a `PGresult` as read-only after creation, safe to read from any thread,
/// and this type never mutates it.
public final class PostgresResult: @unchecked Sendable {
    private let handle: OpaquePointer
    /// Number of rows returned.
    public let rowCount: Int
    /// Number of columns.
    public let columnCount: Int

    /// Takes ownership of `handle`. Names, types and the tag are read from the `PGresult` when asked for, not copied
    /// for every result (a request's results are mostly read by position or by one name).
    init(taking handle: OpaquePointer) {
        self.handle = handle
        self.rowCount = Int(PQntuples(handle))
        self.columnCount = Int(PQnfields(handle))
    }

    /// Column names, in order.
    public var columnNames: [String] { (0..<self.columnCount).map { String(cString: PQfname(self.handle, Int32($0))) } }

    /// Column type OIDs, in order.
    public var columnTypes: [UInt32] { (0..<self.columnCount).map { UInt32(PQftype(self.handle, Int32($0))) } }

    /// The command tag, e.g. `INSERT 0 1` or `SELECT 3`.
    public var commandTag: String { String(cString: PQcmdStatus(self.handle)) }

    deinit { PQclear(self.handle) }

    /// Rows affected by an INSERT/UPDATE/DELETE/MERGE (the last number of the command tag), if any.
    public var affectedRows: Int? {
        guard let last = self.commandTag.split(separator: " ").last else { return nil }
        return Int(last)
    }

    /// The rows, in order.
    public var rows: [PostgresRow] { (0..<self.rowCount).map { PostgresRow(result: self, index: $0) } }

    /// The first row, if there is one.
    public var first: PostgresRow? { self.rowCount > 0 ? PostgresRow(result: self, index: 0) : nil }

    /// The index of the column named `name`.
    public func columnIndex(_ name: String) -> Int? {
        name.withCString { wanted in (0..<self.columnCount).first { strcmp(PQfname(self.handle, Int32($0)), wanted) == 0 } }
    }

    /// The cell at `row`, `column`: its text bytes are copied out, so nothing points into the `PGresult`.
    func cell(row: Int, column: Int) -> PostgresCell {
        precondition(row < self.rowCount && column < self.columnCount, "cell index out of range")
        let bytes: [UInt8]?
        if PQgetisnull(self.handle, Int32(row), Int32(column)) == 1 {
            bytes = nil
        } else {
            let length = Int(PQgetlength(self.handle, Int32(row), Int32(column)))
            bytes = PQgetvalue(self.handle, Int32(row), Int32(column)).withMemoryRebound(to: UInt8.self, capacity: length) {
                Array(UnsafeBufferPointer(start: $0, count: length))
            }
        }
        return PostgresCell(
            bytes: bytes, typeOID: UInt32(PQftype(self.handle, Int32(column))), columnName: String(cString: PQfname(self.handle, Int32(column))))
    }
}

/// One row of a `PostgresResult`.
public struct PostgresRow: Sendable {
    let result: PostgresResult
    let index: Int

    /// The cell in column `column`.
    public subscript(column: Int) -> PostgresCell { self.result.cell(row: self.index, column: column) }

    /// The cell in the column named `name`.
    public func cell(_ name: String) throws -> PostgresCell {
        guard let column = self.result.columnIndex(name) else {
            throw PostgresError(.decoding, message: "no column named \(name)")
        }
        return self[column]
    }

    /// Decodes column `column`.
    public func decode<T: PostgresDecodable>(_ type: T.Type = T.self, at column: Int) throws -> T {
        try T(postgresCell: self[column])
    }

    /// Decodes the column named `name`.
    public func decode<T: PostgresDecodable>(_ type: T.Type = T.self, _ name: String) throws -> T {
        try T(postgresCell: try self.cell(name))
    }
}

/// One value of a result in PostgreSQL's text format; `bytes` is `nil` for SQL `NULL`.
public struct PostgresCell: Sendable {
    public let bytes: [UInt8]?
    public let typeOID: UInt32
    public let columnName: String

    /// The text of the value, or `nil` for `NULL`.
    public var text: String? { self.bytes.map { String(decoding: $0, as: UTF8.self) } }

    public var isNull: Bool { self.bytes == nil }

    /// Decodes the value into `type`.
    public func decode<T: PostgresDecodable>(_ type: T.Type = T.self) throws -> T { try T(postgresCell: self) }

    func decodingError(_ expected: String) -> PostgresError {
        PostgresError(
            .decoding,
            message: "column \(self.columnName) (type oid \(self.typeOID)) is \(self.isNull ? "NULL" : "not a valid \(expected)")"
        )
    }

    func requireText(_ expected: String) throws -> String {
        guard let text = self.text else { throw self.decodingError(expected) }
        return text
    }

    /// The text of the value made into a `T` by `parse`; a decoding error naming `expected` for `NULL`, or for text
    /// `parse` refuses (answers nil for).
    func parseText<T>(_ expected: String, _ parse: (String) -> T?) throws -> T {
        guard let value = parse(try self.requireText(expected)) else { throw self.decodingError(expected) }
        return value
    }
}
