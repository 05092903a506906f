-- take a rate-limit token in one statement: sign-up spent three statements (insert, select for update, update) per bucket
-- Same semantics as 0008's version: a new bucket starts full; an existing one refills by elapsed time × rate, up to
-- its capacity, and gives a token when it holds at least one. INSERT … ON CONFLICT DO UPDATE locks the row and
-- re-reads its latest committed version, so concurrent takers of one bucket still queue and never overdraw it.
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
        set tokens = least(
                p_capacity::double precision,
                r.tokens + greatest(extract(epoch from v_now - r.updated_at)::double precision, 0) * p_refill_per_second
            ) - 1,
            updated_at = greatest(v_now, r.updated_at)
        where least(
                p_capacity::double precision,
                r.tokens + greatest(extract(epoch from v_now - r.updated_at)::double precision, 0) * p_refill_per_second
            ) >= 1;
    if found then
        return 0;
    end if;

    -- Empty: the row is unchanged; answer how long until it holds one token.
    select r.tokens, r.updated_at into v_tokens, v_updated_at from guestpass.rate_limits as r where r.bucket = p_bucket;
    v_tokens := least(
        p_capacity::double precision,
        v_tokens + greatest(extract(epoch from v_now - v_updated_at)::double precision, 0) * p_refill_per_second
    );
    return greatest((1 - v_tokens) / p_refill_per_second, 0.001);
end
$$;

comment on function guestpass.take_rate_limit(text, integer, double precision) is
    'Token bucket: takes one token from p_bucket (capacity p_capacity, refilled at p_refill_per_second) and returns 0, '
    'or returns the seconds until a token is available and takes nothing. One upsert; race-free.';
revoke execute on function guestpass.take_rate_limit(text, integer, double precision) from public;
