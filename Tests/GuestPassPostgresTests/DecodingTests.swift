import Foundation
import GuestPassPostgres
import GuestPassTestSupport
import Testing

/// Every supported type goes to the server as a bound parameter and comes back decoded to the same value.
@Suite struct DecodingTests {
    @Test func everyTypeRoundTripsIncludingNull() async throws {
        try await TestDatabase.with(migrated: false, pool: { $0.ownerPool() }) { database, pool in
            let uuid = UUID()
            let instant = Date(timeIntervalSince1970: 1_795_000_000.123456)
            let bytes: [UInt8] = [0, 1, 2, 0x7f, 0x80, 0xfe, 0xff, 0x5c, 0x78]
            let row = try #require(
                try await pool.execute(
                    """
                    SELECT $1::text, $2::int8, $3::int4, $4::bool, $5::float8, $6::uuid, $7::timestamptz, $8::date,
                           $9::json, $10::jsonb, $11::bytea, $12::text, $13::int8, $14::text, $15::float8
                    """,
                    [
                        "héllo 'quoted' \\ \u{1F600}", Int.max, Int32.min, true, 3.141592653589793, uuid, instant,
                        PostgresDate(year: 2024, month: 2, day: 29), PostgresJSON(text: #"{"a": [1, 2]}"#),
                        PostgresJSON(text: #"{"b": null, "a": "x"}"#), bytes, String?.none, Int?.none, "", -0.5,
                    ]
                ).first
            )
            #expect(try row.decode(String.self, at: 0) == "héllo 'quoted' \\ \u{1F600}")
            #expect(try row.decode(Int.self, at: 1) == Int.max)
            #expect(try row.decode(Int32.self, at: 2) == Int32.min)
            #expect(try row.decode(Bool.self, at: 3) == true)
            #expect(try row.decode(Double.self, at: 4) == 3.141592653589793)
            #expect(try row.decode(UUID.self, at: 5) == uuid)
            let decodedInstant = try row.decode(Date.self, at: 6)
            #expect(abs(decodedInstant.timeIntervalSince1970 - instant.timeIntervalSince1970) < 0.000_001)
            #expect(try row.decode(PostgresDate.self, at: 7) == PostgresDate(year: 2024, month: 2, day: 29))
            #expect(try row.decode(PostgresJSON.self, at: 8).text == #"{"a": [1, 2]}"#)
            struct Document: Decodable, Equatable {
                let a: String
                let b: Int?
            }
            #expect(try row.decode(PostgresJSON.self, at: 9).decode(Document.self) == Document(a: "x", b: nil))
            #expect(try row.decode([UInt8].self, at: 10) == bytes)
            #expect(try row.decode(String?.self, at: 11) == nil)
            #expect(try row.decode(Int?.self, at: 12) == nil)
            #expect(try row.decode(String.self, at: 13) == "")
            #expect(try row.decode(Double.self, at: 14) == -0.5)
            #expect(try row.decode(Data.self, at: 10) == Data(bytes))
        }
    }

    @Test func nullIntoNonOptionalIsATypedError() async throws {
        try await TestDatabase.with(migrated: false, pool: { $0.ownerPool() }) { database, pool in
            let row = try #require(try await pool.execute("SELECT NULL::int8 AS n, 'x'::text AS t").first)
            #expect(throws: PostgresError.self) { try row.decode(Int.self, "n") }
            #expect(throws: PostgresError.self) { try row.decode(Int.self, "t") }
            #expect(throws: PostgresError.self) { try row.decode(Int.self, "missing") }
            #expect(try row.decode(Int?.self, "n") == nil)
        }
    }

    @Test func timestampsFromOtherOffsetsAndNamedColumns() async throws {
        try await TestDatabase.with(migrated: false, pool: { $0.ownerPool() }) { database, pool in
            let row = try #require(
                try await pool.execute(
                    "SELECT '2026-03-01 12:00:00+05:30'::timestamptz AS at, '1999-12-31'::date AS day, 42::int2 AS small, 7::oid AS o"
                ).first
            )
            let expected = try #require(ISO8601DateFormatter().date(from: "2026-03-01T06:30:00Z"))
            #expect(try row.decode(Date.self, "at") == expected)
            #expect(try row.decode(PostgresDate.self, "day").description == "1999-12-31")
            #expect(try row.decode(Int.self, "small") == 42)
            #expect(try row.decode(Int.self, "o") == 7)
        }
    }

    /// The API's timestamps (`RFC3339.format`) read back by PostgreSQL as the same instant, to the microsecond, and
    /// written as GoTrue writes them: four-digit year, two-digit fields, six fractional digits, `Z`.
    @Test func rfc3339TimestampsAreWhatPostgreSQLReadsBack() async throws {
        #expect(RFC3339.format(Date(timeIntervalSince1970: 0)) == "1970-01-01T00:00:00.000000Z")
        #expect(RFC3339.format(Date(timeIntervalSince1970: 1_795_000_000.123456)) == "2026-11-18T11:06:40.123456Z")
        #expect(RFC3339.format(Date(timeIntervalSince1970: 951_825_600.000_5)) == "2000-02-29T12:00:00.000500Z")
        try await TestDatabase.with(pool: { $0.loginPool(maxConnections: 1) }) { _, pool in
            for seconds in [0.0, 1_795_000_000.123456, 951_825_600.000_5, 4_102_444_799.999_999] {
                let text = RFC3339.format(Date(timeIntervalSince1970: seconds))
                let row = try await pool.execute("SELECT (extract(epoch FROM $1::timestamptz) * 1000000)::int8, $1::timestamptz::text", [text]).rows[
                    0]
                #expect(try row.decode(Int.self, at: 0) == Int((seconds * 1_000_000).rounded(.down)), "\(text)")
            }
        }
    }
}
