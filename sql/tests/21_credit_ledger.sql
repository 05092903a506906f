-- credit ledger: apply_credit_change writes the ledger row and the balance together (idempotency keys, no negative
-- balance, no zero change), the balance cannot move without its ledger row, grant_credits and set_premium work only
-- for service_role and only on users of its own app, grant_credits_admin (CLI) grants, and after a mix of grants and
-- consumes every user's balance equals the sum of its ledger and each row's balance_after is the running sum.
-- Fixtures: app X with users A, B; app Y with user C.
begin;
select plan(46);

\ir lib/fixtures.sql
\ir lib/roles.sql
\ir lib/catalog.sql

-- Structure.

select has_table('guestpass', 'credit_ledger', 'guestpass.credit_ledger exists');
select col_is_pk('guestpass', 'credit_ledger', 'id', 'ledger rows are keyed by id (their order)');
select col_is_unique(
    'guestpass', 'credit_ledger', array['user_id', 'idempotency_key'], 'an idempotency key is unique per user'
);
select fk_ok(
    'guestpass', 'credit_ledger', array['user_id', 'app_id'], 'public', 'users', array['id', 'app_id'],
    'a ledger row''s user is in the row''s app (composite foreign key)'
);
select is(
    pg_temp.fk_on_delete(
        array['guestpass.credit_ledger', 'guestpass.daily_usage', 'guestpass.consumptions']::regclass[]
    ),
    array[
        'consumptions_user_id_fkey on delete cascade',
        'credit_ledger_user_id_fkey on delete cascade',
        'daily_usage_user_id_fkey on delete cascade'
    ],
    'deleting a user deletes its ledger, usage and stored answers'
);
select is(
    pg_temp.policies_in('guestpass'),
    '{}'::text[],
    'no policy on any guestpass table (the ledger, usage and claims included)'
);

-- Fixtures, as the superuser.

select from pg_temp.make_apps_xy();
select from pg_temp.make_users_abc('{}');

-- apply_credit_change, called as the owner.

select is(
    guestpass.apply_credit_change('00000000-0000-4000-8000-00000000000a', 5, 'test', null), 5,
    'A: +5 returns the new balance 5'
);
select is(
    guestpass.apply_credit_change('00000000-0000-4000-8000-00000000000a', -2, 'test', null), 3, 'A: -2 returns 3'
);
select is(
    guestpass.apply_credit_change('00000000-0000-4000-8000-00000000000a', 4, 'test', 'k1'), 7, 'A: +4 with key k1: 7'
);
select is(
    guestpass.apply_credit_change('00000000-0000-4000-8000-00000000000a', 4, 'test', 'k1'), 7,
    'A: +4 with k1 again returns the earlier balance_after'
);
select is(
    guestpass.apply_credit_change('00000000-0000-4000-8000-00000000000b', 4, 'test', 'k1'), 4,
    'B may use the key k1 too (keys are per user)'
);
select throws_ok(
    $$select guestpass.apply_credit_change('00000000-0000-4000-8000-00000000000a', 5, 'test', 'k1')$$,
    '22023', 'idempotency key already used for another credit change', 'A: k1 with another change is 22023'
);
select throws_ok(
    $$select guestpass.apply_credit_change('00000000-0000-4000-8000-00000000000a', -8, 'test', null)$$,
    '22023', 'insufficient credits', 'A: a change below zero is 22023'
);
select throws_ok(
    $$select guestpass.apply_credit_change('00000000-0000-4000-8000-00000000000a', 0, 'test', null)$$,
    '22023', null, 'A: a zero change is 22023'
);
select throws_ok(
    $$select guestpass.apply_credit_change('00000000-0000-4000-8000-00000000000a', 1, null, null)$$,
    '22023', null, 'A: a change without a reason is 22023'
);
select throws_ok(
    $$select guestpass.apply_credit_change('00000000-0000-4000-8000-0000000000ff', 1, 'test', null)$$,
    '22023', 'unknown user', 'an unknown user is 22023'
);
select throws_ok(
    $$select guestpass.apply_credit_change('00000000-0000-4000-8000-00000000000a', 2147483647, 'test', null)$$,
    '22023', null, 'A: a balance above the integer range is 22023'
);
select results_eq(
    $$select change, balance_after, idempotency_key from guestpass.credit_ledger
      where user_id = '00000000-0000-4000-8000-00000000000a' order by id$$,
    $$values (5, 5, null::text), (-2, 3, null), (4, 7, 'k1')$$,
    'A: exactly one ledger row per applied change; refusals and repeats wrote none'
);
select is(
    (select credits_balance from public.users where id = '00000000-0000-4000-8000-00000000000a'), 7,
    'A: users.credits_balance is 7'
);

-- The balance cannot move without its ledger row, not even for the owner.

select throws_ok(
    $$update public.users set credits_balance = 100 where id = '00000000-0000-4000-8000-00000000000a'$$,
    '23514', 'credits_balance changes only with its ledger row', 'a bare balance update is refused (23514)'
);
select throws_ok(
    $$insert into public.users (app_id, credits_balance) values ('00000000-0000-4000-8000-0000000000f1', 5)$$,
    '23514', 'a new user starts with no credits', 'a new user with credits is refused (23514)'
);
select lives_ok(
    $$update public.users set credits_balance = 7 where id = '00000000-0000-4000-8000-00000000000a'$$,
    'writing the balance the ledger already says is allowed'
);

-- grant_credits and set_premium: service_role of the user's app only.

select from pg_temp.as_service_role();
select is(
    public.grant_credits('00000000-0000-4000-8000-00000000000b', 10) ->> 'credits_remaining', '14',
    'service role X grants B 10 credits and gets B''s quota back'
);
select is(
    public.grant_credits('00000000-0000-4000-8000-00000000000b', 3, 'purchase', 'order-1') ->> 'credits_remaining',
    '17', 'service role X grants B 3 credits with key order-1'
);
select is(
    public.grant_credits('00000000-0000-4000-8000-00000000000b', 3, 'purchase', 'order-1') ->> 'credits_remaining',
    '17', 'the retry with order-1 grants nothing more'
);
select throws_ok(
    $$select public.grant_credits('00000000-0000-4000-8000-00000000000c', 10)$$, '42501', null,
    'service role X cannot grant to C of app Y'
);
select throws_ok(
    $$select public.grant_credits(null, 10)$$, '42501', null, 'service role X: a null user is 42501'
);
select throws_ok(
    $$select public.grant_credits('00000000-0000-4000-8000-00000000000b', 0)$$, '22023', null, 'an amount of 0 is 22023'
);
select throws_ok(
    $$select public.grant_credits('00000000-0000-4000-8000-00000000000b', -5)$$, '22023', null,
    'a negative amount is 22023'
);
select throws_ok(
    $$select public.set_premium('00000000-0000-4000-8000-00000000000c', true)$$, '42501', null,
    'service role X cannot make C of app Y premium'
);
select throws_ok(
    $$select public.set_premium('00000000-0000-4000-8000-00000000000b', null)$$, '22023', null,
    'set_premium(null) is 22023'
);
select throws_ok(
    $$select guestpass.grant_credits_admin('00000000-0000-4000-8000-00000000000b', 1, 'x')$$, '42501', null,
    'service role cannot call grant_credits_admin'
);
reset role;

select from pg_temp.as_service_role('00000000-0000-4000-8000-0000000000f2');
select throws_ok(
    $$select public.grant_credits('00000000-0000-4000-8000-00000000000b', 10)$$, '42501',
    'the user is not a user of this app', 'service role Y cannot grant to B of app X'
);
reset role;

select from pg_temp.as_user('00000000-0000-4000-8000-00000000000b');
select throws_ok(
    $$select public.grant_credits('00000000-0000-4000-8000-00000000000b', 10)$$, '42501', null,
    'a user cannot grant itself credits'
);
select throws_ok(
    $$select public.set_premium('00000000-0000-4000-8000-00000000000b', true)$$, '42501', null,
    'a user cannot make itself premium'
);
select throws_ok(
    $$select guestpass.apply_credit_change('00000000-0000-4000-8000-00000000000b', 10, 'x', null)$$, '42501', null,
    'a user cannot call apply_credit_change'
);
reset role;
select results_eq(
    $$select change, reason, idempotency_key from guestpass.credit_ledger
      where user_id = '00000000-0000-4000-8000-00000000000b' order by id$$,
    $$values (4, 'test', 'k1'), (10, 'grant', null), (3, 'purchase', 'grant:order-1')$$,
    'B''s ledger: the grants, the idempotent one once, keyed grant:order-1'
);

-- grant_credits_admin (the CLI, as the owner).

select is(
    guestpass.grant_credits_admin('00000000-0000-4000-8000-00000000000c', 4, 'support'), 4,
    'grant_credits_admin gives C 4 credits'
);
select throws_ok(
    $$select guestpass.grant_credits_admin('00000000-0000-4000-8000-00000000000c', 0, 'support')$$, '22023', null,
    'grant_credits_admin refuses 0'
);

-- A mix of consumes and grants, then the invariants over every user.

select from pg_temp.as_user('00000000-0000-4000-8000-00000000000a');
select is(
    array(select public.consume_quota() ->> 'charged' from generate_series(1, 6)),
    array['free', 'free', 'free', 'credit', 'credit', 'credit'],
    'A: six consumes: three free, then three credits'
);
reset role;
select is(
    guestpass.grant_credits_admin('00000000-0000-4000-8000-00000000000a', 2, 'support'), 6,
    'A: +2 after the consumes gives 6'
);
set local role authenticated;
select is(public.consume_quota() ->> 'credits_remaining', '5', 'A: one more consume leaves 5');
reset role;

select is(
    array(
        select u.id::text || ' balance ' || u.credits_balance || ' ledger ' || coalesce(sum(l.change), 0)
        from public.users as u
        left join guestpass.credit_ledger as l on l.user_id = u.id
        group by u.id, u.credits_balance
        having u.credits_balance <> coalesce(sum(l.change), 0)
        order by 1
    ),
    '{}'::text[],
    'every user''s credits_balance equals the sum of its ledger changes'
);
select is(
    array(
        select l.id::text
        from (
            select id, balance_after, sum(change) over (partition by user_id order by id) as running
            from guestpass.credit_ledger
        ) as l
        where l.balance_after <> l.running
        order by 1
    ),
    '{}'::text[],
    'every ledger row''s balance_after is the running sum of its user''s changes'
);
select cmp_ok(
    (select count(*)::integer from guestpass.credit_ledger), '>=', 12, 'the invariants saw the whole history'
);

-- Deleting a user deletes its ledger.

delete from public.users where id = '00000000-0000-4000-8000-00000000000c';
select is(
    (select count(*)::integer from guestpass.credit_ledger where user_id = '00000000-0000-4000-8000-00000000000c'),
    0, 'deleting C deleted its ledger rows'
);

select * from finish();
rollback;
