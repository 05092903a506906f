-- every rule reads one clock, guestpass.clock(), so tests can move time for all; one home for claim and hash checks
-- Quotas and DeviceCheck claims read guestpass.clock() (0011): now(), or the transaction's guestpass.clock_override,
-- so tests move time instead of waiting or aging rows. The rate limits, refresh-token rotation, its reuse window,
-- sign-out and the last_seen_at / last_sign_in_at writes still read now() or clock_timestamp() directly, so their
-- rules could only be tested by rewriting timestamps. Every function body now reads guestpass.clock() (once, into a
-- variable, in plpgsql): take_rate_limit, peek_rate_limit, prune_rate_limits, ensure_guest_device, sign_up_guest,
-- refresh_session and sign_out are redefined for it. Each keeps its signature, volatility, SECURITY DEFINER, empty
-- search_path, grants and behaviour; without an override the time read is the transaction's start, as now() was.
--
-- Rate limits. 0008 read clock_timestamp() after the row lock and 0013 before it, so that a transaction that waited
-- for a bucket's lock would not refill from its older start time. Since 0013 the update never moves updated_at
-- backwards (greatest(now, updated_at), kept here) and guestpass.bucket_tokens refills nothing for time running
-- backwards, so an older time can only make the refill smaller: with the transaction's start time a bucket refills a
-- little later than it could, never sooner, and it can never hand out more tokens than the elapsed time allows. The
-- answer stays conservative. prune_rate_limits likewise deletes a bucket a little later, never sooner (a missing
-- row is a full bucket).
--
-- What stays on now(). Column defaults (created_at, last_seen_at, updated_at, seen_at: DEFAULT now()) and the
-- updated_at touch trigger (guestpass.set_updated_at on public.users) are bookkeeping timestamps that no rule reads.
-- They run with the rights of whoever writes the row, often a request role (authenticated updates its own user row;
-- an app's own tables take inserts from the request roles), and the request roles have no EXECUTE on
-- guestpass.clock() (nor USAGE on schema guestpass), so they keep now(). A row created by a function therefore gets
-- now() in its defaulted columns, and guestpass.clock() where the function writes the time itself.
--
-- Argument checks. Four functions checked the app claim (raise 42501 without it) and four the user and app claims;
-- five checks of a lowercase hex SHA-256 argument were written out in four functions. They move into helpers:
-- guestpass.require_app() (the app claim, or 42501 'no app in the request claims'), guestpass.require_user_and_app()
-- (both claims, or 42501 'no user or app in the request claims'), and guestpass.require_hex_sha256(value, name) (22023
-- '<name> must be a lowercase hex SHA-256'). require_app_user, create_guest_user, sign_up_guest and refresh_session
-- call the first; sign_out, devicecheck_begin, devicecheck_finish and devicecheck_take_lease the second;
-- ensure_guest_device, sign_up_guest, refresh_session and devicecheck_begin the third. Every SQLSTATE and message is
-- the one its caller raised before (the server and the tests match on them), and the checks run in the same order.
-- The helpers read only their arguments and the request claims: plain (SECURITY INVOKER) plpgsql with an empty
-- search_path, executable by nobody but the owner, i.e. from the SECURITY DEFINER functions that call them.
-- require_caller ('no user in the request claims') is a different check and is left as it is.

create or replace function guestpass.require_app()
returns uuid
language plpgsql
stable
set search_path = ''
as $$
declare
    v_app uuid := auth.app_id();
begin
    if v_app is null then
        raise exception using errcode = '42501', message = 'no app in the request claims';
    end if;
    return v_app;
end
$$;

comment on function guestpass.require_app() is
    'GuestPass internal: the caller''s app (claim app_id, auth.app_id()); raises 42501 ''no app in the request '
    'claims'' without one. Does not check that the app exists.';

create or replace function guestpass.require_user_and_app(out user_id uuid, out app_id uuid)
returns record
language plpgsql
stable
set search_path = ''
as $$
begin
    user_id := auth.uid();
    app_id := auth.app_id();
    if user_id is null or app_id is null then
        raise exception using errcode = '42501', message = 'no user or app in the request claims';
    end if;
end
$$;

comment on function guestpass.require_user_and_app() is
    'GuestPass internal: the caller''s user (claim sub, auth.uid()) and app (claim app_id, auth.app_id()); raises '
    '42501 ''no user or app in the request claims'' unless both are present. Does not check that they exist.';

create or replace function guestpass.require_hex_sha256(p_value text, p_name text)
returns void
language plpgsql
immutable
set search_path = ''
as $$
begin
    if p_value is null or p_value !~ '^[0-9a-f]{64}$' then
        raise exception using errcode = '22023', message = format('%s must be a lowercase hex SHA-256', p_name);
    end if;
end
$$;

comment on function guestpass.require_hex_sha256(text, text) is
    'GuestPass internal: raises 22023 ''<p_name> must be a lowercase hex SHA-256'' unless p_value is 64 lowercase hex '
    'digits (null included: a caller whose argument is optional checks for null first).';

comment on function guestpass.clock() is
    'GuestPass internal: the only clock GuestPass functions read (quotas, welcome-grant claims, rate limits, '
    'refresh-token rotation and reuse window, sign-out, last_seen_at): now(), or the transaction''s '
    'guestpass.clock_override setting when set (tests: set local guestpass.clock_override = ''…''). Column defaults '
    'and the updated_at trigger, which may run as a request role, keep now().';

create or replace function guestpass.take_rate_limit(
    p_bucket text,
    p_capacity integer,
    p_refill_per_second double precision
)
returns double precision
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
    v_now timestamptz;
    v_tokens double precision;
    v_updated_at timestamptz;
begin
    perform guestpass.check_rate_limit_arguments(p_bucket, p_capacity, p_refill_per_second);
    v_now := guestpass.clock();

    insert into guestpass.rate_limits as r (bucket, tokens, updated_at)
    values (p_bucket, p_capacity - 1, v_now)
    on conflict (bucket) do update
        set tokens = guestpass.bucket_tokens(r.tokens, r.updated_at, v_now, p_capacity, p_refill_per_second) - 1,
            updated_at = greatest(v_now, r.updated_at)
        where guestpass.bucket_tokens(r.tokens, r.updated_at, v_now, p_capacity, p_refill_per_second) >= 1;
    if found then
        return 0;
    end if;

    -- Empty: the row is unchanged; answer how long until it holds one token.
    select r.tokens, r.updated_at into v_tokens, v_updated_at from guestpass.rate_limits as r where r.bucket = p_bucket;
    v_tokens := guestpass.bucket_tokens(v_tokens, v_updated_at, v_now, p_capacity, p_refill_per_second);
    return greatest((1 - v_tokens) / p_refill_per_second, 0.001);
end
$$;

comment on function guestpass.take_rate_limit(text, integer, double precision) is
    'Token bucket: takes one token from p_bucket (capacity p_capacity, refilled at p_refill_per_second, see '
    'guestpass.bucket_tokens) and returns 0, or returns the seconds until a token is available and takes nothing. One '
    'upsert; race-free (INSERT … ON CONFLICT DO UPDATE locks the row and re-reads its latest committed version). Time '
    'is guestpass.clock() (the transaction''s start, or guestpass.clock_override), read once: a time older than the '
    'row''s updated_at (a transaction that waited for the row lock) refills nothing, and the update never moves '
    'updated_at backwards, so the refill can only come out smaller than the time elapsed allows, never larger.';

create or replace function guestpass.peek_rate_limit(
    p_bucket text,
    p_capacity integer,
    p_refill_per_second double precision
)
returns double precision
language plpgsql
stable
security definer
set search_path = ''
as $$
declare
    v_now timestamptz;
    v_tokens double precision;
    v_updated_at timestamptz;
begin
    perform guestpass.check_rate_limit_arguments(p_bucket, p_capacity, p_refill_per_second);
    v_now := guestpass.clock();

    select r.tokens, r.updated_at into v_tokens, v_updated_at from guestpass.rate_limits as r where r.bucket = p_bucket;
    if not found then
        return 0;
    end if;
    v_tokens := guestpass.bucket_tokens(v_tokens, v_updated_at, v_now, p_capacity, p_refill_per_second);
    if v_tokens >= 1 then
        return 0;
    end if;
    return (1 - v_tokens) / p_refill_per_second;
end
$$;

comment on function guestpass.peek_rate_limit(text, integer, double precision) is
    'GuestPass internal: what take_rate_limit would answer now, at guestpass.clock() (0 or the seconds until a token '
    'is available), without taking a token or locking the bucket. Lets a caller refuse early, before any write, and '
    'take the token itself at the end of its transaction so the bucket row stays locked only briefly.';

create or replace function guestpass.prune_rate_limits(p_idle interval)
returns bigint
language sql
volatile
security definer
set search_path = ''
as $$
    with pruned as (
        delete from guestpass.rate_limits as r
        where r.updated_at < (select guestpass.clock()) - p_idle
        returning 1
    )
    select count(*) from pruned
$$;

comment on function guestpass.prune_rate_limits(interval) is
    'GuestPass internal: deletes buckets untouched for p_idle (updated_at before guestpass.clock() - p_idle) and '
    'returns how many. A missing row is a full bucket, so pass at least the longest configured capacity / refill rate '
    '(the time an empty bucket needs to refill).';

create or replace function guestpass.ensure_guest_device(p_app uuid, p_secret_hash text, p_user_metadata jsonb)
returns table (user_id uuid, device_id uuid, created boolean)
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
    v_now timestamptz;
    v_user uuid;
    v_device uuid;
begin
    if p_app is null then
        raise exception using errcode = '22023', message = 'an app is required';
    end if;
    perform guestpass.require_hex_sha256(p_secret_hash, 'the device secret hash');
    if p_user_metadata is not null and jsonb_typeof(p_user_metadata) <> 'object' then
        raise exception using errcode = '22023', message = 'user metadata must be a JSON object';
    end if;
    v_now := guestpass.clock();

    -- One holder per (app, device) at a time, until commit: the loser of a race waits here, then finds the row.
    perform pg_advisory_xact_lock(hashtextextended('guestpass.device:' || p_app::text || ':' || p_secret_hash, 0));

    update public.devices as d
    set last_seen_at = v_now
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
    'last_seen_at (= guestpass.clock()); for an unknown device creates an anonymous user (user_metadata = '
    'p_user_metadata, default {}) and the device, created = true. An existing user''s metadata is never changed. '
    'Serialises on a transaction advisory lock per (app, hash). Raises 22023 on invalid arguments.';

create or replace function guestpass.require_app_user(p_user_id uuid)
returns uuid
language plpgsql
stable
security definer
set search_path = ''
as $$
declare
    v_app uuid := guestpass.require_app();
begin
    if p_user_id is null
       or not exists (select 1 from public.users as u where u.id = p_user_id and u.app_id = v_app) then
        raise exception 'the user is not a user of this app' using errcode = '42501';
    end if;
    return p_user_id;
end
$$;

comment on function guestpass.require_app_user(uuid) is
    'GuestPass internal: p_user_id when it is a user of the claims'' app; else raises 42501.';

create or replace function public.create_guest_user(p_device_id uuid)
returns uuid
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
    v_app uuid := guestpass.require_app();
    v_hash text;
    v_user uuid;
begin
    if p_device_id is null then
        raise exception using errcode = '22023', message = 'p_device_id is required';
    end if;
    -- uuid text is lowercase 8-4-4-4-12: the version is character 15, the variant character 20.
    if substr(p_device_id::text, 15, 1) <> '4' or substr(p_device_id::text, 20, 1) not in ('8', '9', 'a', 'b') then
        raise exception using errcode = '22023', message = 'p_device_id must be a random (version 4) uuid';
    end if;
    v_hash := encode(sha256(convert_to(p_device_id::text, 'UTF8')), 'hex');

    -- A known device creates nothing: no token is taken.
    select d.user_id into v_user from public.devices as d where d.app_id = v_app and d.secret_hash = v_hash;
    if found then
        return v_user;
    end if;
    if auth.role() is distinct from 'service_role' then
        perform guestpass.take_signup_limits(v_app, current_setting('request.client_ip', true));
    end if;

    select e.user_id into v_user from guestpass.ensure_guest_device(v_app, v_hash, null) as e;
    return v_user;
end
$$;

comment on function public.create_guest_user(uuid) is
    'GuestPass: the guest user of device p_device_id (a random, version 4 uuid) in the caller''s app (claim app_id), '
    'creating the anonymous user and the device on first use; race-free, so concurrent calls with one device id '
    'create one user. Creating a guest takes a token from the sign-up buckets of the client (request.client_ip) and '
    'of the app, as POST /auth/v1/signup does (guestpass.take_signup_limits; not for service_role), and raises PT429 '
    'with the seconds to wait as detail when one is empty; finding an existing guest takes nothing. p_device_id is a '
    'client-held secret, stored only as the lowercase hex SHA-256 of its lowercase canonical text '
    '(encode(sha256(convert_to(lower(p_device_id::text), ''UTF8'')), ''hex'')). Returns only the user id. '
    'Raises 42501 without an app claim, 22023 without a device id or for one that is not version 4.';

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
    v_app uuid := guestpass.require_app();
    v_now timestamptz;
    v_key text;
    v_user uuid;
    v_device uuid;
    v_created boolean;
begin
    if not exists (select 1 from guestpass.apps as a where a.id = v_app) then
        raise exception using errcode = '42501', message = 'unknown app';
    end if;

    -- Arguments (all checked before any token is taken).
    if p_session_id is null then
        raise exception using errcode = '22023', message = 'a session id is required';
    end if;
    perform guestpass.require_hex_sha256(p_refresh_token_hash, 'the refresh token hash');
    if p_secret_hash is not null then
        perform guestpass.require_hex_sha256(p_secret_hash, 'the device secret hash');
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
    v_now := guestpass.clock();

    -- Rate limits, before any write. The per-IP bucket is taken now. The per-app bucket, shared by every sign-up
    -- of the app, is only peeked at now (an empty bucket refuses before any write) and taken at the very end, so
    -- its row stays locked for the commit only instead of the whole sign-up. A null capacity turns a limit off.
    if p_ip_capacity is not null then
        perform guestpass.enforce_rate_limit(
            'signup:ip:' || guestpass.client_address_key(p_client_ip), p_ip_capacity, p_ip_refill_per_second
        );
    end if;
    if p_app_capacity is not null then
        perform guestpass.raise_rate_limited(
            guestpass.peek_rate_limit('signup:app:' || v_app::text, p_app_capacity, p_app_refill_per_second)
        );
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
                last_seen_at = v_now
            where d.id = v_device;
        end if;
    end if;

    insert into guestpass.sessions (id, app_id, user_id, device_id, user_agent, ip)
    values (p_session_id, v_app, v_user, v_device, left(p_user_agent, 1024), p_client_ip);
    insert into guestpass.refresh_tokens (session_id, counter, token_hash)
    values (p_session_id, 0, p_refresh_token_hash);

    if p_app_capacity is not null then
        perform guestpass.enforce_rate_limit('signup:app:' || v_app::text, p_app_capacity, p_app_refill_per_second);
    end if;

    return query
    select u.id, v_device, p_session_id, u.is_anonymous, u.email, u.user_metadata, u.app_metadata,
           u.created_at, u.updated_at, v_now, v_created
    from public.users as u
    where u.id = v_user;
end
$$;

comment on function guestpass_server.sign_up_guest(
    text, jsonb, jsonb, text, integer, double precision, integer, double precision, text, uuid, text
) is
    'GuestPass server: anonymous sign-up in the caller''s app (claim app_id), in one call. Rate limits before any '
    'write: buckets signup:ip:<guestpass.client_address_key(p_client_ip)> and signup:app:<app> (a null capacity '
    'turns one off; the app bucket is checked first and taken last, to keep its row locked briefly); when one is empty raises PT429 ''rate limit '
    'exceeded'' with the seconds to wait (integer, rounded up) as detail, and nothing is written or taken. Without '
    'p_secret_hash creates a new anonymous user (user_metadata = p_user_metadata); with it (the lowercase hex SHA-256 '
    'of the device secret, see public.create_guest_user) returns the device''s user, creating user and device if new '
    '(an existing user''s metadata is kept). Records the device facts present in p_device (model, os_version, '
    'app_version, build_number: strings; is_simulator: boolean; JSON null = not given; ignored without a device). '
    'Creates session p_session_id (chosen by the server) and its refresh token counter 0 with hash '
    'p_refresh_token_hash. Returns the user, the public device id (null without a device), the session, '
    'last_sign_in_at = guestpass.clock() and created (a new user); a device it finds or updates gets last_seen_at = '
    'guestpass.clock(). Raises 42501 without a known app, 22023 on invalid arguments.';

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
    v_app uuid := guestpass.require_app();
    v_now timestamptz;
    v_session guestpass.sessions%rowtype;
    v_token guestpass.refresh_tokens%rowtype;
    v_active integer;
    v_status text;
begin
    perform guestpass.require_hex_sha256(p_next_token_hash, 'the next refresh token hash');
    if p_reuse_window_seconds is not null and not (p_reuse_window_seconds >= 0
       and p_reuse_window_seconds < 'Infinity'::double precision) then
        raise exception using errcode = '22023', message = 'the reuse window must be a non-negative number of seconds';
    end if;
    v_now := guestpass.clock();

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
            update guestpass.refresh_tokens as t set revoked_at = v_now where t.id = v_token.id;
            insert into guestpass.refresh_tokens (session_id, counter, token_hash)
            values (v_session.id, v_active + 1, p_next_token_hash);
            update guestpass.sessions as s set refreshed_at = v_now where s.id = v_session.id;
            v_active := v_active + 1;
            v_status := 'rotated';
        elsif v_token.counter = v_active - 1 then
            -- The parent of the active token: a client that lost the answer gets the active token back.
            v_status := 'reused';
        elsif v_token.revoked_at + make_interval(secs => coalesce(p_reuse_window_seconds, 0)) >= v_now then
            v_status := 'reused';
        else
            -- An old token replayed outside the window: assume theft and revoke the whole family.
            update guestpass.sessions as s set revoked_at = v_now where s.id = v_session.id;
            update guestpass.refresh_tokens as t
            set revoked_at = v_now
            where t.session_id = v_session.id and t.revoked_at is null;
            v_status := 'refresh_token_already_used';
        end if;
    end;

    if v_status in ('rotated', 'reused') then
        update public.devices as d set last_seen_at = v_now where d.id = v_session.device_id;
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
    'reused. Concurrent refreshes of one session are serialised by a row lock. Time is guestpass.clock(): it stamps '
    'revoked_at, refreshed_at and the device''s last_seen_at, and the reuse window is revoked_at + '
    'p_reuse_window_seconds >= guestpass.clock(). Raises 42501 without an app claim, 22023 on an invalid next hash or '
    'window.';


create or replace function guestpass_server.sign_out(p_scope text)
returns integer
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
    v_user uuid;
    v_app uuid;
    v_session uuid := auth.claim_uuid('session_id');
    v_now timestamptz;
    v_count integer;
begin
    select c.user_id, c.app_id into v_user, v_app from guestpass.require_user_and_app() as c;
    if p_scope is null or p_scope not in ('local', 'global', 'others') then
        raise exception using errcode = '22023', message = 'scope must be local, global or others';
    end if;
    v_now := guestpass.clock();

    with revoked as (
        update guestpass.sessions as s
        set revoked_at = v_now
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
        set revoked_at = v_now
        where t.session_id in (select r.id from revoked as r) and t.revoked_at is null
    )
    select count(*)::integer into v_count from revoked;

    return v_count;
end
$$;

comment on function guestpass_server.sign_out(text) is
    'GuestPass server: signs the caller (claims sub and app_id) out. p_scope local revokes the claims'' session_id, '
    'global every session of the user, others every session but the claims'' one; each revoked session''s refresh '
    'tokens are revoked with it (revoked_at = guestpass.clock()). Returns the number of sessions revoked (0 when '
    'already signed out). Raises 42501 without a user or app claim, 22023 on another scope.';

create or replace function guestpass_server.devicecheck_begin(p_token_hash text)
returns table (status text, claim_id uuid, pending_claim_id uuid)
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
    v_user uuid;
    v_app uuid;
    v_now timestamptz := guestpass.clock();
    v_claimed boolean;
    v_pending guestpass.devicecheck_claims%rowtype;
    v_claim uuid;
begin
    select c.user_id, c.app_id into v_user, v_app from guestpass.require_user_and_app() as c;
    perform guestpass.require_hex_sha256(p_token_hash, 'the token hash');

    -- The user's lock: begin and finish of one user run one at a time.
    select u.initial_grant_claimed into v_claimed
    from public.users as u
    where u.id = v_user and u.app_id = v_app
    for no key update;
    if not found then
        raise exception 'unknown user' using errcode = '42501';
    end if;

    if v_claimed then
        return query select 'already_claimed'::text, null::uuid, null::uuid;
        return;
    end if;
    if exists (select 1 from guestpass.devicecheck_tokens as t where t.token_hash = p_token_hash) then
        return query select 'token_reused'::text, null::uuid, null::uuid;
        return;
    end if;

    select c.* into v_pending
    from guestpass.devicecheck_claims as c
    where c.user_id = v_user and c.state = 'pending'
    for update;
    if found and v_pending.updated_at > v_now - interval '30 seconds' then
        return query select 'in_progress'::text, null::uuid, v_pending.id;
        return;
    end if;

    -- The token is Apple-bound from here on: record it. Another user's transaction may have recorded the same token
    -- since the check above (a different user row lock); the primary key decides.
    insert into guestpass.devicecheck_tokens (token_hash, app_id, user_id, claim_id, seen_at)
    values (p_token_hash, v_app, v_user, v_pending.id, v_now)
    on conflict (token_hash) do nothing;
    if not found then
        return query select 'token_reused'::text, null::uuid, null::uuid;
        return;
    end if;

    if v_pending.id is not null then
        -- An old pending claim (a crash, or Apple unreachable mid-update): this call takes it over for 30 s.
        update guestpass.devicecheck_claims as c set updated_at = v_now where c.id = v_pending.id;
        return query select 'repair'::text, v_pending.id, v_pending.id;
        return;
    end if;

    insert into guestpass.devicecheck_claims (app_id, user_id, token_hash, state, created_at, updated_at)
    values (v_app, v_user, p_token_hash, 'pending', v_now, v_now)
    returning id into v_claim;
    update guestpass.devicecheck_tokens as t set claim_id = v_claim where t.token_hash = p_token_hash;
    return query select 'started'::text, v_claim, null::uuid;
end
$$;

comment on function guestpass_server.devicecheck_begin(text) is
    'GuestPass server: first step of POST /v1/devicecheck/grant for the caller (claims sub and app_id), before Apple '
    'is called. p_token_hash is the lowercase hex SHA-256 of the DeviceCheck token (else 22023). Locks the user row '
    'and returns one row, status: already_claimed (initial_grant_claimed is set: do not call Apple); token_reused '
    '(this token was seen before: refuse it); in_progress (another call of this user holds a pending claim started '
    'or taken over less than 30 s ago; pending_claim_id = it: try again later); repair (a pending claim older than '
    '30 s was left by a crash or an interrupted update: ask Apple with this token and finish claim_id = '
    'pending_claim_id = that claim; this call takes it over for 30 s); started (a new pending claim claim_id: query '
    'Apple''s bit0, set it if unset, then finish). The token is recorded as seen for repair and started only. '
    'Raises 42501 without a known user and app in the claims.';

create or replace function guestpass_server.devicecheck_finish(p_claim_id uuid, p_outcome text)
returns table (granted boolean, credits_granted integer, credits_balance integer)
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
    v_user uuid;
    v_app uuid;
    v_now timestamptz := guestpass.clock();
    v_claimed boolean;
    v_balance integer;
    v_credits integer;
    v_claim guestpass.devicecheck_claims%rowtype;
    v_state text;
    v_reason text;
begin
    select c.user_id, c.app_id into v_user, v_app from guestpass.require_user_and_app() as c;
    if p_outcome is null or p_outcome not in ('granted', 'refused', 'failed', 'found_set_on_repair', 'pending') then
        raise exception 'the outcome must be granted, refused, failed, found_set_on_repair or pending'
            using errcode = '22023';
    end if;

    -- Same lock order as devicecheck_begin: the user row, then the claim.
    select u.initial_grant_claimed, u.credits_balance into v_claimed, v_balance
    from public.users as u
    where u.id = v_user and u.app_id = v_app
    for no key update;
    if not found then
        raise exception 'unknown user' using errcode = '42501';
    end if;

    select c.* into v_claim
    from guestpass.devicecheck_claims as c
    where c.id = p_claim_id and c.user_id = v_user and c.app_id = v_app
    for update;
    if not found then
        raise exception 'no such claim of the caller' using errcode = '42501';
    end if;

    -- Whatever the outcome, this claim is done with Apple for now.
    delete from guestpass.devicecheck_leases as l where l.app_id = v_app and l.claim_id = v_claim.id;

    if v_claim.state = 'pending' then
        if p_outcome = 'pending' then
            return query select false, 0, v_balance;
            return;
        end if;
        if p_outcome = 'found_set_on_repair' then
            -- Ours only if no other claim of the app took the lease after ours and wrote bit0, or may have.
            if v_claim.lease_taken_at is not null and not exists (
                select 1
                from guestpass.devicecheck_claims as o
                where o.app_id = v_app and o.id <> v_claim.id and o.lease_taken_at > v_claim.lease_taken_at
                  and (o.state = 'pending' or (o.state = 'granted' and o.reason in ('bit0_unset', 'repaired')))
            ) then
                v_state := 'granted';
                v_reason := 'repaired';
            else
                v_state := 'refused';
                v_reason := 'repair_unproven';
            end if;
        elsif p_outcome = 'granted' then
            v_state := 'granted';
            v_reason := 'bit0_unset';
        elsif p_outcome = 'refused' then
            v_state := 'refused';
            v_reason := 'bit0_already_set';
        else
            v_state := 'failed';
            v_reason := 'apple_unreachable';
        end if;

        if v_state = 'granted' and v_claimed then
            -- (cannot happen through begin, which answers already_claimed first; it gives nothing)
            v_state := 'refused';
            v_reason := 'already_claimed';
        end if;

        update guestpass.devicecheck_claims as c
        set state = v_state, reason = v_reason, updated_at = v_now
        where c.id = v_claim.id;
        if v_state = 'granted' then
            select a.welcome_grant_credits into strict v_credits from guestpass.apps as a where a.id = v_app;
            update public.users as u set initial_grant_claimed = true where u.id = v_user;
            if v_credits > 0 then
                v_balance := guestpass.apply_credit_change(
                    v_user, v_credits, 'welcome_grant', 'welcome:' || v_claim.id::text
                );
            end if;
            return query select true, v_credits, v_balance;
            return;
        end if;
        if v_state = 'refused' then
            update public.users as u set initial_grant_claimed = true where u.id = v_user and not v_claimed;
        end if;
        return query select false, 0, v_balance;
        return;
    end if;

    -- Already finished: the first outcome stands, whatever p_outcome says now.
    if v_claim.state = 'granted' then
        select l.change into v_credits
        from guestpass.credit_ledger as l
        where l.user_id = v_user and l.idempotency_key = 'welcome:' || v_claim.id::text;
        return query select true, coalesce(v_credits, 0), v_balance;
    else
        return query select false, 0, v_balance;
    end if;
end
$$;

comment on function guestpass_server.devicecheck_finish(uuid, text) is
    'GuestPass server: ends (or parks) a claim of the caller (claims sub and app_id; else 42501) after Apple answered, '
    'and releases the app''s lease if the claim holds it. p_outcome: granted (bit0 was unset and this claim set it) '
    'gives, in one transaction, the app''s welcome_grant_credits (ledger reason welcome_grant, idempotency key '
    'welcome:<claim id>), initial_grant_claimed = true and state granted (reason bit0_unset); refused (bit0 already '
    'set by another install) sets initial_grant_claimed = true and state refused, no credits; found_set_on_repair (a '
    'pending claim''s repair found bit0 set) grants (reason repaired) only if no other claim of the app took the lease '
    'after this one and then wrote bit0 or may have (granted with bit0_unset or repaired, or pending), else refuses '
    '(reason repair_unproven); failed (Apple unreachable, and bit0 certainly not written by this claim) sets state '
    'failed so the next begin starts a new claim; pending leaves the claim pending for a later repair (its update''s '
    'fate is unknown) and only releases the lease. Idempotent: on a finished claim the first outcome stands and nothing '
    'changes. Returns granted, credits_granted (by this claim) and the balance. Raises 22023 on another outcome.';

create or replace function guestpass_server.devicecheck_take_lease(p_claim_id uuid, p_ttl_seconds double precision)
returns boolean
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
    v_user uuid;
    v_app uuid;
    v_now timestamptz := guestpass.clock();
begin
    select c.user_id, c.app_id into v_user, v_app from guestpass.require_user_and_app() as c;
    if p_ttl_seconds is null or not (p_ttl_seconds > 0 and p_ttl_seconds <= 300) then
        raise exception 'the lease time to live must be in (0, 300] seconds' using errcode = '22023';
    end if;
    if not exists (
        select 1 from guestpass.devicecheck_claims as c
        where c.id = p_claim_id and c.user_id = v_user and c.app_id = v_app and c.state = 'pending'
    ) then
        raise exception 'no such pending claim of the caller' using errcode = '42501';
    end if;

    insert into guestpass.devicecheck_leases as l (app_id, claim_id, expires_at)
    values (v_app, p_claim_id, v_now + p_ttl_seconds * interval '1 second')
    on conflict (app_id) do update
        set claim_id = excluded.claim_id, expires_at = excluded.expires_at
        where l.expires_at <= v_now or l.claim_id = excluded.claim_id;
    if not found then
        return false;
    end if;

    update guestpass.devicecheck_claims as c
    set lease_taken_at = coalesce(c.lease_taken_at, v_now), updated_at = v_now
    where c.id = p_claim_id;
    return true;
end
$$;

comment on function guestpass_server.devicecheck_take_lease(uuid, double precision) is
    'GuestPass server: takes the caller''s app''s DeviceCheck lease for pending claim p_claim_id of the caller for '
    'p_ttl_seconds (0 < ttl <= 300, else 22023) and returns true, or returns false while another claim holds an '
    'unexpired lease (the server waits and retries, up to a bound). Taking it records lease_taken_at (first time '
    'only) and refreshes the claim''s updated_at. Raises 42501 for a claim that is not a pending claim of the caller.';

-- Grants, as before: the helpers and internals to nobody, the entry points to exactly the request roles they serve.

revoke all on function
    guestpass.require_app(),
    guestpass.require_user_and_app(),
    guestpass.require_hex_sha256(text, text)
    from public;

revoke execute on function
    guestpass.take_rate_limit(text, integer, double precision),
    guestpass.peek_rate_limit(text, integer, double precision),
    guestpass.prune_rate_limits(interval),
    guestpass.ensure_guest_device(uuid, text, jsonb),
    guestpass.require_app_user(uuid),
    public.create_guest_user(uuid),
    guestpass_server.sign_up_guest(
        text, jsonb, jsonb, text, integer, double precision, integer, double precision, text, uuid, text
    ),
    guestpass_server.refresh_session(uuid, integer, text, text, double precision),
    guestpass_server.sign_out(text),
    guestpass_server.devicecheck_begin(text),
    guestpass_server.devicecheck_finish(uuid, text),
    guestpass_server.devicecheck_take_lease(uuid, double precision)
    from public;

grant execute on function public.create_guest_user(uuid) to anon, authenticated, service_role;
grant execute on function
    guestpass_server.sign_up_guest(
        text, jsonb, jsonb, text, integer, double precision, integer, double precision, text, uuid, text
    ),
    guestpass_server.refresh_session(uuid, integer, text, text, double precision)
    to anon;
grant execute on function
    guestpass_server.sign_out(text),
    guestpass_server.devicecheck_begin(text),
    guestpass_server.devicecheck_finish(uuid, text),
    guestpass_server.devicecheck_take_lease(uuid, double precision)
    to authenticated;
