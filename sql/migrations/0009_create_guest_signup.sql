-- create the guest identity functions: device-idempotent guest sign-up, refresh-token rotation, profile, sign-out
-- and API-key lookup, all SECURITY DEFINER with an empty search_path, taking the app from the verified claims.
--
-- Where they live. public.create_guest_user is the documents' RPC (exposed, like all of public). The server's own
-- entry points go into a separate schema, guestpass_server: calling a function needs USAGE on its schema, and
-- schema guestpass stays closed to every app-facing role (01_structure checks it). guestpass_server holds only
-- functions, each granted to exactly one request role, and must never be listed among the RPC endpoint's exposed
-- schemas. Shared internals (ensure_guest_device, the rate-limit functions) stay in guestpass, callable only by the
-- owner, i.e. from these definer functions.
--
-- Device secrets. The client's device id is a secret (a random uuid kept in the Keychain). Its stored form, the
-- devices.secret_hash, is the lowercase hex SHA-256 of the UTF-8 bytes of the uuid's lowercase canonical text
-- (8-4-4-4-12 with hyphens): encode(sha256(convert_to(lower(id::text), 'UTF8')), 'hex'). The server computes the
-- same before calling guestpass_server.sign_up_guest, which only ever sees the hash.
--
-- Race-freedom relies on READ COMMITTED (the server's default): ensure_guest_device serialises on a transaction
-- advisory lock per (app, secret hash) and then looks the device up with a fresh snapshot. Under REPEATABLE READ a
-- loser of the race would fail on devices_app_secret_key (23505) instead of finding the winner's row.
-- Like 0006, the functions rely on their owner (the migration owner, a superuser) not being subject to the forced
-- row-level security of the tables they write.

create schema if not exists guestpass_server;

comment on schema guestpass_server is
    'GuestPass: entry points the server calls on a caller''s behalf (sign-up, refresh, profile, sign-out, API-key '
    'lookup). Functions only, each granted to one request role. Never exposed over the RPC endpoint.';

grant usage on schema guestpass_server to anon, authenticated;

-- The shared get-or-create of a guest by device.

create or replace function guestpass.ensure_guest_device(p_app uuid, p_secret_hash text, p_user_metadata jsonb)
returns table (user_id uuid, device_id uuid, created boolean)
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
    v_user uuid;
    v_device uuid;
begin
    if p_app is null then
        raise exception using errcode = '22023', message = 'an app is required';
    end if;
    if p_secret_hash is null or p_secret_hash !~ '^[0-9a-f]{64}$' then
        raise exception using errcode = '22023', message = 'the device secret hash must be a lowercase hex SHA-256';
    end if;
    if p_user_metadata is not null and jsonb_typeof(p_user_metadata) <> 'object' then
        raise exception using errcode = '22023', message = 'user metadata must be a JSON object';
    end if;

    -- One holder per (app, device) at a time, until commit: the loser of a race waits here, then finds the row.
    perform pg_advisory_xact_lock(hashtextextended('guestpass.device:' || p_app::text || ':' || p_secret_hash, 0));

    update public.devices as d
    set last_seen_at = now()
    where d.app_id = p_app and d.secret_hash = p_secret_hash
    returning d.id, d.user_id into v_device, v_user;

    if found then
        return query select v_user, v_device, false;
        return;
    end if;

    insert into public.users (app_id, is_anonymous, user_metadata)
    values (p_app, true, coalesce(p_user_metadata, '{}'::jsonb))
    returning id into v_user;

    insert into public.devices (app_id, user_id, secret_hash)
    values (p_app, v_user, p_secret_hash)
    returning id into v_device;

    return query select v_user, v_device, true;
end
$$;

comment on function guestpass.ensure_guest_device(uuid, text, jsonb) is
    'GuestPass internal: the guest of a device, race-free. For app p_app and device secret hash p_secret_hash '
    '(lowercase hex SHA-256) returns the device''s user and public device id with created = false and touches '
    'last_seen_at; for an unknown device creates an anonymous user (user_metadata = p_user_metadata, default {}) '
    'and the device, created = true. An existing user''s metadata is never changed. Serialises on a transaction '
    'advisory lock per (app, hash). Raises 22023 on invalid arguments.';

-- The documents' RPC.

create or replace function public.create_guest_user(p_device_id uuid)
returns uuid
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
    v_app uuid := auth.app_id();
    v_user uuid;
begin
    if v_app is null then
        raise exception using errcode = '42501', message = 'no app in the request claims';
    end if;
    if p_device_id is null then
        raise exception using errcode = '22023', message = 'p_device_id is required';
    end if;

    select e.user_id
    into v_user
    from guestpass.ensure_guest_device(
        v_app, encode(sha256(convert_to(lower(p_device_id::text), 'UTF8')), 'hex'), null
    ) as e;
    return v_user;
end
$$;

comment on function public.create_guest_user(uuid) is
    'GuestPass: the guest user of device p_device_id in the caller''s app (claim app_id), creating the anonymous '
    'user and the device on first use; race-free, so concurrent calls with one device id create one user. '
    'p_device_id is a client-held secret, stored only as the lowercase hex SHA-256 of its lowercase canonical text '
    '(encode(sha256(convert_to(lower(p_device_id::text), ''UTF8'')), ''hex'')). Returns only the user id. '
    'Raises 42501 without an app claim, 22023 without a device id.';

-- Sign-up: POST /auth/v1/signup without email or phone.

create or replace function guestpass_server.sign_up_guest(
    p_secret_hash text,
    p_device jsonb,
    p_user_metadata jsonb,
    p_client_ip text,
    p_ip_capacity integer,
    p_ip_refill_per_second double precision,
    p_app_capacity integer,
    p_app_refill_per_second double precision,
    p_user_agent text,
    p_session_id uuid,
    p_refresh_token_hash text
)
returns table (
    user_id uuid,
    device_id uuid,
    session_id uuid,
    is_anonymous boolean,
    email text,
    user_metadata jsonb,
    app_metadata jsonb,
    created_at timestamptz,
    updated_at timestamptz,
    last_sign_in_at timestamptz,
    created boolean
)
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
    v_app uuid := auth.app_id();
    v_wait double precision;
    v_key text;
    v_user uuid;
    v_device uuid;
    v_created boolean;
begin
    if v_app is null then
        raise exception using errcode = '42501', message = 'no app in the request claims';
    end if;
    if not exists (select 1 from guestpass.apps as a where a.id = v_app) then
        raise exception using errcode = '42501', message = 'unknown app';
    end if;

    -- Arguments (all checked before any token is taken).
    if p_session_id is null then
        raise exception using errcode = '22023', message = 'a session id is required';
    end if;
    if p_refresh_token_hash is null or p_refresh_token_hash !~ '^[0-9a-f]{64}$' then
        raise exception using errcode = '22023', message = 'the refresh token hash must be a lowercase hex SHA-256';
    end if;
    if p_secret_hash is not null and p_secret_hash !~ '^[0-9a-f]{64}$' then
        raise exception using errcode = '22023', message = 'the device secret hash must be a lowercase hex SHA-256';
    end if;
    if p_user_metadata is not null and jsonb_typeof(p_user_metadata) <> 'object' then
        raise exception using errcode = '22023', message = 'user metadata must be a JSON object';
    end if;
    if p_device is not null and jsonb_typeof(p_device) <> 'object' then
        raise exception using errcode = '22023', message = 'device facts must be a JSON object';
    end if;
    foreach v_key in array array['model', 'os_version', 'app_version', 'build_number'] loop
        if jsonb_typeof(p_device -> v_key) not in ('string', 'null') then
            raise exception using errcode = '22023', message = format('device.%s must be a string', v_key);
        end if;
        if char_length(p_device ->> v_key) > 255 then
            raise exception using errcode = '22023', message = format('device.%s is longer than 255 characters', v_key);
        end if;
    end loop;
    if jsonb_typeof(p_device -> 'is_simulator') not in ('boolean', 'null') then
        raise exception using errcode = '22023', message = 'device.is_simulator must be a boolean';
    end if;
    if p_ip_capacity is not null and (p_client_ip is null or p_client_ip = '') then
        raise exception using errcode = '22023', message = 'a client IP is required for the per-IP limit';
    end if;
    if char_length(p_client_ip) > 255 then
        raise exception using errcode = '22023', message = 'the client IP is longer than 255 characters';
    end if;

    -- Rate limits, before any write. The per-IP bucket is taken now. The per-app bucket, shared by every sign-up
    -- of the app, is only peeked at now (an empty bucket refuses before any write) and taken at the very end, so
    -- its row stays locked for the commit only instead of the whole sign-up. A null capacity turns a limit off.
    if p_ip_capacity is not null then
        v_wait := guestpass.take_rate_limit('signup:ip:' || p_client_ip, p_ip_capacity, p_ip_refill_per_second);
        if v_wait > 0 then
            raise exception using errcode = 'PT429', message = 'rate limit exceeded',
                detail = least(ceil(v_wait), 2147483647)::bigint::text;
        end if;
    end if;
    if p_app_capacity is not null then
        v_wait := guestpass.peek_rate_limit('signup:app:' || v_app::text, p_app_capacity, p_app_refill_per_second);
        if v_wait > 0 then
            raise exception using errcode = 'PT429', message = 'rate limit exceeded',
                detail = least(ceil(v_wait), 2147483647)::bigint::text;
        end if;
    end if;

    -- The user, with or without a device.
    if p_secret_hash is null then
        insert into public.users (app_id, is_anonymous, user_metadata)
        values (v_app, true, coalesce(p_user_metadata, '{}'::jsonb))
        returning id into v_user;
        v_created := true;
    else
        select e.user_id, e.device_id, e.created
        into v_user, v_device, v_created
        from guestpass.ensure_guest_device(v_app, p_secret_hash, p_user_metadata) as e;

        -- Device facts: only the keys given with a non-null value.
        if p_device ?| array['model', 'os_version', 'app_version', 'build_number', 'is_simulator'] then
            update public.devices as d
            set model = coalesce(p_device ->> 'model', d.model),
                os_version = coalesce(p_device ->> 'os_version', d.os_version),
                app_version = coalesce(p_device ->> 'app_version', d.app_version),
                build_number = coalesce(p_device ->> 'build_number', d.build_number),
                is_simulator = coalesce((p_device ->> 'is_simulator')::boolean, d.is_simulator),
                last_seen_at = now()
            where d.id = v_device;
        end if;
    end if;

    insert into guestpass.sessions (id, app_id, user_id, device_id, user_agent, ip)
    values (p_session_id, v_app, v_user, v_device, left(p_user_agent, 1024), p_client_ip);
    insert into guestpass.refresh_tokens (session_id, counter, token_hash)
    values (p_session_id, 0, p_refresh_token_hash);

    if p_app_capacity is not null then
        v_wait := guestpass.take_rate_limit('signup:app:' || v_app::text, p_app_capacity, p_app_refill_per_second);
        if v_wait > 0 then
            raise exception using errcode = 'PT429', message = 'rate limit exceeded',
                detail = least(ceil(v_wait), 2147483647)::bigint::text;
        end if;
    end if;

    return query
    select u.id, v_device, p_session_id, u.is_anonymous, u.email, u.user_metadata, u.app_metadata,
           u.created_at, u.updated_at, now(), v_created
    from public.users as u
    where u.id = v_user;
end
$$;

comment on function guestpass_server.sign_up_guest(
    text, jsonb, jsonb, text, integer, double precision, integer, double precision, text, uuid, text
) is
    'GuestPass server: anonymous sign-up in the caller''s app (claim app_id), in one call. Rate limits before any '
    'write: buckets signup:ip:<p_client_ip> and signup:app:<app> (a null capacity turns one off; the app bucket is '
    'checked first and taken last, to keep its row locked briefly); when one is empty raises PT429 ''rate limit '
    'exceeded'' with the seconds to wait (integer, rounded up) as detail, and nothing is written or taken. Without '
    'p_secret_hash creates a new anonymous user (user_metadata = p_user_metadata); with it (the lowercase hex SHA-256 '
    'of the device secret, see public.create_guest_user) returns the device''s user, creating user and device if new '
    '(an existing user''s metadata is kept). Records the device facts present in p_device (model, os_version, '
    'app_version, build_number: strings; is_simulator: boolean; JSON null = not given; ignored without a device). '
    'Creates session p_session_id (chosen by the server) and its refresh token counter 0 with hash '
    'p_refresh_token_hash. Returns the user, the public device id (null without a device), the session, '
    'last_sign_in_at = now() and created (a new user). Raises 42501 without a known app, 22023 on invalid arguments.';

-- Refresh: POST /auth/v1/token?grant_type=refresh_token.

create or replace function guestpass_server.refresh_session(
    p_session_id uuid,
    p_counter integer,
    p_token_hash text,
    p_next_token_hash text,
    p_reuse_window_seconds double precision
)
returns table (
    status text,
    user_id uuid,
    device_id uuid,
    session_id uuid,
    active_counter integer,
    is_anonymous boolean,
    email text,
    user_metadata jsonb,
    app_metadata jsonb,
    created_at timestamptz,
    updated_at timestamptz
)
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
    v_app uuid := auth.app_id();
    v_session guestpass.sessions%rowtype;
    v_token guestpass.refresh_tokens%rowtype;
    v_active integer;
    v_status text;
begin
    if v_app is null then
        raise exception using errcode = '42501', message = 'no app in the request claims';
    end if;
    if p_next_token_hash is null or p_next_token_hash !~ '^[0-9a-f]{64}$' then
        raise exception using errcode = '22023',
            message = 'the next refresh token hash must be a lowercase hex SHA-256';
    end if;
    if p_reuse_window_seconds is not null and not (p_reuse_window_seconds >= 0
       and p_reuse_window_seconds < 'Infinity'::double precision) then
        raise exception using errcode = '22023', message = 'the reuse window must be a non-negative number of seconds';
    end if;

    <<decide>>
    begin
        -- The row lock serialises concurrent refreshes of one session (one token family).
        select s.* into v_session
        from guestpass.sessions as s
        where s.id = p_session_id and s.app_id = v_app
        for update;
        if not found then
            v_status := 'session_not_found';
            exit decide;
        end if;

        select t.* into v_token
        from guestpass.refresh_tokens as t
        where t.token_hash = p_token_hash;
        if not found or v_token.session_id <> v_session.id or v_token.counter is distinct from p_counter then
            v_status := 'refresh_token_not_found';
            exit decide;
        end if;

        if v_session.revoked_at is not null then
            v_status := 'session_not_found';
            exit decide;
        end if;

        select max(t.counter) into v_active
        from guestpass.refresh_tokens as t
        where t.session_id = v_session.id;

        if v_token.revoked_at is null and v_token.counter = v_active then
            -- The active token: rotate.
            update guestpass.refresh_tokens as t set revoked_at = now() where t.id = v_token.id;
            insert into guestpass.refresh_tokens (session_id, counter, token_hash)
            values (v_session.id, v_active + 1, p_next_token_hash);
            update guestpass.sessions as s set refreshed_at = now() where s.id = v_session.id;
            v_active := v_active + 1;
            v_status := 'rotated';
        elsif v_token.counter = v_active - 1 then
            -- The parent of the active token: a client that lost the answer gets the active token back.
            v_status := 'reused';
        elsif v_token.revoked_at + make_interval(secs => coalesce(p_reuse_window_seconds, 0)) >= now() then
            v_status := 'reused';
        else
            -- An old token replayed outside the window: assume theft and revoke the whole family.
            update guestpass.sessions as s set revoked_at = now() where s.id = v_session.id;
            update guestpass.refresh_tokens as t
            set revoked_at = now()
            where t.session_id = v_session.id and t.revoked_at is null;
            v_status := 'refresh_token_already_used';
        end if;
    end;

    if v_status in ('rotated', 'reused') then
        update public.devices as d set last_seen_at = now() where d.id = v_session.device_id;
        return query
        select v_status, u.id, v_session.device_id, v_session.id, v_active, u.is_anonymous, u.email,
               u.user_metadata, u.app_metadata, u.created_at, u.updated_at
        from public.users as u
        where u.id = v_session.user_id;
    else
        return query
        select v_status, null::uuid, null::uuid, null::uuid, null::integer, null::boolean, null::text,
               null::jsonb, null::jsonb, null::timestamptz, null::timestamptz;
    end if;
end
$$;

comment on function guestpass_server.refresh_session(uuid, integer, text, text, double precision) is
    'GuestPass server: refresh-token rotation with GoTrue''s rules, in the caller''s app (claim app_id). The server '
    'passes the session id and counter it read from the token, the token''s hash, and the hash of the token for '
    'counter + 1. Always returns one row; status is: rotated (the active token: revoked, counter + 1 issued, '
    'active_counter = the new counter); reused (the parent of the active token, at any age, or an older token '
    'revoked less than p_reuse_window_seconds ago: nothing changes, the server re-derives the token of '
    'active_counter); refresh_token_already_used (an older token outside the window: the session and all its '
    'tokens are revoked, and committed); refresh_token_not_found (unknown hash, or not that session and counter); '
    'session_not_found (no such session in the app, or revoked). The user columns are set only for rotated and '
    'reused. Concurrent refreshes of one session are serialised by a row lock. Raises 42501 without an app claim, '
    '22023 on an invalid next hash or window.';

-- GET /auth/v1/user.

create or replace function guestpass_server.current_user_profile()
returns table (
    user_id uuid,
    email text,
    is_anonymous boolean,
    user_metadata jsonb,
    app_metadata jsonb,
    created_at timestamptz,
    updated_at timestamptz,
    session_active boolean
)
language sql
stable
security definer
set search_path = ''
as $$
    select u.id, u.email, u.is_anonymous, u.user_metadata, u.app_metadata, u.created_at, u.updated_at,
           exists (
               select 1
               from guestpass.sessions as s
               where s.id = auth.claim_uuid('session_id')
                 and s.user_id = u.id
                 and s.app_id = u.app_id
                 and s.revoked_at is null
           )
    from public.users as u
    where u.id = auth.uid() and u.app_id = auth.app_id()
$$;

comment on function guestpass_server.current_user_profile() is
    'GuestPass server: the caller''s user row (claims sub and app_id), or no row, with session_active = whether the '
    'claims'' session_id is a session of that user that is not revoked.';

-- POST /auth/v1/logout?scope=local|global|others.

create or replace function guestpass_server.sign_out(p_scope text)
returns integer
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
    v_user uuid := auth.uid();
    v_app uuid := auth.app_id();
    v_session uuid := auth.claim_uuid('session_id');
    v_count integer;
begin
    if v_user is null or v_app is null then
        raise exception using errcode = '42501', message = 'no user or app in the request claims';
    end if;
    if p_scope is null or p_scope not in ('local', 'global', 'others') then
        raise exception using errcode = '22023', message = 'scope must be local, global or others';
    end if;

    with revoked as (
        update guestpass.sessions as s
        set revoked_at = now()
        where s.user_id = v_user
          and s.app_id = v_app
          and s.revoked_at is null
          and case p_scope
                  when 'local' then s.id = v_session
                  when 'others' then s.id is distinct from v_session
                  else true
              end
        returning s.id
    ),
    revoked_tokens as (
        update guestpass.refresh_tokens as t
        set revoked_at = now()
        where t.session_id in (select r.id from revoked as r) and t.revoked_at is null
    )
    select count(*)::integer into v_count from revoked;

    return v_count;
end
$$;

comment on function guestpass_server.sign_out(text) is
    'GuestPass server: signs the caller (claims sub and app_id) out. p_scope local revokes the claims'' session_id, '
    'global every session of the user, others every session but the claims'' one; each revoked session''s refresh '
    'tokens are revoked with it. Returns the number of sessions revoked (0 when already signed out). Raises 42501 '
    'without a user or app claim, 22023 on another scope.';

-- API keys: which app a request belongs to.

create or replace function guestpass_server.resolve_api_key(p_key_hash text)
returns table (app_id uuid, kind text)
language sql
stable
security definer
set search_path = ''
as $$
    select k.app_id, k.kind
    from guestpass.api_keys as k
    where k.key_hash = p_key_hash and k.revoked_at is null
$$;

comment on function guestpass_server.resolve_api_key(text) is
    'GuestPass server: the app and kind (publishable or secret) of the API key whose lowercase hex SHA-256 is '
    'p_key_hash, or no row when it is unknown or revoked. The server calls it as anon before it knows the app.';

-- Grants: nobody by default, then exactly the request role each function serves.

revoke execute on function
    guestpass.ensure_guest_device(uuid, text, jsonb),
    public.create_guest_user(uuid),
    guestpass_server.sign_up_guest(
        text, jsonb, jsonb, text, integer, double precision, integer, double precision, text, uuid, text
    ),
    guestpass_server.refresh_session(uuid, integer, text, text, double precision),
    guestpass_server.current_user_profile(),
    guestpass_server.sign_out(text),
    guestpass_server.resolve_api_key(text)
    from public;

grant execute on function public.create_guest_user(uuid) to anon, authenticated, service_role;
grant execute on function
    guestpass_server.sign_up_guest(
        text, jsonb, jsonb, text, integer, double precision, integer, double precision, text, uuid, text
    ),
    guestpass_server.refresh_session(uuid, integer, text, text, double precision),
    guestpass_server.resolve_api_key(text)
    to anon;
grant execute on function
    guestpass_server.current_user_profile(),
    guestpass_server.sign_out(text)
    to authenticated;
