-- share codes and partners: codes are unique per app and free of look-alikes (10,000 of them), a drawn code another
-- user holds is drawn again (a forced collision), the retry is bounded; pairing by code links both ways, refuses
-- yourself, twice and the partner limit, answers wrong and unknown codes alike and is rate-limited per user; bouquets
-- (the Flowers example) are seen by their sender and recipient only and sent only to partners; auth.is_partner stays
-- inlinable. Fixtures: apps X and Y; users A, B, C in X.
begin;
select plan(25);

\ir lib/fixtures.sql
\ir lib/roles.sql
\ir lib/errors.sql

select from pg_temp.make_apps_xy();
select from pg_temp.make_users('00000000-0000-4000-8000-0000000000f1',
    array['00000000-0000-4000-8000-00000000000a', '00000000-0000-4000-8000-00000000000b',
          '00000000-0000-4000-8000-00000000000c']::uuid[]);

-- 1. 10,000 codes in one app.

insert into public.users (id, app_id)
select gen_random_uuid(), '00000000-0000-4000-8000-0000000000f2' from generate_series(1, 10000);
select is(
    (select count(distinct guestpass.assign_share_code(u.id, u.app_id, false))::int
     from public.users as u where u.app_id = '00000000-0000-4000-8000-0000000000f2'),
    10000, '10,000 users of one app get 10,000 distinct codes'
);
select is(
    (select count(*)::int from guestpass.share_codes
     where app_id = '00000000-0000-4000-8000-0000000000f2' and code ~ '[01OIL]'),
    0, 'none holds 0, 1, O, I or L'
);
select is(
    (select count(*)::int from guestpass.share_codes
     where app_id = '00000000-0000-4000-8000-0000000000f2' and code !~ '^[2-9A-HJKMNP-Z]{6}$'),
    0, 'all are 6 characters of the look-alike-free alphabet'
);
update guestpass.apps set share_code_length = 4, share_code_digits_only = true where id = '00000000-0000-4000-8000-0000000000f1';
select matches(guestpass.assign_share_code('00000000-0000-4000-8000-00000000000c', '00000000-0000-4000-8000-0000000000f1', false),
    '^[0-9]{4}$', 'an app may choose 4 digits for a keypad');
update guestpass.apps set share_code_length = 6, share_code_digits_only = false where id = '00000000-0000-4000-8000-0000000000f1';

-- 2. A forced collision: the generator is replaced (in this transaction) by one that first draws B's code.

select from pg_temp.as_user('00000000-0000-4000-8000-00000000000b');
select public.get_share_code() as b_code \gset
reset role;
select pg_get_functiondef('guestpass.new_share_code(integer, boolean)'::regprocedure) as real_generator \gset
create temporary table draws (n serial, code text);
insert into draws (code) values (:'b_code'), (:'b_code'), ('ZZZZZZ');
create or replace function guestpass.new_share_code(p_length integer, p_digits_only boolean) returns text
    language sql volatile
    as $$ delete from draws where n = (select min(n) from draws) returning code $$;
select from pg_temp.as_user('00000000-0000-4000-8000-00000000000a');
select is(public.get_share_code(), 'ZZZZZZ', 'two draws collide with B''s code; the third, free, is A''s');
reset role;
delete from draws;
insert into draws (code) select :'b_code' from generate_series(1, 10);
select from pg_temp.as_user('00000000-0000-4000-8000-00000000000a');
select throws_ok($$select public.rotate_share_code()$$, 'PT503', 'no free share code found; try again',
    'ten collisions in a row: a clear error, not a loop');
select is(public.get_share_code(), 'ZZZZZZ', 'and A keeps its code');
reset role;
:real_generator;
select isnt(guestpass.new_share_code(6, false), 'ZZZZZZ', 'the real generator is back');

-- 3. Pairing.

select from pg_temp.as_user('00000000-0000-4000-8000-00000000000b');
select is(public.pair_with_code(:'b_code'), '{"paired": false, "reason": "own_code"}', 'pairing with your own code is refused');
select is(public.pair_with_code('ZZZZZY'), '{"paired": false, "reason": "no_such_code"}', 'an unknown code: no_such_code');
select is(public.pair_with_code('not a code at all'), '{"paired": false, "reason": "no_such_code"}', 'a malformed one: the same');
reset role;
select from pg_temp.as_user('00000000-0000-4000-8000-00000000000a');
select is(
    (public.pair_with_code(lower(' ' || :'b_code' || ' ')) ->> 'partner_id')::uuid, '00000000-0000-4000-8000-00000000000b'::uuid,
    'A pairs with B''s code (case and spaces ignored)'
);
select ok(auth.is_partner('00000000-0000-4000-8000-00000000000b'), 'B is A''s partner');
select is(public.pair_with_code(:'b_code') ->> 'reason', 'already_partners', 'twice is refused');
reset role;
select from pg_temp.as_user('00000000-0000-4000-8000-00000000000b');
select ok(auth.is_partner('00000000-0000-4000-8000-00000000000a'), 'A is B''s partner: both see it');
select is((select count(*)::int from public.list_partners()), 1, 'B lists one partner');
reset role;
select from pg_temp.as_user('00000000-0000-4000-8000-00000000000c');
select ok(not auth.is_partner('00000000-0000-4000-8000-00000000000a'), 'C is nobody''s partner');
select is(public.pair_with_code(:'b_code') ->> 'reason', 'partner_limit', 'B is at the partner limit (1): C cannot pair with it');
select is((select count(*)::int from public.partners), 0, 'C reads no pairing rows');

-- 4. Bouquets.

select throws_ok(
    $$select public.send_bouquet('00000000-0000-4000-8000-00000000000a', 'rose')$$, '42501', null,
    'C cannot send A a bouquet: not a partner'
);
reset role;
select from pg_temp.as_user('00000000-0000-4000-8000-00000000000a');
select from public.send_bouquet('00000000-0000-4000-8000-00000000000b', 'tulip', 'hi');
select is(public.bouquet_streak('00000000-0000-4000-8000-00000000000b'), 1, 'one day of bouquets: a streak of 1');
reset role;
select from pg_temp.as_user('00000000-0000-4000-8000-00000000000b');
select is((select flower from public.list_bouquets()), 'tulip', 'B sees the bouquet it received');
reset role;
select from pg_temp.as_user('00000000-0000-4000-8000-00000000000c');
select is((select count(*)::int from public.list_bouquets()), 0, 'C sees none');
reset role;

-- 5. Brute force: the caller's bucket (10) runs dry, found or not.

select from pg_temp.as_user('00000000-0000-4000-8000-00000000000c');
-- No code at all is a bad request (0046), before any token is taken: the count below stays 11.
select throws_ok('select public.pair_with_code(null)', '22023', 'p_code is required', 'a null code is 22023, no try');
select is(
    (select count(*)::int from generate_series(1, 20) as i
     where pg_temp.error_of(format('select public.pair_with_code(%L)', 'GUESS' || i)) like 'PT429%'),
    11, 'after 10 tries in all (1 above, 9 here) every guess is refused with PT429'
);
reset role;

select * from finish();
rollback;
