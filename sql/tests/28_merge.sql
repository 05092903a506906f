-- merge: guestpass_server.merge_guest moves a guest's rows (found from the catalog, an app table of its own here),
-- credits through the ledger and usage to the account, runs the app's public.guestpass_on_merge hook, deletes the
-- guest; a unique-key conflict rolls everything back; a spent, foreign or non-guest token changes nothing.
-- Fixtures: apps X and Y; in X, guest G (session 7a1) and account A (Apple, session 7b1).
begin;
select plan(16);

\ir lib/fixtures.sql
\ir lib/roles.sql
\ir lib/sign_up.sql

select from pg_temp.make_apps_xy();

select from pg_temp.as_anon();
select user_id as g_user from pg_temp.sign_up('device g', '203.0.113.7', '00000000-0000-4000-8000-0000000007a1', '7a1/0') \gset
select user_id as a_user from guestpass_server.sign_in_with_identity(
    'apple', 'apple-a', null, false, false, null, null, '00000000-0000-4000-8000-0000000007b1', encode(sha256('7b1/0'), 'hex')
) \gset
reset role;

-- An app table with one row per user, and a hook that records its calls.
create table public.merge_prefs (user_id uuid primary key references public.users (id) on delete cascade, theme text);
create table public.merge_hook_calls (p_from uuid, p_to uuid);
create function public.guestpass_on_merge(p_from uuid, p_to uuid) returns void language sql
    as $$ insert into public.merge_hook_calls values (p_from, p_to) $$;
insert into public.merge_prefs values (:'g_user', 'dark'), (:'a_user', 'light');
select from pg_temp.as_user(:'g_user', p_session => '00000000-0000-4000-8000-0000000007a1');
select from public.add_reading('palm');
reset role;
select guestpass.apply_credit_change(:'g_user', 4, 'test', null);
select guestpass.apply_credit_change(:'a_user', 3, 'test', null);

select from pg_temp.as_user(:'a_user', p_session => '00000000-0000-4000-8000-0000000007b1');
select throws_ok(
    format($$select * from guestpass_server.merge_guest('00000000-0000-4000-8000-0000000007a1', %L, '{public}')$$,
           encode(sha256('7a1/0'), 'hex')),
    '23505', null, 'both have a merge_prefs row: the unique key refuses the merge'
);
reset role;
select is((select count(*)::int from public.users where id = :'g_user'), 1, 'the guest is still there');
select is((select user_id from public.readings where kind = 'palm'), :'g_user'::uuid, 'with its reading');
select is((select credits_balance from public.users where id = :'a_user'), 3, 'and the account''s credits unchanged');

delete from public.merge_prefs where user_id = :'a_user';
select from pg_temp.as_user(:'a_user', p_session => '00000000-0000-4000-8000-0000000007b1');
select status as m_status, credits_moved as m_credits, credits_balance as m_balance, rows_moved as m_rows
from guestpass_server.merge_guest('00000000-0000-4000-8000-0000000007a1', encode(sha256('7a1/0'), 'hex'), '{public}') \gset
reset role;
select is(:'m_status'::text, 'merged', 'without the conflict the guest merges');
select is(:'m_credits'::int, 4, 'its 4 credits move');
select is(:'m_balance'::int, 7, 'the account now holds 7');
select is(
    (select sum(change)::int from guestpass.credit_ledger where user_id = :'a_user'), 7,
    'and its ledger sums to the balance'
);
select is(
    (select reason from guestpass.credit_ledger where user_id = :'a_user' order by id desc limit 1), 'merge_in',
    'through a merge_in row'
);
select is((select user_id from public.merge_prefs), :'a_user'::uuid, 'the app table''s row moved (found from the catalog)');
select is((:'m_rows'::jsonb) ->> 'public.merge_prefs', '1', 'and is counted');
select is((select user_id from public.readings where kind = 'palm'), :'a_user'::uuid, 'the reading moved');
select is(
    (select array[p_from, p_to] from public.merge_hook_calls), array[:'g_user'::uuid, :'a_user'::uuid],
    'the app''s hook ran once with (guest, account)'
);
select is((select count(*)::int from public.users where id = :'g_user'), 0, 'the guest is gone');
select is(
    (select count(*)::int from guestpass.sessions where id = '00000000-0000-4000-8000-0000000007a1'), 0,
    'with its session'
);

select from pg_temp.as_user(:'a_user', p_session => '00000000-0000-4000-8000-0000000007b1');
select is(
    (select status from guestpass_server.merge_guest('00000000-0000-4000-8000-0000000007a1', encode(sha256('7a1/0'), 'hex'), '{public}')),
    'refresh_token_not_found', 'merging it again finds nothing'
);
reset role;

select * from finish();
rollback;
