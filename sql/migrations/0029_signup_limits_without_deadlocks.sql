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

-- 1. A refused take locks nothing.

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

    update guestpass.rate_limits as r
    set tokens = guestpass.bucket_tokens(r.tokens, r.updated_at, v_now, p_capacity, p_refill_per_second) - 1,
        updated_at = greatest(v_now, r.updated_at)
    where r.bucket = p_bucket
      and guestpass.bucket_tokens(r.tokens, r.updated_at, v_now, p_capacity, p_refill_per_second) >= 1;
    if found then
        return 0;
    end if;

    -- No row (a full bucket) or an empty one. A row inserted meanwhile by another transaction makes this insert wait
    -- for it and then do nothing; the update below then sees that row.
    insert into guestpass.rate_limits (bucket, tokens, updated_at)
    values (p_bucket, p_capacity - 1, v_now)
    on conflict (bucket) do nothing;
    if found then
        return 0;
    end if;
    update guestpass.rate_limits as r
    set tokens = guestpass.bucket_tokens(r.tokens, r.updated_at, v_now, p_capacity, p_refill_per_second) - 1,
        updated_at = greatest(v_now, r.updated_at)
    where r.bucket = p_bucket
      and guestpass.bucket_tokens(r.tokens, r.updated_at, v_now, p_capacity, p_refill_per_second) >= 1;
    if found then
        return 0;
    end if;

    -- Empty: the row is unchanged and unlocked; answer how long until it holds one token.
    select r.tokens, r.updated_at into v_tokens, v_updated_at from guestpass.rate_limits as r where r.bucket = p_bucket;
    v_tokens := guestpass.bucket_tokens(v_tokens, v_updated_at, v_now, p_capacity, p_refill_per_second);
    return greatest((1 - v_tokens) / p_refill_per_second, 0.001);
end
$$;

comment on function guestpass.take_rate_limit(text, integer, double precision) is
    'Token bucket: takes one token from p_bucket (capacity p_capacity, refilled at p_refill_per_second, see '
    'guestpass.bucket_tokens) and returns 0, or returns the seconds until a token is available and takes nothing. '
    'Race-free: an UPDATE conditioned on a whole token (re-checked on the row''s newest version after waiting for its '
    'lock), or for a missing row an INSERT … ON CONFLICT DO NOTHING (which waits for a concurrent inserter, then the '
    'UPDATE is tried again). A refused take locks nothing, so callers that take from several buckets hold only rows '
    'they have taken from. Time is guestpass.clock() (the transaction''s start, or guestpass.clock_override), read '
    'once: a time older than the row''s updated_at (a transaction that waited for the row lock) refills nothing, and '
    'the update never moves updated_at backwards, so a take refills no more than the time elapsed since the row''s '
    'updated_at allows. A take is stamped with its transaction''s start, not the moment it ran: a take from a full '
    'bucket can leave the next one up to rate × (that transaction''s age) more than an exact clock would, e.g. about '
    '0.14 of a token of the per-app sign-up bucket for a 50 ms sign-up.';

-- 2. The bucket name of an IPv4 client without a subtransaction.

create or replace function guestpass.client_address_key(p_address text)
    returns text
    language plpgsql
    immutable
    set search_path = ''
    as $$
declare
    v_address inet;
begin
    if p_address is null or btrim(p_address) = '' then
        return 'unknown';
    end if;
    -- A dotted quad without leading zeros is its own canonical form (host(inet) gives it back unchanged).
    if btrim(p_address) ~ '^(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])(\.(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])){3}$'
    then
        return btrim(p_address);
    end if;
    begin
        v_address := btrim(p_address)::inet;
    exception when invalid_text_representation then
        return left(p_address, 255);
    end;
    if family(v_address) = 6 then
        -- An IPv4-mapped address (::ffff:a.b.c.d) is that IPv4 client.
        if v_address << '::ffff:0:0/96'::inet then
            return host(('0.0.0.0'::inet + (v_address - '::ffff:0:0'::inet)));
        end if;
        return network(set_masklen(v_address, 64))::text;
    end if;
    return host(v_address);
end
$$;

-- 3. The shard layout, in one place.

create function guestpass.shard_count(p_capacity integer)
    returns integer
    language sql
    immutable
    as $$
    select least(16, greatest(1, p_capacity / 8))
$$;

create function guestpass.shard_capacity(p_capacity integer, p_shards integer, p_shard integer)
    returns integer
    language sql
    immutable
    as $$
    select p_capacity / p_shards + (p_shard < p_capacity % p_shards)::integer
$$;

revoke all on function guestpass.shard_count(integer) from public;
revoke all on function guestpass.shard_capacity(integer, integer, integer) from public;

comment on function guestpass.shard_count(integer) is
    'GuestPass internal: how many shards a sharded bucket of capacity p_capacity has (guestpass.sharded_rate_limit): '
    'K = least(16, p_capacity / 8), at least 1. Inlinable.';
comment on function guestpass.shard_capacity(integer, integer, integer) is
    'GuestPass internal: the capacity of shard p_shard (0-based) of a bucket of capacity p_capacity spread over '
    'p_shards shards: p_capacity / p_shards, one more for the first p_capacity % p_shards shards, so that they sum to '
    'p_capacity. Inlinable.';

create or replace function guestpass.shard_rate_limit(
    p_bucket text, p_capacity integer, p_refill_per_second double precision, p_shards integer, p_shard integer,
    p_take boolean
) returns double precision
    language sql
    as $$
    select case
        when p_take then guestpass.take_rate_limit(
            p_bucket || ':' || p_shard, guestpass.shard_capacity(p_capacity, p_shards, p_shard),
            p_refill_per_second / p_shards
        )
        else guestpass.peek_rate_limit(
            p_bucket || ':' || p_shard, guestpass.shard_capacity(p_capacity, p_shards, p_shard),
            p_refill_per_second / p_shards
        )
    end
$$;

create or replace function guestpass.sharded_rate_limit(
    p_bucket text, p_capacity integer, p_refill_per_second double precision, p_take boolean
) returns double precision
    language plpgsql
    as $$
declare
    v_shards integer;
    v_shard integer;
    v_tokens double precision;
    v_wait double precision;
    v_now timestamptz;
begin
    perform guestpass.check_rate_limit_arguments(p_bucket, p_capacity, p_refill_per_second);
    v_shards := guestpass.shard_count(p_capacity);

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
                       r.tokens, r.updated_at, v_now, guestpass.shard_capacity(p_capacity, v_shards, g.k),
                       p_refill_per_second / v_shards
                   ),
                   guestpass.shard_capacity(p_capacity, v_shards, g.k)::double precision
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

-- 4. Sign-up: both buckets read in one statement before any write; both tokens taken after the writes, the IP's first.

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
    v_ip_bucket text;
    v_app_bucket text;
    v_app_shards integer;
    v_app_shard integer;
    v_app_shard_capacity integer;
    v_app_shard_refill double precision;
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

    -- Rate limits (a null capacity turns one off): the IP's bucket, and one random shard of the app's sharded bucket
    -- (guestpass.sharded_rate_limit). Both are read now, in one statement, so that an empty one refuses before any
    -- write; they are taken at the very end, so that their rows stay locked for the commit only.
    if p_ip_capacity is not null then
        perform guestpass.check_rate_limit_arguments('signup:ip', p_ip_capacity, p_ip_refill_per_second);
        v_ip_bucket := 'signup:ip:' || guestpass.client_address_key(p_client_ip);
    end if;
    if p_app_capacity is not null then
        perform guestpass.check_rate_limit_arguments('signup:app', p_app_capacity, p_app_refill_per_second);
        v_app_shards := guestpass.shard_count(p_app_capacity);
        v_app_shard := floor(random() * v_app_shards)::integer;
        v_app_bucket := 'signup:app:' || v_app::text || ':' || v_app_shard;
        v_app_shard_capacity := guestpass.shard_capacity(p_app_capacity, v_app_shards, v_app_shard);
        v_app_shard_refill := p_app_refill_per_second / v_app_shards;
    end if;
    if exists (
        select 1
        from guestpass.rate_limits as r
        where r.bucket in (v_ip_bucket, v_app_bucket)
          and guestpass.bucket_tokens(
                  r.tokens, r.updated_at, v_now,
                  case when r.bucket = v_ip_bucket then p_ip_capacity else v_app_shard_capacity end,
                  case when r.bucket = v_ip_bucket then p_ip_refill_per_second else v_app_shard_refill end
              ) < 1
    ) then
        -- The exact way: refuses with the wait, unless another of the app's shards holds a token.
        if v_ip_bucket is not null then
            perform guestpass.raise_rate_limited(
                guestpass.peek_rate_limit(v_ip_bucket, p_ip_capacity, p_ip_refill_per_second)
            );
        end if;
        if v_app_bucket is not null then
            perform guestpass.raise_rate_limited(
                guestpass.sharded_rate_limit('signup:app:' || v_app::text, p_app_capacity, p_app_refill_per_second, false)
            );
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
                last_seen_at = v_now
            where d.id = v_device;
        end if;
    end if;

    insert into guestpass.sessions (id, app_id, user_id, device_id, user_agent, ip)
    values (p_session_id, v_app, v_user, v_device, left(p_user_agent, 1024), p_client_ip);
    insert into guestpass.refresh_tokens (session_id, counter, token_hash)
    values (p_session_id, 0, p_refresh_token_hash);

    -- The tokens, the IP's first (guestpass.take_rate_limit: a refused take locks nothing). A bucket emptied since the
    -- read refuses with the wait, rolling back every write above; the app's chosen shard emptied goes the exact way,
    -- which takes from another shard or refuses.
    if v_ip_bucket is not null then
        perform guestpass.raise_rate_limited(
            guestpass.take_rate_limit(v_ip_bucket, p_ip_capacity, p_ip_refill_per_second)
        );
    end if;
    if v_app_bucket is not null
       and guestpass.take_rate_limit(v_app_bucket, v_app_shard_capacity, v_app_shard_refill) > 0 then
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
    'GuestPass server: anonymous sign-up in the caller''s app (claim app_id), in one call. Rate limits: buckets '
    'signup:ip:<guestpass.client_address_key(p_client_ip)> and signup:app:<app> (sharded, guestpass.sharded_rate_limit) '
    '(a null capacity turns one off), both read in one statement before any write (an empty one found goes through '
    'guestpass.peek_rate_limit / sharded_rate_limit) and taken after the writes, the IP''s first; when one is '
    'empty raises PT429 ''rate limit exceeded'' with the seconds to wait (integer, rounded up) as detail, and nothing '
    'is written or taken. Without p_secret_hash creates a new anonymous user (user_metadata = p_user_metadata); with '
    'it (the lowercase hex SHA-256 of the device secret, see public.create_guest_user) returns the device''s user, '
    'creating user and device if new (an existing user''s metadata is kept). Records the device facts present in '
    'p_device (model, os_version, app_version, build_number: strings; is_simulator: boolean; JSON null = not given; '
    'ignored without a device). Creates session p_session_id (chosen by the server) and its refresh token counter 0 '
    'with hash p_refresh_token_hash. Returns the user, the public device id (null without a device), the session, '
    'last_sign_in_at = guestpass.clock() and created (a new user); a device it finds or updates gets last_seen_at = '
    'guestpass.clock(). Raises 42501 without a known app, 22023 on invalid arguments.';
