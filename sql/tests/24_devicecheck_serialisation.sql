-- DeviceCheck welcome grant across users of one app: the per-app lease lets one claim at a time ask Apple again and
-- set bit0 (others wait; an expired lease is free; finishing releases it), and a pending claim's repair that finds bit0
-- set is granted only when no other claim took the lease after it and wrote bit0 (or may have). Time moves with
-- guestpass.clock_override. Fixtures: app X (welcome 10) with users U1..U6; app Y with user Y1.
begin;
select plan(24);

\ir lib/fixtures.sql
\ir lib/at.sql
\ir lib/devicecheck.sql

select from pg_temp.make_apps_xy();
select from pg_temp.make_users(
    '00000000-0000-4000-8000-0000000000f1',
    array(select ('00000000-0000-4000-8000-0000000000d' || n)::uuid from generate_series(1, 6) as n)
);
select from pg_temp.make_user('00000000-0000-4000-8000-0000000000e1', '00000000-0000-4000-8000-0000000000f2');

-- As user …0000<p_user> of app X (or p_app) at p_at: begin_claim (lib/devicecheck.sql), the status; take_lease for
-- the claim remembered as p_claim, 'true' or 'false' (or the SQLSTATE); finish_claim with p_outcome, its p_column.
create function pg_temp.begin_claim(p_name text, p_user text, p_token text, p_at text)
returns text
language sql
as $$
    select pg_temp.at(('00000000-0000-4000-8000-0000000000' || p_user)::uuid, p_at,
                      format('select pg_temp.begin_claim(%L, %L)', p_name, p_token))
$$;

create function pg_temp.take_lease(
    p_user text, p_claim text, p_at text, p_seconds integer default 20,
    p_app uuid default '00000000-0000-4000-8000-0000000000f1'
)
returns text
language sql
as $$
    select pg_temp.at(('00000000-0000-4000-8000-0000000000' || p_user)::uuid, p_at,
                      format('select guestpass_server.devicecheck_take_lease(%L, %s)::text', pg_temp.claim(p_claim), p_seconds),
                      p_app)
$$;

create function pg_temp.finish_claim(p_user text, p_claim text, p_outcome text, p_at text, p_column text default 'granted')
returns text
language sql
as $$
    select pg_temp.at(('00000000-0000-4000-8000-0000000000' || p_user)::uuid, p_at,
                      format('select %I::text from pg_temp.finish_claim(%L, %L)', p_column, p_claim, p_outcome))
$$;

-- The lease: one claim of the app at a time.
select is(pg_temp.begin_claim('c1', 'd1', 'token-1', '2025-03-10 12:00:00+00'), 'started', 'U1 starts a claim');
select is(pg_temp.begin_claim('c2', 'd2', 'token-2', '2025-03-10 12:00:00+00'), 'started', 'U2 (same phone) starts one');
select is(pg_temp.take_lease('d1', 'c1', '2025-03-10 12:00:01+00'), 'true', 'U1 takes the app''s lease');
select is(pg_temp.take_lease('d2', 'c2', '2025-03-10 12:00:01+00'), 'false', 'U2 cannot take it while U1 holds it');
select is(
    pg_temp.take_lease('e1', 'c2', '2025-03-10 12:00:01+00', p_app => '00000000-0000-4000-8000-0000000000f2'),
    '42501', 'a user of another app cannot take app X''s lease'
);
select is(
    pg_temp.take_lease('d2', 'c1', '2025-03-10 12:00:02+00'),
    '42501', 'U2 cannot take the lease for U1''s claim'
);
select is(pg_temp.take_lease('d1', 'c1', '2025-03-10 12:00:02+00', 0), '22023', 'a lease of 0 s is 22023');
select is(
    pg_temp.finish_claim('d1', 'c1', 'granted', '2025-03-10 12:00:02+00'),
    'true', 'U1 sets bit0 under the lease and is granted'
);
select is((select count(*)::integer from guestpass.devicecheck_leases), 0, 'finishing released the lease');
select is(pg_temp.take_lease('d2', 'c2', '2025-03-10 12:00:03+00'), 'true', 'U2 takes the lease next');
select is(
    pg_temp.finish_claim('d2', 'c2', 'refused', '2025-03-10 12:00:03+00'),
    'false', 'U2 asks Apple again under the lease, finds bit0 set: refused'
);

-- An expired lease is free: a crashed holder delays the app's grants by its time to live only.
select is(pg_temp.begin_claim('c3', 'd3', 'token-3', '2025-03-10 13:00:00+00'), 'started', 'U3 starts a claim');
select is(pg_temp.begin_claim('c4', 'd4', 'token-4', '2025-03-10 13:00:00+00'), 'started', 'U4 starts a claim');
select is(
    pg_temp.take_lease('d3', 'c3', '2025-03-10 13:00:00+00'),
    'true', 'U3 takes the lease (and its server crashes with it)'
);
select is(pg_temp.take_lease('d4', 'c4', '2025-03-10 13:00:19+00'), 'false', 'U4 waits while the lease lives');
select is(pg_temp.take_lease('d4', 'c4', '2025-03-10 13:00:21+00'), 'true', 'U4 takes it once it expired');
-- U4 finds bit0 unset (U3's update never landed) and sets it.
select is(pg_temp.finish_claim('d4', 'c4', 'granted', '2025-03-10 13:00:22+00'), 'true', 'U4 is granted');

-- U3's pending claim, repaired later, finds bit0 set: but U4 took the lease after U3 and wrote bit0. Refused.
select is(pg_temp.begin_claim('c3-repair', 'd3', 'token-3b', '2025-03-10 13:05:00+00'), 'repair', 'U3 retries: repair');
select is(
    pg_temp.finish_claim('d3', 'c3', 'found_set_on_repair', '2025-03-10 13:05:01+00'),
    'false', 'U3''s repair finding bit0 set is refused: another install wrote bit0 after U3 took the lease'
);

-- U5's claim is left pending after taking the lease (crash after Apple's update); nobody took the lease after it.
select is(pg_temp.begin_claim('c5', 'd5', 'token-5', '2025-03-10 14:00:00+00'), 'started', 'U5 starts a claim');
select is(
    pg_temp.at('00000000-0000-4000-8000-0000000000d5', '2025-03-10 14:00:00+00',
               format($q$select guestpass_server.devicecheck_take_lease(%1$L, 20)::text
                         || (select granted::text from guestpass_server.devicecheck_finish(%1$L, 'pending'))$q$, pg_temp.claim('c5'))),
    'truefalse', 'U5 takes the lease, then its update''s fate is unknown: pending'
);

select is(pg_temp.begin_claim('c5-repair', 'd5', 'token-5b', '2025-03-10 14:01:00+00'), 'repair', 'U5 retries: repair');
select is(
    pg_temp.finish_claim('d5', 'c5', 'found_set_on_repair', '2025-03-10 14:01:01+00', 'credits_granted'),
    '10', 'U5''s repair finds bit0 set and nobody wrote after it: the bit is its own, granted'
);

select results_eq(
    $$select u.id::text, u.credits_balance, c.state, c.reason
      from guestpass.devicecheck_claims as c join public.users as u on u.id = c.user_id
      order by u.id$$,
    $$values ('00000000-0000-4000-8000-0000000000d1', 10, 'granted', 'bit0_unset'),
             ('00000000-0000-4000-8000-0000000000d2', 0, 'refused', 'bit0_already_set'),
             ('00000000-0000-4000-8000-0000000000d3', 0, 'refused', 'repair_unproven'),
             ('00000000-0000-4000-8000-0000000000d4', 10, 'granted', 'bit0_unset'),
             ('00000000-0000-4000-8000-0000000000d5', 10, 'granted', 'repaired')$$,
    'the claims end as they should: one grant per device'
);

select * from finish();
rollback;
