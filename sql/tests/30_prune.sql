-- prune: guestpass.prune_batch removes guests idle past the app's guest_idle_days that hold nothing, and keeps those
-- with credits, premium, a partner, an app-table row, recent activity, or an account; removes sessions and refresh
-- tokens ended over a week ago, old idempotency records, idle rate-limit rows and spent codes; a dry run removes
-- nothing; batches are bounded. Rows are aged, not slept on. Fixtures: app X; users g1…g7 (numbered below).
begin;
select plan(16);

\ir lib/fixtures.sql

select from pg_temp.make_apps_xy();
-- g1 stale, nothing held → pruned. g2 stale with a reading. g3 stale with credits. g4 stale premium. g5 stale with a
-- partner (g6). g7 stale but its device was seen yesterday. a1 a stale account (not anonymous).
select from unnest(array['01', '02', '03', '04', '05', '06', '07', 'a1']) as n
cross join lateral pg_temp.make_user(('00000000-0000-4000-8000-0000000001' || n)::uuid, '00000000-0000-4000-8000-0000000000f1',
    p_updated_at => now() - interval '100 days');
update public.users set is_anonymous = false where id = '00000000-0000-4000-8000-0000000001a1';
select from unnest(array['01', '07']) as n
cross join lateral pg_temp.make_device(('00000000-0000-4000-8000-0000000002' || n)::uuid, ('00000000-0000-4000-8000-0000000001' || n)::uuid, 'd' || n);
update public.devices set last_seen_at = now() - interval '100 days' where id = '00000000-0000-4000-8000-000000000201';
update public.devices set last_seen_at = now() - interval '1 day' where id = '00000000-0000-4000-8000-000000000207';
insert into public.readings (app_id, user_id, kind) values ('00000000-0000-4000-8000-0000000000f1', '00000000-0000-4000-8000-000000000102', 'palm');
select guestpass.apply_credit_change('00000000-0000-4000-8000-000000000103', 1, 'test', null);
alter table public.users disable trigger users_set_updated_at;
update public.users set is_premium = true, updated_at = now() - interval '100 days' where id = '00000000-0000-4000-8000-000000000104';
update public.users set updated_at = now() - interval '100 days' where id = '00000000-0000-4000-8000-000000000103';
alter table public.users enable trigger users_set_updated_at;
insert into public.partners (app_id, user_id, partner_id) values
    ('00000000-0000-4000-8000-0000000000f1', '00000000-0000-4000-8000-000000000105', '00000000-0000-4000-8000-000000000106'),
    ('00000000-0000-4000-8000-0000000000f1', '00000000-0000-4000-8000-000000000106', '00000000-0000-4000-8000-000000000105');

-- Bookkeeping: a session of g7 ended 8 days ago with a rotated token, one ended yesterday; an old consumption; an idle
-- bucket and a fresh one; a used code.
insert into guestpass.sessions (id, app_id, user_id, created_at, revoked_at) values
    ('00000000-0000-4000-8000-000000000301', '00000000-0000-4000-8000-0000000000f1', '00000000-0000-4000-8000-000000000107', now() - interval '9 days', now() - interval '8 days'),
    ('00000000-0000-4000-8000-000000000302', '00000000-0000-4000-8000-0000000000f1', '00000000-0000-4000-8000-000000000107', now() - interval '2 days', now() - interval '1 day');
insert into guestpass.refresh_tokens (session_id, counter, token_hash, revoked_at) values
    ('00000000-0000-4000-8000-000000000302', 0, encode(sha256('t0'), 'hex'), now() - interval '8 days'),
    ('00000000-0000-4000-8000-000000000302', 1, encode(sha256('t1'), 'hex'), null);
insert into guestpass.consumptions (user_id, request_id, result, created_at) values
    ('00000000-0000-4000-8000-000000000107', 'old', '{}', now() - interval '3 days'),
    ('00000000-0000-4000-8000-000000000107', 'new', '{}', now());
insert into guestpass.rate_limits (bucket, tokens, updated_at) values ('test:idle', 1, now() - interval '2 days'), ('test:fresh', 1, now());
insert into guestpass.account_codes (app_id, user_id, kind, code_hash, used_at) values
    ('00000000-0000-4000-8000-0000000000f1', '00000000-0000-4000-8000-000000000107', 'transfer', encode(sha256('c'), 'hex'), now() - interval '2 days');

select is((select removed from guestpass.prune_batch('guests', 100, true, '{public}')), 1, 'a dry run counts one stale guest that holds nothing');
select is((select count(*)::int from public.users where app_id = '00000000-0000-4000-8000-0000000000f1'), 8, 'and removes nothing');
select is((select removed from guestpass.prune_batch('guests', 100, false, '{public}')), 1, 'the prune removes it');
select is(
    (select array_agg(right(id::text, 2) order by id) from public.users where app_id = '00000000-0000-4000-8000-0000000000f1'),
    array['02', '03', '04', '05', '06', '07', 'a1'],
    'kept: a reading, credits, premium, partners (both), a device seen yesterday, an account'
);
select is((select count(*)::int from public.devices where id = '00000000-0000-4000-8000-000000000201'), 0, 'the pruned guest''s device went with it');
select is((select removed from guestpass.prune_batch('guests', 100, false, '{public}')), 0, 'a second run finds nothing');

select is((select removed from guestpass.prune_batch('sessions', 100, false, '{public}')), 1, 'one session ended over a week ago');
select is(
    (select array_agg(right(id::text, 3)) from guestpass.sessions where user_id = '00000000-0000-4000-8000-000000000107'),
    array['302'], 'the one ended yesterday stays'
);
select is((select removed from guestpass.prune_batch('refresh_tokens', 100, false, '{public}')), 1, 'one token rotated away over a week ago');
select is((select count(*)::int from guestpass.refresh_tokens where session_id = '00000000-0000-4000-8000-000000000302'), 1, 'the live one stays');
select is((select removed from guestpass.prune_batch('idempotency_records', 100, false, '{public}')), 1, 'one idempotency record over 2 days old');
select is((select request_id from guestpass.consumptions where user_id = '00000000-0000-4000-8000-000000000107'), 'new', 'the new one stays');
select is((select removed from guestpass.prune_batch('rate_limits', 100, false, '{public}')), 1, 'one idle rate-limit row');
select is((select removed from guestpass.prune_batch('account_codes', 100, false, '{public}')), 1, 'one spent code');

-- Batches are bounded.
insert into public.users (id, app_id, updated_at)
select gen_random_uuid(), '00000000-0000-4000-8000-0000000000f2', now() - interval '100 days' from generate_series(1, 5);
-- The command's loop: batches of 2, each after the last candidate, until one says there is no more.
create function pg_temp.prune_all(p_kind text, p_limit integer) returns integer language plpgsql as $$
declare
    v_total integer := 0;
    v_after uuid;
    v_batch record;
begin
    loop
        select * into v_batch from guestpass.prune_batch(p_kind, p_limit, false, '{public}', v_after);
        v_total := v_total + v_batch.removed;
        exit when not v_batch.more;
        v_after := v_batch.next_after;
    end loop;
    return v_total;
end
$$;
select is(pg_temp.prune_all('guests', 2), 5, 'batches of 2, each after the last, remove the 5 stale guests of app Y past the kept one of app X');
select throws_ok($$select (select removed from guestpass.prune_batch('everything', 2, false, '{public}'))$$, '22023', null, 'an unknown kind is refused');

select * from finish();
rollback;
