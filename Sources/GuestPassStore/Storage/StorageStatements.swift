public import Foundation
public import GuestPassPostgres

/// Every statement of Supabase Storage's API. Each runs in the request transaction as the caller's role and verified
/// claims (or as the bucket's app's `service_role` for public and signed access), straight on `storage.buckets` and
/// `storage.objects`, so the app's row-level security decides (`sql/migrations/repeatable/16_storage.sql`). JSON
/// bodies are built in SQL with Supabase's field names and `YYYY-MM-DDTHH:MM:SS.sssZ` dates.
public enum StorageStatements {
    /// A timestamp as JavaScript's `toISOString` writes it (supabase-swift rejects PostgreSQL's text form).
    static func iso(_ column: String) -> String {
        "to_char(\(column) at time zone 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"
    }

    // MARK: Buckets

    static let bucketJSON = """
        json_build_object('id', b.id, 'name', b.name, 'owner', coalesce(b.owner::text, ''), 'public', b.public,
            'file_size_limit', b.file_size_limit, 'allowed_mime_types', b.allowed_mime_types, 'type', b.type,
            'created_at', \(iso("b.created_at")), 'updated_at', \(iso("b.updated_at")))
        """

    /// The buckets the caller sees, as a JSON array (`GET /bucket`): `search` filters names by a case-insensitive
    /// substring; sorted by `sortColumn` (id, name, created_at, updated_at) in `ascending` order.
    public static func listBuckets(limit: Int?, offset: Int, search: String?, sortColumn: String, ascending: Bool) -> PostgresStatement {
        let column = ["id", "name", "created_at", "updated_at"].contains(sortColumn) ? sortColumn : "name"
        return PostgresStatement(
            """
            select coalesce(json_agg(x.bucket order by x.rank), '[]')::text as body
            from (
                select \(bucketJSON) as bucket, row_number() over (order by b.\(column) \(ascending ? "asc" : "desc"), b.id) as rank
                from storage.buckets as b
                where $1::text is null or strpos(lower(b.name), lower($1::text)) > 0
                order by rank
                limit $2 offset $3
            ) as x
            """, [search, limit, offset])
    }

    /// One bucket as JSON (`GET /bucket/{id}`); no row when the caller sees none of that name.
    public static func bucket(_ id: String) -> PostgresStatement {
        PostgresStatement("select \(bucketJSON)::text as body from storage.buckets as b where b.id = $1", [id])
    }

    /// `POST /bucket`: a bucket of the caller's app, owned by the caller's user (none for the secret key).
    public static func createBucket(_ id: String, isPublic: Bool, fileSizeLimit: Int64?, allowedMimeTypes: [String]?) -> PostgresStatement {
        PostgresStatement(
            """
            insert into storage.buckets (id, name, owner, owner_id, public, file_size_limit, allowed_mime_types)
            values ($1, $1, auth.uid(), auth.uid()::text, $2, $3, $4::text[])
            """, [id, isPublic, fileSizeLimit, allowedMimeTypes.map(PostgresTextArray.literal)])
    }

    /// `PUT /bucket/{id}`: the fields given (nil leaves one as it is; `clearsLimit`/`clearsTypes` set it to null).
    public static func updateBucket(
        _ id: String, isPublic: Bool?, fileSizeLimit: Int64??, allowedMimeTypes: [String]??
    ) -> PostgresStatement {
        PostgresStatement(
            """
            update storage.buckets as b
            set public = coalesce($2, b.public),
                file_size_limit = case when $3 then $4 else b.file_size_limit end,
                allowed_mime_types = case when $5 then $6::text[] else b.allowed_mime_types end
            where b.id = $1
            """,
            [
                id, isPublic, fileSizeLimit != nil, fileSizeLimit ?? nil, allowedMimeTypes != nil,
                (allowedMimeTypes ?? nil).map(PostgresTextArray.literal),
            ])
    }

    /// `POST /bucket/{id}/empty`: removes every object of the bucket the caller may remove.
    public static func emptyBucket(_ id: String) -> PostgresStatement {
        PostgresStatement("delete from storage.objects as o where o.bucket_id = $1", [id])
    }

    /// `DELETE /bucket/{id}`: 23503 while objects remain.
    public static func deleteBucket(_ id: String) -> PostgresStatement {
        PostgresStatement("delete from storage.buckets as b where b.id = $1", [id])
    }

    // MARK: Uploads

    /// The row an upload writes: its values, the same for the dry run and the commit.
    public struct ObjectWrite: Sendable {
        public var id: UUID
        public var bucket: String
        public var name: String
        /// The owner for a signed upload (the signer); nil: the caller (`auth.uid()`).
        public var owner: UUID?
        public var device: UUID?
        public var version: String
        /// The store the bytes go to (`ObjectBackend.store`).
        public var store: String
        /// System metadata (`{eTag, size, mimetype, cacheControl, lastModified, contentLength, httpStatusCode}`).
        public var metadataJSON: String
        public var userMetadataJSON: String?
        public var upsert: Bool

        public init(
            id: UUID, bucket: String, name: String, owner: UUID?, device: UUID?, version: String, store: String, metadataJSON: String,
            userMetadataJSON: String?, upsert: Bool
        ) {
            (self.id, self.bucket, self.name, self.owner, self.device, self.store) = (id, bucket, name, owner, device, store)
            (self.version, self.metadataJSON, self.userMetadataJSON, self.upsert) = (version, metadataJSON, userMetadataJSON, upsert)
        }
    }

    /// The start of an upload: the bucket's rules and a reserved version (`storage_upload_begin`), then the write
    /// tried under the caller's policies and rolled back (Supabase's "test permission"), so a refusal comes before any
    /// byte is stored. Results: [setting, begin, savepoint, write, rollback].
    ///
    /// Its commit does not wait for the WAL flush (`synchronous_commit` off for this transaction only): the upload's
    /// own commit flushes it anyway, so only a database crash while the bytes stream can lose a reservation, which
    /// leaves those bytes unswept (garbage, never an acknowledged object lost), and each upload saves one disk flush.
    public static func beginUpload(_ write: ObjectWrite, mimeType: String?, declaredLength: Int64?, graceSeconds: Int) -> [PostgresStatement] {
        [
            PostgresStatement("select set_config('synchronous_commit', 'off', true)"),
            PostgresStatement(
                """
                select b.size_limit, b.user_bytes_left, b.user_objects_left
                from guestpass_server.storage_upload_begin($1, $2, $3, $4, $5::bigint, $6::integer) as b
                """, [write.bucket, write.version, write.store, mimeType, declaredLength, graceSeconds]),
            PostgresStatement("savepoint storage_dry_run"),
            Self.writeObject(write),
            PostgresStatement("rollback to savepoint storage_dry_run"),
        ]
    }

    /// A signed upload URL's check when it is made: the start of an upload under the caller's policies, all of it
    /// rolled back (no reservation is kept; the upload through the URL makes its own).
    public static func signedUploadCheck(_ write: ObjectWrite) -> [PostgresStatement] {
        [PostgresStatement("savepoint storage_signing")] + Self.beginUpload(write, mimeType: nil, declaredLength: nil, graceSeconds: 60)
            + [PostgresStatement("rollback to savepoint storage_signing")]
    }

    /// The row of an upload whose bytes are stored: an insert (23505 when the key exists), or with `upsert` an
    /// insert or update of the key (the row keeps its id). Answers the object's id.
    public static func writeObject(_ write: ObjectWrite) -> PostgresStatement {
        let values: [any PostgresEncodable] = [
            write.id, write.bucket, write.name, write.owner, write.device, write.version, PostgresJSON(text: write.metadataJSON),
            write.userMetadataJSON.map(PostgresJSON.init(text:)), write.store,
        ]
        let insert = """
            insert into storage.objects as o (app_id, id, bucket_id, name, owner, device_id, version, metadata, user_metadata, store)
            values (auth.app_id(), $1, $2, $3, coalesce($4::uuid, auth.uid()), coalesce($5::uuid, auth.device_id()), $6, $7, $8, $9)
            """
        guard write.upsert else { return PostgresStatement(insert, values) }
        return PostgresStatement(
            insert + """

                on conflict (app_id, bucket_id, name) do update
                set owner = excluded.owner, device_id = excluded.device_id, version = excluded.version, store = excluded.store,
                    metadata = excluded.metadata,
                    user_metadata = excluded.user_metadata, updated_at = now(), last_accessed_at = now()
                returning o.id
                """, values)
    }

    /// The reservation of an upload that will have no row (its bytes already deleted).
    public static func abandonUpload(key: String) -> PostgresStatement {
        PostgresStatement("select guestpass_server.storage_upload_abandon($1)", [key])
    }

    // MARK: Reads

    /// One row when the caller's app has a bucket named `bucket` (the object routes' view: no bucket policies).
    public static func bucketExists(_ bucket: String) -> PostgresStatement {
        PostgresStatement("select 1 from guestpass_server.storage_bucket($1)", [bucket])
    }

    /// The bucket (none: no row) and, when the caller may see it, the object: `public`, then the object's id,
    /// version, system metadata as columns (size, mimetype, cache_control, etag), user_metadata, its ISO dates and
    /// `updated_epoch` (seconds, for `Last-Modified`); null when not visible or absent.
    public static func object(bucket: String, name: String) -> PostgresStatement {
        PostgresStatement(
            """
            select b.public, o.id, o.version, (o.metadata ->> 'size')::bigint as size, o.metadata ->> 'mimetype' as mimetype,
                o.metadata ->> 'cacheControl' as cache_control, o.metadata ->> 'eTag' as etag,
                o.user_metadata::text as user_metadata, \(iso("o.created_at")) as created_at, \(iso("o.updated_at")) as updated_at,
                floor(extract(epoch from o.updated_at))::bigint as updated_epoch
            from guestpass_server.storage_bucket($1) as b
            left join storage.objects as o on o.app_id = auth.app_id() and o.bucket_id = $1 and o.name = $2
            """, [bucket, name])
    }

    /// `POST /object/list/{bucket}`: the entries of one folder level, Supabase's `storage.search`: a file's row, or a
    /// folder's name with null id, timestamps and metadata; `search` a case-insensitive prefix of the entry name.
    public static func list(
        bucket: String, folder: String, search: String, limit: Int, offset: Int, sortColumn: String, ascending: Bool
    ) -> PostgresStatement {
        let column = ["name", "updated_at", "created_at", "last_accessed_at"].contains(sortColumn) ? sortColumn : "name"
        let direction = ascending ? "asc" : "desc"
        let order =
            column == "name"
            ? "lower(e.name) collate \"C\" \(direction), e.name collate \"C\" \(direction)"
            : "e.\(column) \(direction) nulls last, e.name collate \"C\""
        return PostgresStatement(
            """
            with matching as (
                select substr(o.name, char_length($2) + 1) as rest, o.id, o.created_at, o.updated_at, o.last_accessed_at, o.metadata
                from storage.objects as o
                where o.app_id = auth.app_id() and o.bucket_id = $1 and o.name like $3 escape '\\'
            ), entries as (
                select distinct on (split_part(m.rest, '/', 1)) split_part(m.rest, '/', 1) as name, null::uuid as id,
                    null::timestamptz as created_at, null::timestamptz as updated_at, null::timestamptz as last_accessed_at,
                    null::jsonb as metadata
                from matching as m
                where strpos(m.rest, '/') > 0 and lower(m.rest) like lower($4) escape '\\'
                union all
                select m.rest, m.id, m.created_at, m.updated_at, m.last_accessed_at, m.metadata
                from matching as m
                where strpos(m.rest, '/') = 0 and lower(m.rest) like lower($4) escape '\\'
            ), page as (
                select e.* from entries as e order by \(order) limit $5 offset $6
            )
            select coalesce(json_agg(json_build_object('name', e.name, 'id', e.id, 'updated_at', \(iso("e.updated_at")),
                'created_at', \(iso("e.created_at")), 'last_accessed_at', \(iso("e.last_accessed_at")), 'metadata', e.metadata)
                order by \(order)), '[]')::text as body
            from page as e
            """, [bucket, folder, Self.likePrefix(folder), Self.likePrefix(search), limit, offset])
    }

    /// `text%` with `%`, `_` and `\` escaped for `LIKE … ESCAPE '\'`.
    static func likePrefix(_ text: String) -> String {
        var escaped = ""
        for character in text {
            if character == "%" || character == "_" || character == "\\" { escaped.append("\\") }
            escaped.append(character)
        }
        return escaped + "%"
    }

    /// The rows a JSON object of `storage.objects` is built from (remove's answer).
    static let objectJSON = """
        json_build_object('name', o.name, 'bucket_id', o.bucket_id, 'owner', o.owner, 'owner_id', o.owner_id, 'version', o.version,
            'id', o.id, 'updated_at', \(iso("o.updated_at")), 'created_at', \(iso("o.created_at")),
            'last_accessed_at', \(iso("o.last_accessed_at")), 'metadata', o.metadata, 'user_metadata', o.user_metadata)
        """

    /// `DELETE /object/{bucket}`: removes the named objects the caller may see and delete (others are skipped, as on
    /// Supabase); answers the removed rows as a JSON array.
    public static func remove(bucket: String, names: [String]) -> PostgresStatement {
        PostgresStatement(
            """
            with gone as (
                delete from storage.objects as o
                where o.app_id = auth.app_id() and o.bucket_id = $1 and o.name = any ($2::text[])
                returning o.*
            )
            select coalesce(json_agg(\(objectJSON)), '[]')::text as body from gone as o
            """, [bucket, PostgresTextArray.literal(names)])
    }

    /// `POST /object/move`: renames the row (its bytes stay under their version key, so nothing is copied); no row
    /// changed when the caller cannot see or update the source.
    public static func move(bucket: String, name: String, toBucket: String, toName: String) -> PostgresStatement {
        PostgresStatement(
            """
            update storage.objects as o
            set bucket_id = $3, name = $4, updated_at = now()
            where o.app_id = auth.app_id() and o.bucket_id = $1 and o.name = $2
            returning o.id
            """, [bucket, name, toBucket, toName])
    }

    /// Which of `names` the caller can see in `bucket`, in order (`POST /object/sign/{bucket}`).
    public static func visible(bucket: String, names: [String]) -> PostgresStatement {
        PostgresStatement(
            """
            select p.name, exists (
                select 1 from storage.objects as o where o.app_id = auth.app_id() and o.bucket_id = $1 and o.name = p.name
            ) as visible
            from unnest($2::text[]) with ordinality as p (name, position)
            order by p.position
            """, [bucket, PostgresTextArray.literal(names)])
    }

    // MARK: The sweep

    /// Due backend keys of `store`, leased for `leaseSeconds`; `uploads` includes reservations past their grace period.
    public static func sweepClaim(store: String, limit: Int, leaseSeconds: Int, uploads: Bool) -> PostgresStatement {
        PostgresStatement(
            "select s.key from guestpass_server.storage_sweep_claim($1, $2::integer, $3::integer, $4) as s", [store, limit, leaseSeconds, uploads])
    }

    /// The keys whose bytes are gone.
    public static func sweepDone(_ keys: [String]) -> PostgresStatement {
        PostgresStatement("select guestpass_server.storage_sweep_done($1::text[])", [PostgresTextArray.literal(keys)])
    }

    /// The app of a public bucket named `bucket`, if any (public downloads carry no API key).
    public static func publicBucketApp(_ bucket: String) -> PostgresStatement {
        PostgresStatement("select guestpass_server.storage_public_bucket_app($1) as app_id", [bucket])
    }
}
