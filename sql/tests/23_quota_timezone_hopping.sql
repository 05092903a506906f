-- quota days and timezone changes: a change takes effect from the next local day, so hopping timezones never adds a
-- free use the same day. The clock is moved with guestpass.clock_override. Fixtures: app X (allowance 3), users H
-- (the hopper, UTC) and S (a stayer in UTC, for comparison); the free allowance is counted with get_quota/consume.
begin;
select plan(16);

\ir lib/fixtures.sql
\ir lib/at.sql

select from pg_temp.make_app('00000000-0000-4000-8000-0000000000f1', 'App X');
select from pg_temp.make_users(
    '00000000-0000-4000-8000-0000000000f1',
    array['00000000-0000-4000-8000-0000000000d1', '00000000-0000-4000-8000-0000000000d2']::uuid[], 'UTC'
);

-- Consumes until refused; answers how many were free.
create function pg_temp.free_uses(p_user uuid, p_at text)
returns integer
language plpgsql
as $$
declare
    v_free integer := 0;
    v text;
begin
    loop
        v := pg_temp.at(p_user, p_at, 'select public.consume_quota() ->> ''charged''');
        exit when v is distinct from 'free';
        v_free := v_free + 1;
    end loop;
    return v_free;
end
$$;

-- H's answer to p_sql at p_at; H moving to p_zone at p_at, p_field of set_timezone's answer.
create function pg_temp.h_at(p_at text, p_sql text)
returns text
language sql
as $$ select pg_temp.at('00000000-0000-4000-8000-0000000000d1', p_at, p_sql) $$;

create function pg_temp.h_moves(p_zone text, p_at text, p_field text)
returns text
language sql
as $$ select pg_temp.h_at(p_at, format('select public.set_timezone(%L) ->> %L', p_zone, p_field)) $$;

-- The issue's attack: three uses in UTC, then Pacific/Kiritimati (UTC+14, already tomorrow there).
select is(pg_temp.free_uses('00000000-0000-4000-8000-0000000000d1', '2025-03-10 12:00:00+00'), 3, 'H: 3 free uses in UTC');
select is(
    pg_temp.h_moves('Pacific/Kiritimati', '2025-03-10 12:05:00+00', 'quota_remaining'),
    '0', 'H moves to Kiritimati (02:05 tomorrow there): still 0 free left today'
);
select is(
    pg_temp.h_at('2025-03-10 12:10:00+00', 'select public.consume_quota()::text'),
    'PT429', 'H: the next consume is refused (429)'
);
select is(
    pg_temp.h_at('2025-03-10 12:10:00+00', 'select public.get_quota() ->> ''resets_at'''),
    '2025-03-11T00:00:00Z', 'H: the day still ends at the UTC midnight it started with'
);
select is(
    pg_temp.h_moves('Pacific/Pago_Pago', '2025-03-10 13:00:00+00', 'quota_remaining'),
    '0', 'H moves on to Pago Pago (UTC-11): still 0'
);
select is(pg_temp.h_moves('UTC', '2025-03-10 13:00:00+00', 'quota_remaining'), '0', 'and back to UTC: still 0');
select is(pg_temp.free_uses('00000000-0000-4000-8000-0000000000d1', '2025-03-10 23:59:59+00'), 0, 'H: nothing free until the day ends');

-- A move west: the day lasts until the new timezone's date passes it.
select is(
    pg_temp.h_moves('Pacific/Pago_Pago', '2025-03-10 23:00:00+00', 'resets_at'),
    '2025-03-11T00:00:00Z', 'H moves west before midnight: today still ends at 00:00 UTC'
);
select is(
    pg_temp.h_at('2025-03-11 00:30:00+00', 'select public.consume_quota()::text'),
    'PT429', 'H at 00:30 UTC is still on the 10th in Pago Pago (13:30): no new day yet'
);
select is(
    pg_temp.h_at('2025-03-11 00:30:00+00', 'select public.get_quota() ->> ''resets_at'''),
    '2025-03-11T11:00:00Z', 'H: the day now ends at Pago Pago''s midnight (11:00 UTC)'
);
select is(pg_temp.free_uses('00000000-0000-4000-8000-0000000000d1', '2025-03-11 11:00:01+00'), 3, 'H: 3 free after it');

-- A move east takes effect at the end of the current day, never before.
select is(
    pg_temp.h_moves('Pacific/Kiritimati', '2025-03-11 11:30:00+00', 'resets_at'),
    '2025-03-12T11:00:00Z', 'H moves east (Kiritimati is already on the 12th): the day still ends at 11:00 UTC on the 12th'
);
select is(pg_temp.free_uses('00000000-0000-4000-8000-0000000000d1', '2025-03-12 10:59:59+00'), 0, 'H: nothing more that day');
select is(pg_temp.free_uses('00000000-0000-4000-8000-0000000000d1', '2025-03-12 11:00:01+00'), 3, 'H: then a Kiritimati day');

-- An attacker hopping every half hour through the zones furthest apart, for three days, against a stayer in UTC:
-- the hopper gets at most one day more (the one shorter day of a trip east), never one more per hop or per day.
create function pg_temp.hop_for(p_user uuid, p_start timestamptz, p_hours integer, p_hop boolean)
returns integer
language plpgsql
as $$
declare
    v_zones text[] := array['Pacific/Kiritimati', 'Pacific/Pago_Pago', 'Etc/GMT+12', 'Asia/Kolkata', 'UTC'];
    v_total integer := 0;
    v_step integer;
    v_at timestamptz;
begin
    for v_step in 0 .. p_hours * 2 - 1 loop
        v_at := p_start + v_step * interval '30 minutes';
        if p_hop then
            perform pg_temp.at(p_user, v_at::text,
                               format('select public.set_timezone(%L)::text', v_zones[1 + v_step % array_length(v_zones, 1)]));
        end if;
        v_total := v_total + pg_temp.free_uses(p_user, v_at::text);
    end loop;
    return v_total;
end
$$;

select is(
    pg_temp.hop_for('00000000-0000-4000-8000-0000000000d2', '2025-04-01 00:00:00+00', 72, false), 9,
    'S, staying in UTC, gets 9 free uses in 72 hours'
);
select cmp_ok(
    pg_temp.hop_for('00000000-0000-4000-8000-0000000000d1', '2025-04-01 00:00:00+00', 72, true), '<=', 12,
    'H, hopping across five zones every 30 minutes for 72 hours, gets at most one day (3) more'
);

select * from finish();
rollback;
