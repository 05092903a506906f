-- an app's backend reads and spends its users' quota (0047): get_quota/consume_quota as service_role with p_user_id
-- of a user of its app act as the user's own calls (order, idempotency in the user's namespace, PT429 with detail and
-- hint, ledger rows); another app's user and an unknown id are one refusal (PT404 'unknown user', byte for byte, and
-- nothing charged); no p_user_id is 22023; a signed-in user still may pass only itself; anon still 42501.
-- Fixtures: app X (allowance 3) with users A and B, app Y with user C; the clock fixed at 2025-03-10 12:00 UTC.
begin;
select plan(20);

\ir lib/fixtures.sql
\ir lib/roles.sql
\ir lib/errors.sql

select from pg_temp.make_apps_xy();
select from pg_temp.make_users_abc('{}');
select is(
    guestpass.grant_credits_admin('00000000-0000-4000-8000-00000000000a', 1, null), 1,
    'grant_credits_admin gives A 1 credit'
);
set local guestpass.clock_override = '2025-03-10 12:00:00+00';

-- The backend of app X acts for A.

select from pg_temp.as_service_role();
select is(
    public.get_quota('00000000-0000-4000-8000-00000000000a'),
    '{"quota_remaining": 3, "daily_limit": 3, "credits_remaining": 1, "is_premium": false,
      "resets_at": "2025-03-11T00:00:00Z"}'::jsonb,
    'backend X: get_quota(A) is A''s quota'
);
select is(
    public.consume_quota('00000000-0000-4000-8000-00000000000a', 'job-1') - 'resets_at',
    '{"quota_remaining": 2, "daily_limit": 3, "credits_remaining": 1, "is_premium": false, "charged": "free"}'::jsonb,
    'backend X: consume_quota(A, job-1) takes a free use'
);
select is(
    public.consume_quota('00000000-0000-4000-8000-00000000000a', 'job-1') - 'resets_at',
    '{"quota_remaining": 2, "daily_limit": 3, "credits_remaining": 1, "is_premium": false, "charged": "free"}'::jsonb,
    'backend X: a retried job-1 returns the first answer'
);
select is(
    public.get_quota('00000000-0000-4000-8000-00000000000a') ->> 'quota_remaining', '2',
    'backend X: the retry charged nothing'
);
reset role;

-- The request id is the user's: A's own retry of job-1 is the same consume.
select from pg_temp.as_user('00000000-0000-4000-8000-00000000000a');
select is(
    public.consume_quota(null, 'job-1') ->> 'quota_remaining', '2',
    'A: job-1 sent by A itself returns the backend''s first answer, uncharged'
);
reset role;

select from pg_temp.as_service_role();
select is(
    array(
        select public.consume_quota('00000000-0000-4000-8000-00000000000a', 'job-' || i) ->> 'charged'
        from generate_series(2, 4) as i
    ),
    array['free', 'free', 'credit'],
    'backend X: the next consumes take the two free uses left, then the credit'
);
select is(
    pg_temp.error_fields($$select public.consume_quota('00000000-0000-4000-8000-00000000000a', 'job-5')$$),
    array['PT429', 'quota exceeded', '43200', 'resets_at=2025-03-11T00:00:00Z'],
    'backend X: then PT429 ''quota exceeded'' with the seconds to the reset and resets_at, as for A itself'
);

-- Another app's user and an unknown id: one answer, nothing charged.
select is(
    pg_temp.error_fields($$select public.get_quota('00000000-0000-4000-8000-00000000000c')$$),
    array['PT404', 'unknown user', '', ''],
    'backend X: get_quota of app Y''s user C is PT404 ''unknown user'''
);
select is(
    pg_temp.error_fields($$select public.consume_quota('00000000-0000-4000-8000-00000000000c', 'job-c')$$),
    array['PT404', 'unknown user', '', ''],
    'backend X: consume_quota of app Y''s user C is PT404 ''unknown user'''
);
select is(
    pg_temp.error_fields($$select public.consume_quota('00000000-0000-4000-8000-0000000000c9')$$),
    pg_temp.error_fields($$select public.consume_quota('00000000-0000-4000-8000-00000000000c')$$),
    'backend X: an id no one has gets the very answer another app''s user gets'
);
select is(
    pg_temp.error_fields($$select public.get_quota('00000000-0000-4000-8000-0000000000c9')$$),
    pg_temp.error_fields($$select public.get_quota('00000000-0000-4000-8000-00000000000c')$$),
    'backend X: get_quota too'
);
select throws_ok(
    'select public.get_quota()', '22023', 'p_user_id is required with the secret key',
    'backend X: get_quota without p_user_id is 22023'
);
reset role;

select from pg_temp.as_service_role(null);
select throws_ok(
    $$select public.get_quota('00000000-0000-4000-8000-00000000000a')$$, '42501', 'no app in the request claims',
    'service_role without an app claim is refused'
);
reset role;

select is(
    (select count(*)::integer from guestpass.daily_usage where user_id = '00000000-0000-4000-8000-00000000000c'),
    0, 'C was not charged'
);
select results_eq(
    $$select change, reason, balance_after, idempotency_key from guestpass.credit_ledger
      where user_id = '00000000-0000-4000-8000-00000000000a' order by id$$,
    $$values (1, 'admin', 1, null::text), (-1, 'consume', 0, 'consume:job-4')$$,
    'A: the backend''s credit consume is a ledger row keyed by its request id'
);
select results_eq(
    $$select free_used, credit_used from guestpass.daily_usage where user_id = '00000000-0000-4000-8000-00000000000a'$$,
    $$values (3, 1)$$,
    'A: the day counts 3 free and 1 credit consume'
);

-- A signed-in user still may pass only itself; anon no one.
select from pg_temp.as_user('00000000-0000-4000-8000-00000000000b');
select throws_ok(
    $$select public.get_quota('00000000-0000-4000-8000-00000000000a')$$, '42501', 'p_user_id must be the caller',
    'B cannot read A''s quota'
);
select throws_ok(
    $$select public.consume_quota('00000000-0000-4000-8000-00000000000a')$$, '42501', 'p_user_id must be the caller',
    'B cannot spend A''s quota'
);
reset role;
select from pg_temp.as_anon();
select throws_ok(
    $$select public.consume_quota('00000000-0000-4000-8000-00000000000a')$$, '42501', null,
    'anon cannot spend A''s quota (no grant)'
);
reset role;

select * from finish();
rollback;
