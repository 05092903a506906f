-- storage: Supabase Storage's helpers, the objects trigger (usage, bytes' bookkeeping), policies and grants
-- Repeatable (re-applied whenever this file changes, after every versioned file): create or replace only.
--
-- Authorisation. Every object operation runs in the request transaction as the caller's role with its verified
-- claims, straight on storage.objects, so the app's own policies decide, as on Supabase: an upload needs INSERT (an
-- upsert INSERT + SELECT + UPDATE), a download, an info, a signature or a list SELECT, a remove DELETE + SELECT, a move
-- SELECT + UPDATE. Two rules hold whatever an app's policies say:
-- * Tenancy: a RESTRICTIVE policy on both tables for every role keeps each request to its own app's rows
--   (app_id = auth.app_id()); restrictive policies are ANDed with the permissive ones an app writes.
-- * The secret key (service_role) may do anything inside its app: a permissive policy of its own. (GuestPass's
--   service_role has no BYPASSRLS; the tenant policy still applies to it.)
-- Public and signed downloads and signed uploads run as service_role of the bucket's app: the bucket's publicity or
-- the signature, checked when it was made, is the authorisation, as on Supabase.
--
-- Consistency. An upload reserves a fresh version (guestpass_server.storage_upload_begin: a storage_sweep row of kind
-- 'upload', due after a grace period) and commits it, then streams the bytes to `<app id>/<version>`, then writes the
-- row. The objects trigger deletes the reservation when a row takes that version (and refuses a version whose
-- reservation was already taken by the sweep), and queues the version a row leaves behind (replaced, removed, its
-- owner deleted) as due 30 seconds later (a download that began before the change, an S3 GET streaming the old
-- version, ends whole). The sweep (StorageSweeper in every server, and `guestpass prune`) takes due rows
-- with a lease, deletes their bytes, then their rows: a crash anywhere leaves either a live row with its bytes or a
-- sweep row whose bytes go later. Readers never see a partial object: a row only ever names bytes already durable.
--
-- Limits. The trigger keeps guestpass.storage_usage (bytes and objects per user) exact: the usage row's lock
-- serialises one user's concurrent uploads, and an insert or a new version past the app's limits raises PT413.
-- Objects without an owner (the app's backend, secret key) count for nobody.

create or replace function storage.foldername(name text)
    returns text[]
    language sql immutable strict parallel safe as $$
    select (pg_catalog.string_to_array(name, '/'))[1:pg_catalog.array_length(pg_catalog.string_to_array(name, '/'), 1) - 1]
$$;

comment on function storage.foldername(text) is
    'Supabase''s helper: the folders of an object name, every segment but the last (''a/b/c.png'' → {a,b}).';

create or replace function storage.filename(name text)
    returns text
    language sql immutable strict parallel safe as $$
    select (pg_catalog.string_to_array(name, '/'))[pg_catalog.array_length(pg_catalog.string_to_array(name, '/'), 1)]
$$;

comment on function storage.filename(text) is 'Supabase''s helper: the last segment of an object name.';

create or replace function storage.extension(name text)
    returns text
    language sql immutable strict parallel safe as $$
    select case
        when pg_catalog.strpos(storage.filename(name), '.') > 0
        then pg_catalog.reverse(pg_catalog.split_part(pg_catalog.reverse(storage.filename(name)), '.', 1))
        else ''
    end
$$;

comment on function storage.extension(text) is
    'Supabase''s helper: the text after the last dot of the last segment (''a/b.tar.gz'' → gz), or ''''.';

-- 1. The objects trigger: usage, limits, and the bytes a row takes or leaves.
create or replace function guestpass.storage_objects_changed()
    returns trigger
    language plpgsql volatile security definer set search_path = '' as $$
declare
    v_old_size bigint := case when tg_op <> 'INSERT' then coalesce((old.metadata ->> 'size')::bigint, 0) else 0 end;
    v_new_size bigint := case when tg_op <> 'DELETE' then coalesce((new.metadata ->> 'size')::bigint, 0) else 0 end;
    v_usage guestpass.storage_usage;
    v_app guestpass.apps;
    v_now timestamptz := guestpass.clock();
begin
    -- The bytes a row takes: its reservation must still be there (not yet swept).
    if tg_op = 'INSERT' or (tg_op = 'UPDATE' and new.version is distinct from old.version) then
        delete from guestpass.storage_sweep as s
        where s.key = new.app_id::text || '/' || new.version and s.kind = 'upload' and s.claimed_at is null;
        if not found then
            raise exception using errcode = 'PT408', message = 'the upload''s reservation has expired',
                hint = 'Upload again';
        end if;
    end if;
    -- The bytes a row leaves, due in 30 seconds: a download that began before the change finishes from them.
    if tg_op = 'DELETE' or (tg_op = 'UPDATE' and new.version is distinct from old.version) then
        insert into guestpass.storage_sweep (key, app_id, kind, store, not_before)
        values (old.app_id::text || '/' || old.version, old.app_id, 'replaced', old.store, v_now + interval '30 seconds')
        on conflict (key) do nothing;
    end if;
    -- Usage: out of the old owner, into the new one.
    if tg_op <> 'INSERT' and old.owner is not null then
        update guestpass.storage_usage as u
        set bytes = greatest(u.bytes - v_old_size, 0), objects = greatest(u.objects - 1, 0)
        where u.user_id = old.owner;
    end if;
    if tg_op <> 'DELETE' and new.owner is not null then
        insert into guestpass.storage_usage as u (app_id, user_id, bytes, objects)
        values (new.app_id, new.owner, v_new_size, 1)
        on conflict (user_id) do update set bytes = u.bytes + excluded.bytes, objects = u.objects + 1
        returning u.* into v_usage;
        -- Only new bytes are held to the limits: a merge that moves a guest's objects to its account never fails.
        if tg_op = 'INSERT' or new.version is distinct from old.version then
            select a.* into v_app from guestpass.apps as a where a.id = new.app_id;
            if v_usage.bytes > v_app.storage_user_bytes_limit then
                raise exception using errcode = 'PT413', message = 'storage quota exceeded',
                    detail = 'bytes:' || v_app.storage_user_bytes_limit;
            elsif v_usage.objects > v_app.storage_user_objects_limit then
                raise exception using errcode = 'PT413', message = 'storage quota exceeded',
                    detail = 'objects:' || v_app.storage_user_objects_limit;
            end if;
        end if;
    end if;
    return null;
end;
$$;

create or replace trigger objects_changed
    after insert or update or delete on storage.objects
    for each row execute function guestpass.storage_objects_changed();

-- A bucket's updated_at, by the one touch trigger (03_users_and_devices.sql).
create or replace trigger buckets_touch
    before update on storage.buckets
    for each row execute function guestpass.set_updated_at();

-- 2. An upload's start: the bucket's rules, the effective size limit, and a reserved version.
create or replace function guestpass_server.storage_upload_begin(
    p_bucket text, p_version text, p_store text, p_mimetype text, p_declared_length bigint, p_grace_seconds integer
)
    returns table (
        size_limit bigint, allowed_mime_types text[], user_bytes_left bigint, user_objects_left bigint
    )
    language plpgsql volatile security definer set search_path = '' as $$
declare
    v_app uuid := guestpass.require_app();
    v_user uuid := auth.uid();
    v_bucket storage.buckets;
    v_limits guestpass.apps;
    v_usage guestpass.storage_usage;
begin
    if p_grace_seconds is null or p_grace_seconds not between 1 and 604800 then
        raise exception using errcode = '22023', message = 'the grace period must be 1 to 604800 seconds';
    end if;
    if p_version is null or p_version !~ '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' then
        raise exception using errcode = '22023', message = 'the version must be a lowercase uuid';
    end if;
    select b.* into v_bucket from storage.buckets as b where b.app_id = v_app and b.id = p_bucket;
    if not found then
        raise exception using errcode = 'PT404', message = 'Bucket not found';
    end if;
    select a.* into v_limits from guestpass.apps as a where a.id = v_app;
    -- The bucket's MIME types: type/subtype exactly, or type/*, compared without parameters and case.
    if p_mimetype is not null and v_bucket.allowed_mime_types is not null and not exists (
        select 1 from unnest(v_bucket.allowed_mime_types) as t (allowed)
        where lower(t.allowed) = lower(btrim(split_part(p_mimetype, ';', 1)))
           or (t.allowed like '%/*' and lower(split_part(p_mimetype, '/', 1)) = lower(split_part(t.allowed, '/', 1)))
    ) then
        raise exception using errcode = 'PT415', message = 'mime type not supported', detail = p_mimetype;
    end if;
    if p_declared_length is not null and p_declared_length > least(
        v_limits.storage_upload_bytes_limit, coalesce(v_bucket.file_size_limit, v_limits.storage_upload_bytes_limit)
    ) then
        raise exception using errcode = 'PT413', message = 'object too large', detail = 'size';
    end if;
    select u.* into v_usage from guestpass.storage_usage as u where u.user_id = v_user;
    insert into guestpass.storage_sweep (key, app_id, kind, store, not_before)
    values (v_app::text || '/' || p_version, v_app, 'upload', p_store, guestpass.clock() + make_interval(secs => p_grace_seconds));
    return query select
        least(v_limits.storage_upload_bytes_limit, coalesce(v_bucket.file_size_limit, v_limits.storage_upload_bytes_limit)),
        v_bucket.allowed_mime_types,
        case when v_user is null then null
             else greatest(v_limits.storage_user_bytes_limit - coalesce(v_usage.bytes, 0), 0) end,
        case when v_user is null then null
             else greatest(v_limits.storage_user_objects_limit - coalesce(v_usage.objects, 0), 0)::bigint end;
end;
$$;

comment on function guestpass_server.storage_upload_begin(text, text, text, text, bigint, integer) is
    'Storage: the start of an upload to bucket p_bucket of the caller''s app (PT404 when there is none; PT415 when '
    'p_mimetype is not one of its types; PT413 with detail size when p_declared_length is over the limit): the fresh '
    'version p_version (made by the server) in the store p_store reserved for p_grace_seconds (a storage_sweep row of kind upload), the largest size allowed (the app''s '
    'per-upload limit, lowered by the bucket''s file_size_limit), the bucket''s MIME types, and what the caller may '
    'still store (null for the secret key).';

-- 3. A bucket of the caller's app as object routes see it (no RLS on buckets for them, as on Supabase).
create or replace function guestpass_server.storage_bucket(p_bucket text)
    returns table (public boolean, file_size_limit bigint, allowed_mime_types text[])
    language sql stable security definer set search_path = '' as $$
    select b.public, b.file_size_limit, b.allowed_mime_types
    from storage.buckets as b
    where b.app_id = auth.app_id() and b.id = p_bucket
$$;

-- 4. The app of a public bucket (public downloads carry no API key): null when no app has a public bucket so named.
create or replace function guestpass_server.storage_public_bucket_app(p_bucket text)
    returns uuid
    language sql stable security definer set search_path = '' as $$
    select b.app_id from storage.buckets as b where b.id = p_bucket and b.public
$$;

-- 5. The sweep: due rows of the sweeper's own store leased (claimed_at), their bytes deleted by the server, then the
-- rows. A server never takes another store's keys (a deployment moving from disk to S3, or test servers side by side).
create or replace function guestpass_server.storage_sweep_claim(
    p_store text, p_limit integer, p_lease_seconds integer, p_uploads boolean
)
    returns table (key text)
    language plpgsql volatile security definer set search_path = '' as $$
declare
    v_now timestamptz := guestpass.clock();
begin
    if p_limit is null or p_limit not between 1 and 10000 or p_lease_seconds is null or p_lease_seconds not between 1 and 3600 then
        raise exception using errcode = '22023', message = 'limit must be 1 to 10000 and the lease 1 to 3600 seconds';
    end if;
    return query
    with due as (
        select s.key
        from guestpass.storage_sweep as s
        where s.store = p_store and s.not_before <= v_now
          and (s.kind = 'replaced' or p_uploads)
          and (s.claimed_at is null or s.claimed_at < v_now - make_interval(secs => p_lease_seconds))
        order by s.not_before
        limit p_limit
        for update skip locked
    )
    update guestpass.storage_sweep as s
    set claimed_at = v_now, attempts = s.attempts + 1
    from due
    where s.key = due.key
    returning s.key;
end;
$$;

-- An upload that will have no row: its bytes are deleted, so is its reservation.
create or replace function guestpass_server.storage_upload_abandon(p_key text)
    returns void
    language sql volatile security definer set search_path = '' as $$
    delete from guestpass.storage_sweep as s where s.key = p_key and s.kind = 'upload'
$$;

create or replace function guestpass_server.storage_sweep_done(p_keys text[])
    returns integer
    language sql volatile security definer set search_path = '' as $$
    with gone as (delete from guestpass.storage_sweep as s where s.key = any (p_keys) and s.claimed_at is not null returning 1)
    select count(*)::integer from gone
$$;

-- The tenant of a row is the caller's app unless the server says otherwise.
alter table storage.buckets alter column app_id set default auth.app_id();
alter table storage.objects alter column app_id set default auth.app_id();

-- Every table of the area under forced row-level security: storage's for the policies below and an app's own, the
-- usage and the sweep's keys with none (only the SECURITY DEFINER functions and the trigger reach them).
alter table storage.buckets enable row level security, force row level security;
alter table storage.objects enable row level security, force row level security;
alter table guestpass.storage_usage enable row level security, force row level security;
alter table guestpass.storage_sweep enable row level security, force row level security;

-- 6. Row-level security: the tenant wall for every role, the secret key's freedom inside its app, nothing else.
drop policy if exists buckets_tenant on storage.buckets;
create policy buckets_tenant on storage.buckets as restrictive for all to public
    using (app_id = (select auth.app_id())) with check (app_id = (select auth.app_id()));
drop policy if exists buckets_service_role on storage.buckets;
create policy buckets_service_role on storage.buckets for all to service_role using (true) with check (true);
drop policy if exists objects_tenant on storage.objects;
create policy objects_tenant on storage.objects as restrictive for all to public
    using (app_id = (select auth.app_id())) with check (app_id = (select auth.app_id()));
drop policy if exists objects_service_role on storage.objects;
create policy objects_service_role on storage.objects for all to service_role using (true) with check (true);

revoke all on schema storage from public;
grant usage on schema storage to anon, authenticated, service_role;
revoke all on storage.buckets, storage.objects from public, anon, authenticated, service_role;
grant select, insert, update, delete on storage.buckets to anon, authenticated, service_role;
grant select, insert, update, delete on storage.objects to anon, authenticated, service_role;
revoke all on guestpass.storage_usage, guestpass.storage_sweep from public, anon, authenticated, service_role;

revoke all on function storage.foldername(text), storage.filename(text), storage.extension(text) from public;
grant execute on function storage.foldername(text), storage.filename(text), storage.extension(text)
    to anon, authenticated, service_role;
revoke all on function guestpass.storage_objects_changed() from public;
revoke all on function guestpass_server.storage_upload_begin(text, text, text, text, bigint, integer), guestpass_server.storage_bucket(text),
    guestpass_server.storage_public_bucket_app(text), guestpass_server.storage_sweep_claim(text, integer, integer, boolean),
    guestpass_server.storage_sweep_done(text[]), guestpass_server.storage_upload_abandon(text) from public;
grant execute on function guestpass_server.storage_upload_begin(text, text, text, text, bigint, integer), guestpass_server.storage_bucket(text)
    to anon, authenticated, service_role;
grant execute on function guestpass_server.storage_public_bucket_app(text), guestpass_server.storage_sweep_claim(text, integer, integer, boolean),
    guestpass_server.storage_sweep_done(text[]), guestpass_server.storage_upload_abandon(text) to guestpass_authenticator;
