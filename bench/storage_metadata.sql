-- pgbench script for bench/storage.sh: the SQL of one upload, as the server sends it for the app's backend (secret
-- key): (1) the request transaction that reserves a version and tries the write under the caller's policies (rolled
-- back to its savepoint), (2) the request transaction that writes the row. The texts __CLAIMS__ and __STORE__ are replaced by bench/storage.sh with the secret key's
-- claims, as the server spells them, and the server's store). The bytes are not written: this is the metadata's share of an upload.
BEGIN;
SELECT set_config('role', 'service_role', true), set_config('request.jwt.claims', '__CLAIMS__', true), set_config('request.client_ip', '127.0.0.1', true), set_config('synchronous_commit', 'off', true), set_config('bench.version', gen_random_uuid()::text, true), set_config('bench.id', gen_random_uuid()::text, true);
SELECT b.size_limit, b.user_bytes_left, b.user_objects_left FROM guestpass_server.storage_upload_begin('bench', current_setting('bench.version'), '__STORE__', 'application/octet-stream', 10240::bigint, 86400::integer) AS b;
SAVEPOINT storage_dry_run;
INSERT INTO storage.objects AS o (app_id, id, bucket_id, name, owner, device_id, version, store, metadata, user_metadata) VALUES (auth.app_id(), current_setting('bench.id')::uuid, 'bench', 'pg-' || current_setting('bench.version'), coalesce(null::uuid, auth.uid()), coalesce(null::uuid, auth.device_id()), current_setting('bench.version'), '__STORE__', '{"eTag":"\"x\"","size":10240,"mimetype":"application/octet-stream","cacheControl":"no-cache","lastModified":"2026-01-01T00:00:00.000000Z","contentLength":10240,"httpStatusCode":200}', null);
ROLLBACK TO SAVEPOINT storage_dry_run;
SELECT set_config('bench.kept_version', current_setting('bench.version'), false), set_config('bench.kept_id', current_setting('bench.id'), false);
COMMIT;
BEGIN;
SELECT set_config('role', 'service_role', true), set_config('request.jwt.claims', '__CLAIMS__', true), set_config('request.client_ip', '127.0.0.1', true);
INSERT INTO storage.objects AS o (app_id, id, bucket_id, name, owner, device_id, version, store, metadata, user_metadata) VALUES (auth.app_id(), current_setting('bench.kept_id')::uuid, 'bench', 'pg-' || current_setting('bench.kept_version'), coalesce(null::uuid, auth.uid()), coalesce(null::uuid, auth.device_id()), current_setting('bench.kept_version'), '__STORE__', '{"eTag":"\"x\"","size":10240,"mimetype":"application/octet-stream","cacheControl":"no-cache","lastModified":"2026-01-01T00:00:00.000000Z","contentLength":10240,"httpStatusCode":200}', null);
COMMIT;
