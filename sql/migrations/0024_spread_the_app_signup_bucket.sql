-- a leaner sign-up write path: the per-app sign-up bucket spread over shards, users' checks fire only when they matter
-- Measured on the bench (8 connections, fsync on), sign-up ran at a fifth of PostgreSQL's ceiling for a guest. The
-- largest single cost was not work but waiting: every sign-up of an app took a token from one row,
-- signup:app:<app>, and held that row's lock through its commit, so the app's sign-ups committed one after another
-- and group commit could not batch them. Three changes:
--
-- 1. guestpass.sharded_rate_limit splits a bucket of capacity C and refill rate R into K = least(16, C / 8) shards
--    (at least 1), named <bucket>:<k>, with integer capacities summing to C and R / K each. A take tries one shard
--    at random and, when that one is empty, the fullest shard (one scan of the K rows); it refuses only when no shard
--    holds a whole token. So C takes in a row all succeed and the next is refused, as with one row, and the long-run
--    rate is R. What changes: after the bucket runs dry, tokens come back a shard at a time, so the wait it answers
--    (and the wait a client sees) is up to K / R instead of 1 / R. Sign-up (guestpass_server.sign_up_guest) and guest
--    creation over RPC (guestpass.take_signup_limits) take the app bucket through it; the per-IP bucket stays one
--    row (its contention is one client's). The old signup:app:<app> rows are no longer read: every app's bucket
--    starts full, and guestpass.prune_rate_limits deletes the old rows once idle.
-- 2. The users table's two BEFORE INSERT checks ran a PL/pgSQL function, with a save and restore of search_path, on
--    every new user only to find nothing to check. Each check is now two triggers whose WHEN clause (evaluated
--    without calling the function) lets it run only when there is something to refuse or to look up: a new user
--    with credits, or with a time zone other than UTC; an update that changes the balance or the time zone. The
--    functions, their errors and what they refuse are unchanged.
-- 3. devices_app_id_fkey and sessions_app_id_fkey are dropped. Each row's app is already tied to its user's by the
--    composite foreign keys (user_id, app_id) → public.users (id, app_id), and the user's to guestpass.apps by
--    users_app_id_fkey; deleting an app still removes its devices and sessions (through its users). Each of the two
--    took a share lock on the app's one guestpass.apps row for every new device and session.

-- 1. The sharded bucket.

create function guestpass.sharded_rate_limit(
    p_bucket text, p_capacity integer, p_refill_per_second double precision, p_take boolean
) returns double precision
    language plpgsql
    as $$
declare
    v_shards constant integer := least(16, greatest(1, p_capacity / 8));
    v_shard integer;
    v_tokens double precision;
    v_wait double precision;
    v_now timestamptz;
begin
    perform guestpass.check_rate_limit_arguments(p_bucket, p_capacity, p_refill_per_second);

    -- Shard k holds p_capacity / K tokens, and one more for the first p_capacity % K shards.
    v_shard := floor(random() * v_shards)::integer;
    v_wait := guestpass.shard_rate_limit(p_bucket, p_capacity, p_refill_per_second, v_shards, v_shard, p_take);
    if v_wait = 0 or v_shards = 1 then
        return v_wait;
    end if;

    -- That shard is empty: try the fullest one (a missing row is a full shard).
    v_now := guestpass.clock();
    select s.k, s.tokens into v_shard, v_tokens
    from (
        select g.k,
               coalesce(
                   guestpass.bucket_tokens(
                       r.tokens, r.updated_at, v_now, p_capacity / v_shards + (g.k < p_capacity % v_shards)::integer,
                       p_refill_per_second / v_shards
                   ),
                   (p_capacity / v_shards + (g.k < p_capacity % v_shards)::integer)::double precision
               ) as tokens
        from generate_series(0, v_shards - 1) as g (k)
        left join guestpass.rate_limits as r on r.bucket = p_bucket || ':' || g.k
    ) as s
    order by s.tokens desc, s.k
    limit 1;
    if v_tokens >= 1 then
        return guestpass.shard_rate_limit(p_bucket, p_capacity, p_refill_per_second, v_shards, v_shard, p_take);
    end if;
    -- Every shard refills at the same rate: the fullest is the first to hold a token again.
    return greatest((1 - v_tokens) / (p_refill_per_second / v_shards), 0.001);
end
$$;

create function guestpass.shard_rate_limit(
    p_bucket text, p_capacity integer, p_refill_per_second double precision, p_shards integer, p_shard integer,
    p_take boolean
) returns double precision
    language sql
    as $$
    select case
        when p_take then guestpass.take_rate_limit(
            p_bucket || ':' || p_shard, p_capacity / p_shards + (p_shard < p_capacity % p_shards)::integer,
            p_refill_per_second / p_shards
        )
        else guestpass.peek_rate_limit(
            p_bucket || ':' || p_shard, p_capacity / p_shards + (p_shard < p_capacity % p_shards)::integer,
            p_refill_per_second / p_shards
        )
    end
$$;

revoke all on function guestpass.sharded_rate_limit(text, integer, double precision, boolean) from public;
revoke all on function guestpass.shard_rate_limit(text, integer, double precision, integer, integer, boolean)
    from public;

comment on function guestpass.sharded_rate_limit(text, integer, double precision, boolean) is
    'GuestPass internal: a token bucket of capacity p_capacity refilled at p_refill_per_second that many transactions '
    'take from at once, spread over K = least(16, p_capacity / 8) shards (at least 1) so that they do not queue on '
    'one row lock until commit: shard k is the guestpass.rate_limits row <p_bucket>:<k>, holding p_capacity / K tokens '
    '(one more for the first p_capacity % K shards) refilled at p_refill_per_second / K. Tries one shard at random, '
    'then the fullest; with p_take takes a token (take_rate_limit), else only looks (peek_rate_limit). Returns 0, or '
    'the seconds until a shard holds a whole token again (at most K / p_refill_per_second). p_capacity takes in a row '
    'succeed. Runs with its caller''s rights (only SECURITY DEFINER functions of the owner call it).';
comment on function guestpass.shard_rate_limit(text, integer, double precision, integer, integer, boolean) is
    'GuestPass internal: take_rate_limit (p_take) or peek_rate_limit on shard p_shard of p_shards of the sharded '
    'bucket p_bucket (guestpass.sharded_rate_limit): row <p_bucket>:<p_shard>, capacity p_capacity / p_shards (one more '
    'when p_shard < p_capacity % p_shards), refill p_refill_per_second / p_shards.';

-- Sign-up over RPC (public.create_guest_user) takes the app bucket through it.

create or replace function guestpass.take_signup_limits(p_app uuid, p_client_address text)
    returns void
    language plpgsql
    set search_path = ''
    as $$
declare
    v_ip_burst integer := coalesce(nullif(current_setting('guestpass.signup_ip_burst', true), '')::integer, 30);
    v_ip_per_hour double precision :=
        coalesce(nullif(current_setting('guestpass.signup_ip_rate_per_hour', true), '')::double precision, 30);
    v_app_burst integer := coalesce(nullif(current_setting('guestpass.signup_app_burst', true), '')::integer, 1000);
    v_app_per_hour double precision :=
        coalesce(nullif(current_setting('guestpass.signup_app_rate_per_hour', true), '')::double precision, 10000);
begin
    perform guestpass.enforce_rate_limit(
        'signup:ip:' || guestpass.client_address_key(p_client_address), v_ip_burst, v_ip_per_hour / 3600
    );
    perform guestpass.raise_rate_limited(
        guestpass.sharded_rate_limit('signup:app:' || p_app::text, v_app_burst, v_app_per_hour / 3600, true)
    );
end
$$;

comment on function guestpass.take_signup_limits(uuid, text) is
    'GuestPass internal: takes one token from the sign-up buckets of client p_client_address (signup:ip:'
    '<client_address_key>) and of app p_app (the sharded bucket signup:app:<app>, guestpass.sharded_rate_limit), or '
    'raises PT429 with the seconds to wait. Capacity and hourly rate come from the session settings '
    'guestpass.signup_ip_burst, guestpass.signup_ip_rate_per_hour, guestpass.signup_app_burst and '
    'guestpass.signup_app_rate_per_hour (the server sets them at connect time from its configuration), defaulting to '
    '30, 30, 1000 and 10000.';

-- Sign-up: the per-app bucket is peeked at first (a shard) and taken last, as before, through the sharded bucket.

create or replace function guestpass_server.sign_up_guest(p_secret_hash text, p_device jsonb, p_user_metadata jsonb, p_client_ip text, p_ip_capacity integer, p_ip_refill_per_second double precision, p_app_capacity integer, p_app_refill_per_second double precision, p_user_agent text, p_session_id uuid, p_refresh_token_hash text) RETURNS TABLE(user_id uuid, device_id uuid, session_id uuid, is_anonymous boolean, email text, user_metadata jsonb, app_metadata jsonb, created_at timestamp with time zone, updated_at timestamp with time zone, last_sign_in_at timestamp with time zone, created boolean)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO ''
    AS $$
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
    -- its shard's row stays locked for the commit only instead of the whole sign-up. A null capacity turns a limit off.
    if p_ip_capacity is not null then
        perform guestpass.enforce_rate_limit(
            'signup:ip:' || guestpass.client_address_key(p_client_ip), p_ip_capacity, p_ip_refill_per_second
        );
    end if;
    if p_app_capacity is not null then
        perform guestpass.raise_rate_limited(
            guestpass.sharded_rate_limit('signup:app:' || v_app::text, p_app_capacity, p_app_refill_per_second, false)
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
        perform guestpass.raise_rate_limited(
            guestpass.sharded_rate_limit('signup:app:' || v_app::text, p_app_capacity, p_app_refill_per_second, true)
        );
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
    'write: buckets signup:ip:<guestpass.client_address_key(p_client_ip)> and signup:app:<app> (sharded, '
    'guestpass.sharded_rate_limit) (a null capacity turns one off; the app bucket is checked first and taken '
    'last, to keep its row locked briefly); when one is empty raises PT429 ''rate limit exceeded'' with the '
    'seconds to wait (integer, rounded up) as detail, and nothing is written or taken. Without p_secret_hash '
    'creates a new anonymous user (user_metadata = p_user_metadata); with it (the lowercase hex SHA-256 of the '
    'device secret, see public.create_guest_user) returns the device''s user, creating user and device if new (an '
    'existing user''s metadata is kept). Records the device facts present in p_device (model, os_version, '
    'app_version, build_number: strings; is_simulator: boolean; JSON null = not given; ignored without a device). '
    'Creates session p_session_id (chosen by the server) and its refresh token counter 0 with hash '
    'p_refresh_token_hash. Returns the user, the public device id (null without a device), the session, '
    'last_sign_in_at = guestpass.clock() and created (a new user); a device it finds or updates gets last_seen_at '
    '= guestpass.clock(). Raises 42501 without a known app, 22023 on invalid arguments.';

-- 2. The users table's checks fire only when there is something to check.

drop trigger users_check_credits_balance on public.users;
drop trigger users_check_timezone on public.users;

create trigger users_check_credits_balance
    before update of credits_balance on public.users
    for each row when (new.credits_balance is distinct from old.credits_balance)
    execute function guestpass.check_credits_balance();
create trigger users_check_new_credits_balance
    before insert on public.users
    for each row when (new.credits_balance <> 0)
    execute function guestpass.check_credits_balance();
create trigger users_check_timezone
    before update of timezone on public.users
    for each row when (new.timezone is distinct from old.timezone and new.timezone <> 'UTC')
    execute function guestpass.check_user_timezone();
create trigger users_check_new_timezone
    before insert on public.users
    for each row when (new.timezone <> 'UTC')
    execute function guestpass.check_user_timezone();

comment on trigger users_check_credits_balance on public.users is
    'GuestPass: a changed credits_balance must be the balance_after of the user''s newest ledger row '
    '(guestpass.check_credits_balance).';
comment on trigger users_check_new_credits_balance on public.users is
    'GuestPass: a new user starts with no credits (guestpass.check_credits_balance).';
comment on trigger users_check_timezone on public.users is
    'GuestPass: a changed time zone other than UTC must be an IANA name (guestpass.check_user_timezone).';
comment on trigger users_check_new_timezone on public.users is
    'GuestPass: a new user''s time zone other than UTC must be an IANA name (guestpass.check_user_timezone).';

-- 3. Two foreign keys that the composite ones already imply.

alter table public.devices drop constraint devices_app_id_fkey;
alter table guestpass.sessions drop constraint sessions_app_id_fkey;

comment on function guestpass.check_credits_balance() is
    'GuestPass: trigger function of public.users'' users_check_new_credits_balance (BEFORE INSERT, when the balance is '
    'not 0) and users_check_credits_balance (BEFORE UPDATE OF credits_balance, when it changes): a new user has 0 '
    'credits, and a new balance must be the balance_after of the user''s newest ledger row (else 23514), so the '
    'balance never moves without its ledger row.';
comment on function guestpass.check_user_timezone() is
    'GuestPass: trigger function of public.users'' users_check_new_timezone (BEFORE INSERT) and users_check_timezone '
    '(BEFORE UPDATE OF timezone, when it changes), which fire only for a time zone other than UTC: raises 22023 '
    '''unknown time zone'' unless the new timezone is an IANA name known to PostgreSQL (pg_timezone_names, without the '
    'posix/ and right/ copies).';
