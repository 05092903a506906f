-- guestpass.quota_day becomes one SQL query that PostgreSQL inlines into its callers' queries
-- consume_quota (through guestpass.consume_at) and get_quota (through guestpass.quota_state) read the user's quota day
-- with guestpass.quota_day, a PL/pgSQL function: a call, a nested executor and a query of its own each time. Its
-- decision is one expression over the user's latest daily_usage row, so it is now a SQL function returning its one
-- row as a table: not STRICT, not VOLATILE, no SET clause and no SECURITY DEFINER, so the planner inlines it where it
-- is used in FROM (consume_at's `select … from guestpass.quota_day(…)`, quota_state's `cross join lateral`), and the
-- day is read by the caller's own statement. The rule is unchanged (23_quota_timezone_hopping and 25_one_clock check
-- it, 26_inlining checks the inlining). It still reads the row after consume_at has locked the user, in a statement of
-- its own: a consume never decides on a day read before the lock.

drop function guestpass.quota_day(uuid, text, timestamptz);

create function guestpass.quota_day(p_user uuid, p_timezone text, p_at timestamptz)
    returns table (day date, resets_at timestamptz, free_used integer)
    language sql
    stable
    as $$
    select case when c.is_current then l.day else t.local_day end,
           case when not c.is_current then guestpass.quota_resets_at(p_timezone, p_at)
                when p_at < l.resets_at then l.resets_at
                else pg_catalog.timezone(p_timezone, (l.day + 1)::timestamp) end,
           case when c.is_current then l.free_used else 0 end
    from (select pg_catalog.timezone(p_timezone, p_at)::date as local_day) as t
    left join lateral (
        select d.day, d.resets_at, d.free_used
        from guestpass.daily_usage as d
        where d.user_id = p_user
        order by d.day desc
        limit 1
    ) as l on true
    -- The latest day has not ended (or the local date is not past it, after a move west): it is still the current one.
    cross join lateral (
        select coalesce(p_at < l.resets_at or t.local_day <= l.day, false) as is_current
    ) as c
$$;

revoke all on function guestpass.quota_day(uuid, text, timestamptz) from public;

comment on function guestpass.quota_day(uuid, text, timestamptz) is
    'GuestPass internal: the quota day user p_user is in at p_at (one row), with p_timezone the user''s timezone now: '
    'the latest daily_usage row while it has not ended (p_at < resets_at) or while the local date is not past it '
    '(after a move west; resets_at is then the local midnight after that date), else a new day keyed by the local '
    'date that ends at the next local midnight (free_used 0). So a timezone change takes effect from the next day. '
    'Inlinable where used in FROM: one SQL query, STABLE, no SET clause.';
