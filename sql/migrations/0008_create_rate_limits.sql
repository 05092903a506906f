-- create guestpass.rate_limits, token buckets shared by every server replica, and the functions that use them
-- A bucket holds up to `capacity` tokens and refills at `refill_per_second`; each limited action takes one token.
-- Capacity and rate are passed by the caller on every use (they come from configuration), so a row holds only the
-- state: the tokens left at updated_at. A missing row is a full bucket. Time is clock_timestamp() read AFTER the
-- bucket's row lock is granted, not now(): a transaction that waited for the lock must not refill from its own,
-- older start time. Tests move time by setting updated_at back. The functions are internal (no grants): the
-- SECURITY DEFINER entry points of 0009 call them, and `guestpass prune` (the owner) calls prune_rate_limits.

create table if not exists guestpass.rate_limits (
    bucket text not null,
    tokens double precision not null,
    updated_at timestamptz not null,
    constraint rate_limits_pkey primary key (bucket),
    constraint rate_limits_bucket_check check (bucket <> ''),
    constraint rate_limits_tokens_check check (tokens >= 0)
);

comment on table guestpass.rate_limits is
    'GuestPass: token-bucket state per bucket name (e.g. signup:ip:<address>, signup:app:<app id>): the tokens left '
    'at updated_at. Capacity and refill rate come from configuration with each call; a missing row is a full bucket.';

alter table guestpass.rate_limits enable row level security;
alter table guestpass.rate_limits force row level security;

create or replace function guestpass.check_rate_limit_arguments(
    p_bucket text,
    p_capacity integer,
    p_refill_per_second double precision
)
returns void
language plpgsql
immutable
set search_path = ''
as $$
begin
    if p_bucket is null or p_bucket = '' then
        raise exception using errcode = '22023', message = 'rate limit bucket must be a non-empty name';
    end if;
    if p_capacity is null or p_capacity < 1 then
        raise exception using errcode = '22023', message = 'rate limit capacity must be at least 1';
    end if;
    -- (PostgreSQL sorts NaN above every number, Infinity included, so this also refuses NaN.)
    if p_refill_per_second is null
       or not (p_refill_per_second > 0 and p_refill_per_second < 'Infinity'::double precision) then
        raise exception using errcode = '22023', message = 'rate limit refill rate must be a positive finite number';
    end if;
end
$$;

comment on function guestpass.check_rate_limit_arguments(text, integer, double precision) is
    'GuestPass internal: raises 22023 unless the bucket is named, the capacity is at least 1 and the refill rate is '
    'positive and finite.';

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
    v_tokens double precision;
    v_updated_at timestamptz;
    v_now timestamptz;
begin
    perform guestpass.check_rate_limit_arguments(p_bucket, p_capacity, p_refill_per_second);

    -- Make sure the row exists (a new bucket starts full), then lock it: concurrent takers of one bucket queue
    -- here, and each sees the state its predecessor committed.
    insert into guestpass.rate_limits (bucket, tokens, updated_at)
    values (p_bucket, p_capacity, clock_timestamp())
    on conflict (bucket) do nothing;

    select r.tokens, r.updated_at
    into strict v_tokens, v_updated_at
    from guestpass.rate_limits as r
    where r.bucket = p_bucket
    for update;

    v_now := clock_timestamp();
    v_tokens := least(
        p_capacity::double precision,
        v_tokens + greatest(extract(epoch from v_now - v_updated_at)::double precision, 0) * p_refill_per_second
    );

    if v_tokens >= 1 then
        update guestpass.rate_limits as r
        set tokens = v_tokens - 1, updated_at = v_now
        where r.bucket = p_bucket;
        return 0;
    end if;

    -- Empty: leave the row as it is (refilling it from the stored state later gives the same result).
    return (1 - v_tokens) / p_refill_per_second;
end
$$;

comment on function guestpass.take_rate_limit(text, integer, double precision) is
    'GuestPass internal: token bucket. Refills the bucket by (clock_timestamp() - updated_at) * p_refill_per_second '
    'up to p_capacity, then takes one token and returns 0, or, with less than one token, takes nothing and returns '
    'the seconds until a token is available (> 0). Race-free: the bucket row is locked until the transaction ends, '
    'and a rolled-back transaction gives its token back. Raises 22023 on invalid arguments.';

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

    select r.tokens, r.updated_at
    into v_tokens, v_updated_at
    from guestpass.rate_limits as r
    where r.bucket = p_bucket;
    if not found then
        return 0;
    end if;

    v_tokens := least(
        p_capacity::double precision,
        v_tokens
        + greatest(extract(epoch from clock_timestamp() - v_updated_at)::double precision, 0) * p_refill_per_second
    );
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

create or replace function guestpass.prune_rate_limits(p_idle interval)
returns bigint
language sql
volatile
security definer
set search_path = ''
as $$
    with pruned as (
        delete from guestpass.rate_limits as r
        where r.updated_at < clock_timestamp() - p_idle
        returning 1
    )
    select count(*) from pruned
$$;

comment on function guestpass.prune_rate_limits(interval) is
    'GuestPass internal: deletes buckets untouched for p_idle and returns how many. A missing row is a full bucket, '
    'so pass at least the longest configured capacity / refill rate (the time an empty bucket needs to refill).';

revoke execute on function
    guestpass.check_rate_limit_arguments(text, integer, double precision),
    guestpass.take_rate_limit(text, integer, double precision),
    guestpass.peek_rate_limit(text, integer, double precision),
    guestpass.prune_rate_limits(interval)
    from public;
