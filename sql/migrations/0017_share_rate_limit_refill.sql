-- one home for the token-bucket refill, written four times across 0008 and 0013, and why auth.* pins no search_path
-- guestpass.bucket_tokens computes what a bucket holds after refilling; take_rate_limit (one upsert, as in 0013) and
-- peek_rate_limit use it, so the formula lives once. It is a single-expression, IMMUTABLE, SQL function without a SET
-- clause, so PostgreSQL inlines it where it is called: no call overhead on the sign-up path.
--
-- The auth.* claim helpers (0002) keep no `SET search_path`: a SET clause stops PostgreSQL from inlining a SQL
-- function, and every policy calls them. Their bodies call only pg_catalog functions and auth.* by qualified name;
-- pg_catalog is searched before any schema a caller puts on its search_path (unless it names pg_catalog later, which
-- the request roles cannot make matter: they cannot create functions), so they resolve the same for every caller.

create or replace function guestpass.bucket_tokens(
    p_tokens double precision,
    p_updated_at timestamptz,
    p_now timestamptz,
    p_capacity integer,
    p_refill_per_second double precision
)
returns double precision
language sql
immutable
as $$
    select least(
        p_capacity::double precision,
        p_tokens + greatest(extract(epoch from p_now - p_updated_at)::double precision, 0) * p_refill_per_second
    )
$$;

comment on function guestpass.bucket_tokens(double precision, timestamptz, timestamptz, integer, double precision) is
    'GuestPass internal: the tokens a bucket holds at p_now, having held p_tokens at p_updated_at and refilled at '
    'p_refill_per_second since, up to p_capacity (time running backwards refills nothing). Inlinable: no SET clause.';

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
    v_now constant timestamptz := clock_timestamp();
    v_tokens double precision;
    v_updated_at timestamptz;
begin
    perform guestpass.check_rate_limit_arguments(p_bucket, p_capacity, p_refill_per_second);

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
    'is clock_timestamp(), read before the row lock; the update never moves updated_at backwards.';

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
    v_tokens double precision;
    v_updated_at timestamptz;
begin
    perform guestpass.check_rate_limit_arguments(p_bucket, p_capacity, p_refill_per_second);

    select r.tokens, r.updated_at into v_tokens, v_updated_at from guestpass.rate_limits as r where r.bucket = p_bucket;
    if not found then
        return 0;
    end if;
    v_tokens := guestpass.bucket_tokens(v_tokens, v_updated_at, clock_timestamp(), p_capacity, p_refill_per_second);
    if v_tokens >= 1 then
        return 0;
    end if;
    return (1 - v_tokens) / p_refill_per_second;
end
$$;

comment on function guestpass.peek_rate_limit(text, integer, double precision) is
    'GuestPass internal: what take_rate_limit would answer now (0 or the seconds until a token is available), '
    'without taking a token or locking the bucket. Lets a caller refuse early, before any write, and take the token '
    'itself at the end of its transaction so the bucket row stays locked only briefly.';

revoke execute on function
    guestpass.bucket_tokens(double precision, timestamptz, timestamptz, integer, double precision),
    guestpass.take_rate_limit(text, integer, double precision),
    guestpass.peek_rate_limit(text, integer, double precision)
    from public;
