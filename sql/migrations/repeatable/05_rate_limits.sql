-- rate limits: token buckets (one row, or sharded for a hot bucket), the client-address key
-- Repeatable (re-applied whenever this file changes, after every versioned file): create or replace only.
--
-- Notes carried from the change log before the re-baseline (NNNN names one of its files, in git history):
--
-- create guestpass.rate_limits, token buckets shared by every server replica, and the functions that use them
-- A bucket holds up to `capacity` tokens and refills at `refill_per_second`; each limited action takes one token.
-- Capacity and rate are passed by the caller on every use (they come from configuration), so a row holds only the
-- state: the tokens left at updated_at. A missing row is a full bucket. Time is clock_timestamp() read AFTER the
-- bucket's row lock is granted, not now(): a transaction that waited for the lock must not refill from its own,
-- older start time. Tests move time by setting updated_at back. The functions are internal (no grants): the
-- SECURITY DEFINER entry points call them, and `guestpass prune` (the owner) deletes idle buckets (prune_batch).
--
-- take a rate-limit token in one statement: sign-up spent three statements (insert, select for update, update) per bucket
-- Same semantics as 0008's version: a new bucket starts full; an existing one refills by elapsed time × rate, up to
-- its capacity, and gives a token when it holds at least one. INSERT … ON CONFLICT DO UPDATE locks the row and
-- re-reads its latest committed version, so concurrent takers of one bucket still queue and never overdraw it.
--
-- one home for the token-bucket refill, written four times across 0008 and 0013, and why auth.* pins no search_path
-- guestpass.bucket_tokens computes what a bucket holds after refilling; take_rate_limit (one upsert, as in 0013) and
-- peek_rate_limit use it, so the formula lives once. It is a single-expression, IMMUTABLE, SQL function without a SET
-- clause, so PostgreSQL inlines it where it is called: no call overhead on the sign-up path.
--
-- The auth.* claim helpers (0002) keep no `SET search_path`: a SET clause stops PostgreSQL from inlining a SQL
-- function, and every policy calls them. Their bodies call only pg_catalog functions and auth.* by qualified name;
-- pg_catalog is searched before any schema a caller puts on its search_path (unless it names pg_catalog later, which
-- the request roles cannot make matter: they cannot create functions), so they resolve the same for every caller.
--
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
--    starts full, and guestpass.prune_batch deletes the old rows once idle.
-- 2. The users table's two BEFORE INSERT checks ran a PL/pgSQL function, with a save and restore of search_path, on
--    every new user only to find nothing to check. Each check is now two triggers whose WHEN clause (evaluated
--    without calling the function) lets it run only when there is something to refuse or to look up: a new user
--    with credits, or with a time zone other than UTC; an update that changes the balance or the time zone. The
--    functions, their errors and what they refuse are unchanged.
-- 3. devices_app_id_fkey and sessions_app_id_fkey are dropped. Each row's app is already tied to its user's by the
--    composite foreign keys (user_id, app_id) → public.users (id, app_id), and the user's to guestpass.apps by
--    users_app_id_fkey; deleting an app still removes its devices and sessions (through its users). Each of the two
--    took a share lock on the app's one guestpass.apps row for every new device and session.

create or replace function guestpass.bucket_tokens(
    p_tokens double precision,
    p_updated_at timestamptz,
    p_now timestamptz,
    p_capacity integer,
    p_refill_per_second double precision
)
    returns double precision
    language sql immutable as $$
    select least(
        p_capacity::double precision,
        p_tokens + greatest(extract(epoch from p_now - p_updated_at)::double precision, 0) * p_refill_per_second
    )
$$;

comment on function guestpass.bucket_tokens(double precision, timestamptz, timestamptz, integer, double precision) is
    'GuestPass internal: the tokens a bucket holds at p_now, having held p_tokens at p_updated_at and refilled at '
    'p_refill_per_second since, up to p_capacity (time running backwards refills nothing). Inlinable: no SET clause.';

create or replace function guestpass.check_rate_limit_arguments(
    p_bucket text, p_capacity integer, p_refill_per_second double precision
)
    returns void
    language sql volatile as $$
    select case
        when p_bucket is null or p_bucket = '' then
            guestpass.refuse_argument('rate limit bucket must be a non-empty name')
        when p_capacity is null or p_capacity < 1 then
            guestpass.refuse_argument('rate limit capacity must be at least 1')
        -- (PostgreSQL sorts NaN above every number, Infinity included, so this also refuses NaN.)
        when p_refill_per_second is null
             or not (p_refill_per_second > 0 and p_refill_per_second < 'Infinity'::double precision) then
            guestpass.refuse_argument('rate limit refill rate must be a positive finite number')
        else null::void
    end
$$;

comment on function guestpass.check_rate_limit_arguments(text, integer, double precision) is
    'GuestPass internal: raises 22023 unless the rate limit arguments are valid: a non-empty bucket name, a capacity of '
    'at least 1 and a positive, finite refill rate per second. Shared by take_rate_limit, peek_rate_limit, '
    'sharded_rate_limit and take_signup_tokens. Inlinable: one CASE expression, no SET clause; VOLATILE because its '
    'refuser (guestpass.refuse_argument) is (0042).';

create or replace function guestpass.raise_rate_limited(p_wait_seconds double precision)
    returns void
    language plpgsql stable set search_path = '' as $$
begin
    if p_wait_seconds > 0 then
        raise exception using errcode = 'PT429', message = 'rate limit exceeded',
            detail = least(ceil(p_wait_seconds), 2147483647)::bigint::text;
    end if;
end
$$;

comment on function guestpass.raise_rate_limited(double precision) is
    'GuestPass internal: raises PT429 ''rate limit exceeded'' with the whole seconds to wait (rounded up) as detail '
    'when p_wait_seconds > 0, as take_rate_limit and peek_rate_limit answer; does nothing otherwise. The server '
    'turns it into HTTP 429 with Retry-After.';

create or replace function guestpass.peek_rate_limit(p_bucket text, p_capacity integer, p_refill_per_second double precision)
    returns double precision
    language plpgsql stable security definer set search_path = '' as $$
declare
    v_now timestamptz := guestpass.clock();
    v_tokens double precision;
    v_updated_at timestamptz;
begin
    perform guestpass.check_rate_limit_arguments(p_bucket, p_capacity, p_refill_per_second);

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

-- 1. A refused take locks nothing.
create or replace function guestpass.take_rate_limit(p_bucket text, p_capacity integer, p_refill_per_second double precision)
    returns double precision
    language plpgsql volatile security definer set search_path = '' as $$
declare
    v_now timestamptz := guestpass.clock();
begin
    perform guestpass.check_rate_limit_arguments(p_bucket, p_capacity, p_refill_per_second);

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

    -- Empty: the row is unchanged and unlocked; answer how long until it holds one token (peek reads the same clock).
    return greatest(guestpass.peek_rate_limit(p_bucket, p_capacity, p_refill_per_second), 0.001);
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

create or replace function guestpass.enforce_rate_limit(p_bucket text, p_capacity integer, p_refill_per_second double precision)
    returns void
    language sql volatile set search_path = '' as $$
    select guestpass.raise_rate_limited(guestpass.take_rate_limit(p_bucket, p_capacity, p_refill_per_second))
$$;

comment on function guestpass.enforce_rate_limit(text, integer, double precision) is
    'GuestPass internal: takes one token from p_bucket (take_rate_limit) or raises PT429 with the seconds to wait '
    '(raise_rate_limited) and takes nothing.';

-- 3. The shard layout, in one place.
create or replace function guestpass.shard_count(p_capacity integer)
    returns integer
    language sql immutable as $$
    select least(16, greatest(1, p_capacity / 8))
$$;

comment on function guestpass.shard_count(integer) is
    'GuestPass internal: how many shards a sharded bucket of capacity p_capacity has (guestpass.sharded_rate_limit): '
    'K = least(16, p_capacity / 8), at least 1. Inlinable.';

create or replace function guestpass.shard_capacity(p_capacity integer, p_shards integer, p_shard integer)
    returns integer
    language sql immutable as $$
    select p_capacity / p_shards + (p_shard < p_capacity % p_shards)::integer
$$;

comment on function guestpass.shard_capacity(integer, integer, integer) is
    'GuestPass internal: the capacity of shard p_shard (0-based) of a bucket of capacity p_capacity spread over '
    'p_shards shards: p_capacity / p_shards, one more for the first p_capacity % p_shards shards, so that they sum to '
    'p_capacity. Inlinable.';

create or replace function guestpass.shard_rate_limit(
    p_bucket text, p_capacity integer, p_refill_per_second double precision, p_shards integer, p_shard integer,
    p_take boolean
) returns double precision
    language sql as $$
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

comment on function guestpass.shard_rate_limit(text, integer, double precision, integer, integer, boolean) is
    'GuestPass internal: take_rate_limit (p_take) or peek_rate_limit on shard p_shard of p_shards of the sharded '
    'bucket p_bucket (guestpass.sharded_rate_limit): row <p_bucket>:<p_shard>, capacity p_capacity / p_shards (one more '
    'when p_shard < p_capacity % p_shards), refill p_refill_per_second / p_shards.';

create or replace function guestpass.sharded_rate_limit(
    p_bucket text, p_capacity integer, p_refill_per_second double precision, p_take boolean
) returns double precision
    language plpgsql as $$
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

comment on function guestpass.sharded_rate_limit(text, integer, double precision, boolean) is
    'GuestPass internal: a token bucket of capacity p_capacity refilled at p_refill_per_second that many transactions '
    'take from at once, spread over K = least(16, p_capacity / 8) shards (at least 1) so that they do not queue on '
    'one row lock until commit: shard k is the guestpass.rate_limits row <p_bucket>:<k>, holding p_capacity / K tokens '
    '(one more for the first p_capacity % K shards) refilled at p_refill_per_second / K. Tries one shard at random, '
    'then the fullest; with p_take takes a token (take_rate_limit), else only looks (peek_rate_limit). Returns 0, or '
    'the seconds until a shard holds a whole token again (at most K / p_refill_per_second). p_capacity takes in a row '
    'succeed. Runs with its caller''s rights (only SECURITY DEFINER functions of the owner call it).';

-- Idle buckets are deleted by `guestpass prune` (guestpass.prune_batch, kind rate_limits); the former
-- guestpass.prune_rate_limits(interval) had no caller left.
drop function if exists guestpass.prune_rate_limits(interval);

create or replace function guestpass.client_address_key_parsed(p_address text)
    returns text
    language plpgsql immutable set search_path = '' as $$
declare
    v_address inet;
begin
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

comment on function guestpass.client_address_key_parsed(text) is
    'GuestPass internal: guestpass.client_address_key of an address that is not blank and not a canonical dotted quad: '
    'parsed as inet, an IPv6 address is its /64 network, an IPv4-mapped IPv6 address its IPv4 address, another IPv4 '
    'spelling its canonical form (host(inet)), and text that is no address itself (at most 255 characters).';

create or replace function guestpass.client_address_key(p_address text)
    returns text
    language sql immutable as $$
    select case
        when p_address is null or pg_catalog.btrim(p_address) = '' then 'unknown'
        -- A dotted quad without leading zeros is its own canonical form (host(inet) gives it back unchanged).
        when pg_catalog.btrim(p_address) ~
             '^(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])(\.(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])){3}$'
            then pg_catalog.btrim(p_address)
        else guestpass.client_address_key_parsed(p_address)
    end
$$;

comment on function guestpass.client_address_key(text) is
    'GuestPass internal: the rate-limit identity of a client address: an IPv4 address as itself, an IPv6 address as '
    'its /64 network (one customer''s LAN), an IPv4-mapped IPv6 address as its IPv4 address, a blank one as '
    '''unknown'', and text that is no address as itself (at most 255 characters). Inlinable: the blank address and the '
    'canonical dotted quad are one CASE expression; anything else is guestpass.client_address_key_parsed (0042).';

-- Row-level security, on and forced for the tables of this area (0005_rate_limits.sql): a role, the tables' owner
-- included, sees only the rows a policy gives it; a table with no policy for a role shows it none.
alter table guestpass.rate_limits enable row level security, force row level security;

-- Grants: no function of this file is PUBLIC's; the roles below are the only callers of each.
revoke all on function guestpass.bucket_tokens(double precision, timestamptz, timestamptz, integer, double precision),
    guestpass.check_rate_limit_arguments(text, integer, double precision),
    guestpass.raise_rate_limited(double precision), guestpass.peek_rate_limit(text, integer, double precision),
    guestpass.take_rate_limit(text, integer, double precision),
    guestpass.enforce_rate_limit(text, integer, double precision), guestpass.shard_count(integer),
    guestpass.shard_capacity(integer, integer, integer),
    guestpass.shard_rate_limit(text, integer, double precision, integer, integer, boolean),
    guestpass.sharded_rate_limit(text, integer, double precision, boolean), guestpass.client_address_key_parsed(text),
    guestpass.client_address_key(text) from public;
