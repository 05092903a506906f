-- guest sign-up: the sign-up limits, a device and its guest user, the session; create_guest_user over RPC
-- Repeatable (re-applied whenever this file changes, after every versioned file): create or replace only.
--
-- Notes carried from the change log before the re-baseline (NNNN names one of its files, in git history):
--
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
--
-- limit guest creation over RPC like sign-up: create_guest_user took neither the per-IP nor the per-app bucket
-- public.create_guest_user is the documents' RPC and stays callable with the publishable key, but an unlimited
-- get-or-create let anyone with that key mint guests without end. Now a call that would create a guest takes the same
-- two buckets as POST /auth/v1/signup (signup:ip:<client>, signup:app:<app>) before any write; a call for a device
-- that exists takes nothing (it creates nothing), and service_role (the app's backend) is not limited. The client
-- address comes from the request framing (the server sets the transaction-local request.client_ip next to the role
-- and claims); the limits come from the session settings guestpass.signup_* that the server sets when it connects
-- (from GUESTPASS_SIGNUP_* and GUESTPASS_APP_SIGNUP_*), with the documented defaults when they are unset (psql,
-- pgbench). Only version 4 (random) uuids are accepted as device ids, as on sign-up.
--
-- Buckets per client: an IPv6 client owns a whole /64 (one customer's network), so the per-IP bucket of an IPv6
-- address is its /64 (guestpass.client_address_key); sign_up_guest is redefined to use it, and to raise through the
-- one helper, guestpass.raise_rate_limited. Its behaviour is otherwise unchanged.
--
-- a refused rate-limit take locks nothing (no deadlock between sign-ups of a drained app), and a lighter sign-up path
-- A flood of sign-ups against an app whose sharded bucket (0024) had run dry could deadlock: a take that found its
-- shard empty still locked the row (INSERT … ON CONFLICT DO UPDATE locks the conflicting row even when its WHERE
-- fails), then tried the fullest shard while holding it, and two sign-ups could each hold the shard the other wanted.
-- One of them got 40P01, which the client saw as a 500. And the limits cost a quarter of every sign-up (measured on the
-- bench: about 1,300 sign-ups a second with both, 1,800 with neither) for two rows touched, mostly in the calls on
-- the way to them. Three changes:
--
-- 1. guestpass.take_rate_limit takes with an UPDATE whose condition is the token (a failed condition, re-checked on
--    the newest version after any wait, leaves the row unlocked) and inserts a missing row with ON CONFLICT DO NOTHING.
--    Its answers are unchanged; a refused take now locks nothing, so a caller holds a bucket's row only once it has
--    taken from it. With sign-up taking the IP's token before the app's, a sign-up waiting for a row holds at most
--    rows it has already taken, and the rows it waits for are held by sign-ups that are past their limits: no cycle.
-- 2. guestpass.client_address_key answers a canonical dotted-quad IPv4 address (what a proxy puts in
--    X-Forwarded-For) from a pattern match, without the cast and its exception block, which opened a subtransaction
--    on every call; anything else goes the old way. Its answers are unchanged.
-- 3. guestpass_server.sign_up_guest reads both buckets (the IP's and one random shard of the app's) in one statement
--    before any write, and only when that finds one empty goes the exact way (peek_rate_limit, sharded_rate_limit),
--    which refuses with the wait or finds another shard with tokens. Both tokens are taken after the writes, the IP's
--    first, so both rows stay locked for the commit only (the IP's was taken first until now). The shard layout
--    (how many shards, each one's capacity) gets one home, guestpass.shard_count and guestpass.shard_capacity, which
--    sharded_rate_limit uses too.
--
-- a guest sign-up in fewer statements, and hex checks without the bounded regex: the same answers at less CPU
-- Measured (bench/signup.sh, and pgbench on copies of one database, 8 connections, fsync on): a sign-up spent about
-- 1 ms of PostgreSQL CPU in some twenty statements: the function's own checks (each PERFORM is a statement), a
-- read of both rate-limit buckets before any write, ensure_guest_device's five, four per take_rate_limit, and the
-- final read of the user. The same sign-up now runs:
--   1. the argument checks, a lowercase hex SHA-256 now tested as octet_length(x) = 64 and x !~ '[^0-9a-f]': the
--      same strings as x ~ '^[0-9a-f]{64}$' at about a twentieth of its cost (0.35 against 6–10 µs a call; five
--      such checks run per sign-up, three in guestpass.require_hex_sha256 and two in CHECK constraints);
--   2. the tokens, by guestpass.take_signup_tokens, new here and shared with create_guest_user's
--      guestpass.take_signup_limits: the client's by one INSERT … ON CONFLICT DO UPDATE of its bucket row, then the
--      app's shard by one UPDATE, both before any write, in that order for every caller (so two sign-ups never lock
--      the two rows in opposite orders). A refused client token raises at once (the row it locked is released by
--      the rollback); a refused or missing shard goes the exact way (guestpass.sharded_rate_limit), which locks
--      nothing it does not take. The two statements stand in for enforce_rate_limit and sharded_rate_limit, whose
--      calls measured 0.90–0.93× the sign-ups a second (paired rounds); the exact ways stay theirs;
--   3. the device's guest by guestpass.ensure_guest_device, now the advisory lock and one statement (the device
--      INSERT … ON CONFLICT DO UPDATE and, for a new device, its user in the same statement);
--   4. the session and its refresh token in one statement, and the answer.
-- Paired runs (five rounds, alternating, each against a copy of one database) put it at 1.13× the sign-ups a
-- second of 0040's; every answer, error, limit and race guarantee is unchanged (pgTAP 05, 06, 08, 09, 25; the
-- Swift sign-up and limit tests; the e2e suite; pgTAP 31, new, on what a refused sign-up leaves). 0029 read both
-- buckets before the writes and took the tokens after them; they are now taken before the writes, with no read
-- first, so a refusal still writes nothing. The app's shard row stays locked for the writes as well as the commit,
-- which measured no slower.
-- The CHECK constraints of the six hex SHA-256 columns get the same cheap form (one spelling everywhere); adding
-- each scans its table once, here, under the migration's lock.

create or replace function guestpass.take_signup_limits(p_app uuid, p_client_address text)
    returns void
    language plpgsql set search_path = '' as $$
begin
    perform guestpass.take_signup_tokens(
        p_app, p_client_address,
        coalesce(nullif(current_setting('guestpass.signup_ip_burst', true), '')::integer, 30),
        coalesce(nullif(current_setting('guestpass.signup_ip_rate_per_hour', true), '')::double precision, 30) / 3600,
        coalesce(nullif(current_setting('guestpass.signup_app_burst', true), '')::integer, 1000),
        coalesce(nullif(current_setting('guestpass.signup_app_rate_per_hour', true), '')::double precision, 10000) / 3600
    );
end
$$;

comment on function guestpass.take_signup_limits(uuid, text) is
    'GuestPass internal: takes one token from the sign-up buckets of client p_client_address '
    '(signup:ip:<client_address_key>) and of app p_app (the sharded bucket signup:app:<app>), or raises PT429 with the '
    'seconds to wait: guestpass.take_signup_tokens with capacity and hourly rate from the session settings '
    'guestpass.signup_ip_burst, guestpass.signup_ip_rate_per_hour, guestpass.signup_app_burst and '
    'guestpass.signup_app_rate_per_hour (the server sets them at connect time from its configuration), defaulting to '
    '30, 30, 1000 and 10000.';

create or replace function guestpass.take_signup_tokens(
    p_app uuid, p_client_address text, p_ip_capacity integer, p_ip_refill_per_second double precision,
    p_app_capacity integer, p_app_refill_per_second double precision
)
    returns void
    language plpgsql as $$
declare
    v_now timestamptz := guestpass.clock();
    v_ip_bucket text;
    v_app_shards integer;
    v_app_shard integer;
    v_app_shard_capacity integer;
    v_app_shard_refill double precision;
begin
    if p_ip_capacity is not null then
        perform guestpass.check_rate_limit_arguments('signup:ip', p_ip_capacity, p_ip_refill_per_second);
    end if;
    if p_app_capacity is not null then
        perform guestpass.check_rate_limit_arguments('signup:app', p_app_capacity, p_app_refill_per_second);
    end if;

    -- The client's bucket first: one upsert that takes a token from a bucket holding one (a missing row is a full
    -- bucket); a refusal locks the row only until the exception below rolls back.
    if p_ip_capacity is not null then
        v_ip_bucket := 'signup:ip:' || guestpass.client_address_key(p_client_address);
        insert into guestpass.rate_limits as r (bucket, tokens, updated_at)
        values (v_ip_bucket, p_ip_capacity - 1, v_now)
        on conflict (bucket) do update
        set tokens = guestpass.bucket_tokens(r.tokens, r.updated_at, v_now, p_ip_capacity, p_ip_refill_per_second) - 1,
            updated_at = greatest(v_now, r.updated_at)
        where guestpass.bucket_tokens(r.tokens, r.updated_at, v_now, p_ip_capacity, p_ip_refill_per_second) >= 1;
        if not found then
            perform guestpass.raise_rate_limited(
                greatest(guestpass.peek_rate_limit(v_ip_bucket, p_ip_capacity, p_ip_refill_per_second), 0.001)
            );
        end if;
    end if;
    -- The app's sharded bucket (guestpass.sharded_rate_limit): one random shard by an UPDATE that locks nothing when
    -- it takes nothing; an empty or missing shard goes the exact way (sharded_rate_limit creates a missing shard,
    -- takes from another one, or refuses).
    if p_app_capacity is not null then
        v_app_shards := guestpass.shard_count(p_app_capacity);
        v_app_shard := floor(random() * v_app_shards)::integer;
        v_app_shard_capacity := guestpass.shard_capacity(p_app_capacity, v_app_shards, v_app_shard);
        v_app_shard_refill := p_app_refill_per_second / v_app_shards;
        update guestpass.rate_limits as r
        set tokens = guestpass.bucket_tokens(r.tokens, r.updated_at, v_now, v_app_shard_capacity, v_app_shard_refill) - 1,
            updated_at = greatest(v_now, r.updated_at)
        where r.bucket = 'signup:app:' || p_app::text || ':' || v_app_shard
          and guestpass.bucket_tokens(r.tokens, r.updated_at, v_now, v_app_shard_capacity, v_app_shard_refill) >= 1;
        if not found then
            perform guestpass.raise_rate_limited(
                guestpass.sharded_rate_limit('signup:app:' || p_app::text, p_app_capacity, p_app_refill_per_second, true)
            );
        end if;
    end if;
end
$$;

comment on function guestpass.take_signup_tokens(uuid, text, integer, double precision, integer, double precision) is
    'GuestPass internal: takes one token of each sign-up bucket, or raises PT429 ''rate limit exceeded'' with the '
    'seconds to wait (integer, rounded up) as detail and takes none (the caller''s transaction rolls back). The '
    'client''s bucket signup:ip:<guestpass.client_address_key(p_client_address)> (capacity p_ip_capacity, refilled at '
    'p_ip_refill_per_second) first, by one INSERT … ON CONFLICT DO UPDATE; then one shard of the app''s sharded bucket '
    'signup:app:<p_app> (guestpass.sharded_rate_limit: p_app_capacity, p_app_refill_per_second), by one UPDATE of a '
    'random shard, or the exact way when it is empty or missing (another shard, or the wait). A null capacity turns '
    'that limit off; invalid capacities or rates raise 22023 before any token is taken. The order (client, then app) '
    'is the same for every caller, so two sign-ups never lock the two rows in opposite orders. Shared by '
    'guestpass_server.sign_up_guest and guestpass.take_signup_limits (create_guest_user). Runs with its caller''s '
    'rights (only SECURITY DEFINER functions of the owner call it).';

create or replace function guestpass.ensure_guest_device(p_app uuid, p_secret_hash text, p_user_metadata jsonb)
    returns table (user_id uuid, device_id uuid, created boolean)
    language plpgsql security definer set search_path = '' as $$
declare
    v_new_user uuid := gen_random_uuid();
    v_new_device uuid := gen_random_uuid();
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

    -- One holder per (app, device) at a time, until commit, shared with redeem_account_code: the loser of a race
    -- waits here, then finds the secret.
    perform pg_advisory_xact_lock(hashtextextended('guestpass.device:' || p_app::text || ':' || p_secret_hash, 0));

    -- A known device is touched and keeps its user (a revoked one matches no row); an unknown secret gets a new
    -- device and a new guest, inserted in the same statement (the foreign keys are checked at its end).
    with known as (
        select s.device_id
        from guestpass.device_secrets as s
        where s.app_id = p_app and s.secret_hash = p_secret_hash
    ), touched as (
        update public.devices as d
        set last_seen_at = guestpass.clock()
        from known
        where d.id = known.device_id and d.revoked_at is null
        returning d.id, d.user_id
    ), secret as (
        insert into guestpass.device_secrets (device_id, app_id, secret_hash)
        select v_new_device, p_app, p_secret_hash
        where not exists (select from known)
        returning device_secrets.device_id
    ), device as (
        insert into public.devices as d (id, app_id, user_id)
        select secret.device_id, p_app, v_new_user
        from secret
        returning d.id, d.user_id
    ), new_user as (
        insert into public.users (id, app_id, is_anonymous, user_metadata)
        select v_new_user, p_app, true, coalesce(p_user_metadata, '{}'::jsonb)
        from secret
    )
    select t.user_id, t.id into v_user, v_device
    from (select touched.id, touched.user_id from touched union all select device.id, device.user_id from device) as t;

    if v_device is null then
        -- A revoked device's secret signs in no more (not even as a new guest).
        raise exception using errcode = 'PT401', message = 'device revoked';
    end if;
    return query select v_user, v_device, v_user = v_new_user;
end
$$;

comment on function guestpass.ensure_guest_device(uuid, text, jsonb) is
    'GuestPass internal: the guest of a device, race-free. For app p_app and device secret hash p_secret_hash '
    '(lowercase hex SHA-256) returns the device''s user and public device id with created = false and touches '
    'last_seen_at (guestpass.clock()); or creates a guest (user_metadata p_user_metadata), the device and its secret '
    '(guestpass.device_secrets), created = true, in one statement that looks the secret up by its unique key '
    '(app_id, secret_hash) first. A revoked device (devices.revoked_at) raises PT401 ''device revoked''. Concurrent '
    'calls for one device serialise on an advisory lock (shared with redeem_account_code), so one user is ever '
    'created per device.';

create or replace function guestpass_server.sign_up_guest(
    p_secret_hash text, p_device jsonb, p_user_metadata jsonb, p_client_ip text, p_ip_capacity integer,
    p_ip_refill_per_second double precision, p_app_capacity integer, p_app_refill_per_second double precision,
    p_user_agent text, p_session_id uuid, p_refresh_token_hash text
)
    returns table (
        user_id uuid, device_id uuid, session_id uuid, is_anonymous boolean, email text, user_metadata jsonb,
        app_metadata jsonb, created_at timestamptz, updated_at timestamptz, last_sign_in_at timestamptz, created boolean
    )
    language plpgsql security definer set search_path = '' as $$
declare
    v_app uuid := guestpass.require_app();
    v_now timestamptz := guestpass.clock();
    v_facts boolean := p_device ?| array['model', 'os_version', 'app_version', 'build_number', 'is_simulator'];
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
    if jsonb_typeof(p_user_metadata) <> 'object' then
        raise exception using errcode = '22023', message = 'user metadata must be a JSON object';
    end if;
    if jsonb_typeof(p_device) <> 'object' then
        raise exception using errcode = '22023', message = 'device facts must be a JSON object';
    end if;
    if v_facts then
        foreach v_key in array array['model', 'os_version', 'app_version', 'build_number'] loop
            if jsonb_typeof(p_device -> v_key) not in ('string', 'null') then
                raise exception using errcode = '22023', message = format('device.%s must be a string', v_key);
            end if;
            if char_length(p_device ->> v_key) > 255 then
                raise exception using errcode = '22023',
                    message = format('device.%s is longer than 255 characters', v_key);
            end if;
        end loop;
        if jsonb_typeof(p_device -> 'is_simulator') not in ('boolean', 'null') then
            raise exception using errcode = '22023', message = 'device.is_simulator must be a boolean';
        end if;
    end if;
    if p_ip_capacity is not null and (p_client_ip is null or p_client_ip = '') then
        raise exception using errcode = '22023', message = 'a client IP is required for the per-IP limit';
    end if;
    if char_length(p_client_ip) > 255 then
        raise exception using errcode = '22023', message = 'the client IP is longer than 255 characters';
    end if;
    perform guestpass.take_signup_tokens(
        v_app, p_client_ip, p_ip_capacity, p_ip_refill_per_second, p_app_capacity, p_app_refill_per_second
    );

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
        if v_facts then
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

    -- The session and its refresh token 0, in one statement.
    with session as (
        insert into guestpass.sessions (id, app_id, user_id, device_id, user_agent, ip)
        values (p_session_id, v_app, v_user, v_device, left(p_user_agent, 1024), p_client_ip)
    )
    insert into guestpass.refresh_tokens (session_id, counter, token_hash)
    values (p_session_id, 0, p_refresh_token_hash);

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
    'GuestPass server: anonymous sign-up in the caller''s app (claim app_id), in one call. Rate limits: buckets '
    'signup:ip:<guestpass.client_address_key(p_client_ip)> and signup:app:<app> (sharded, guestpass.sharded_rate_limit) '
    '(a null capacity turns one off), a token of each taken before any write, the IP''s first; when one is empty '
    'raises PT429 ''rate limit exceeded'' with the seconds to wait (integer, rounded up) as detail, and nothing is '
    'written or taken. Without p_secret_hash creates a new anonymous user (user_metadata = p_user_metadata); with it '
    '(the lowercase hex SHA-256 of the device secret, see public.create_guest_user) returns the device''s user '
    '(guestpass.ensure_guest_device), creating user and device if new (an existing user''s metadata is kept). Records '
    'the device facts present in p_device (model, os_version, app_version, build_number: strings; is_simulator: '
    'boolean; JSON null = not given; ignored without a device). Creates session p_session_id (chosen by the server) '
    'and its refresh token counter 0 with hash p_refresh_token_hash. Returns the user, the public device id (null '
    'without a device), the session, last_sign_in_at = guestpass.clock() and created (a new user); a device it finds '
    'or updates gets last_seen_at = guestpass.clock(). Raises 42501 without a known app, 22023 on invalid arguments.';

create or replace function public.create_guest_user(p_device_id uuid)
    returns uuid
    language plpgsql volatile security definer set search_path = '' as $$
declare
    v_app uuid := guestpass.require_app();
    v_hash text;
    v_user uuid;
    v_revoked boolean;
begin
    if p_device_id is null then
        raise exception using errcode = '22023', message = 'p_device_id is required';
    end if;
    -- uuid text is lowercase 8-4-4-4-12: the version is character 15, the variant character 20.
    if substr(p_device_id::text, 15, 1) <> '4' or substr(p_device_id::text, 20, 1) not in ('8', '9', 'a', 'b') then
        raise exception using errcode = '22023', message = 'p_device_id must be a random (version 4) uuid';
    end if;
    v_hash := encode(sha256(convert_to(p_device_id::text, 'UTF8')), 'hex');

    -- A known device creates nothing: no token is taken. A revoked one is refused as sign-up refuses it.
    select d.user_id, d.revoked_at is not null into v_user, v_revoked
    from guestpass.device_secrets as s
    join public.devices as d on d.id = s.device_id
    where s.app_id = v_app and s.secret_hash = v_hash;
    if v_revoked then
        raise exception using errcode = 'PT401', message = 'device revoked';
    elsif found then
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
    '(encode(sha256(convert_to(lower(p_device_id::text), ''UTF8'')), ''hex'')), in guestpass.device_secrets. Returns '
    'only the user id. Raises 42501 without an app claim, 22023 without a device id or for one that is not version 4, '
    'and PT401 ''device revoked'' for a device the user revoked (public.revoke_device), as sign-up does.';

-- Grants: no function of this file is PUBLIC's; the roles below are the only callers of each.
revoke all on function guestpass.take_signup_limits(uuid, text),
    guestpass.take_signup_tokens(uuid, text, integer, double precision, integer, double precision),
    guestpass.ensure_guest_device(uuid, text, jsonb),
    guestpass_server.sign_up_guest(text, jsonb, jsonb, text, integer, double precision, integer, double precision, text, uuid, text),
    public.create_guest_user(uuid) from public;
grant execute on function
    guestpass_server.sign_up_guest(text, jsonb, jsonb, text, integer, double precision, integer, double precision, text, uuid, text)
    to anon;
grant execute on function public.create_guest_user(uuid) to anon, authenticated, service_role;
