-- rate limits: the token bucket (take one token or say how long to wait, refill with time up to capacity, no token
-- taken when refused) and the sign-up limits per IP and per app, refused with PT429 and the seconds to wait as
-- detail, writing nothing. Time is moved by setting updated_at back. Fixtures: apps X and Y.
begin;
select plan(43);

\ir lib/fixtures.sql
\ir lib/roles.sql
\ir lib/errors.sql

select from pg_temp.make_apps_xy();

-- The bucket itself (internal functions, called here as the owner): capacity 2, one token a minute.

select is(guestpass.take_rate_limit('test:a', 2, 1.0 / 60), 0::double precision, 'a new bucket starts full: token 1');
select is(guestpass.take_rate_limit('test:a', 2, 1.0 / 60), 0::double precision, 'token 2');
select ok(
    guestpass.take_rate_limit('test:a', 2, 1.0 / 60) between 59 and 60,
    'an empty bucket refuses and says a token comes in about 60 seconds'
);
select ok(
    (select tokens < 0.01 from guestpass.rate_limits where bucket = 'test:a'), 'a refusal takes no token'
);
select ok(
    guestpass.peek_rate_limit('test:a', 2, 1.0 / 60) between 59 and 60, 'peek gives the same answer'
);
select is(guestpass.take_rate_limit('test:b', 2, 1.0 / 60), 0::double precision, 'another bucket is independent');

update guestpass.rate_limits set updated_at = updated_at - interval '30 seconds' where bucket = 'test:a';
select ok(
    guestpass.take_rate_limit('test:a', 2, 1.0 / 60) between 29 and 30,
    'after 30 seconds half a token has refilled: 30 seconds to wait'
);
update guestpass.rate_limits set updated_at = updated_at - interval '30 seconds' where bucket = 'test:a';
select is(guestpass.peek_rate_limit('test:a', 2, 1.0 / 60), 0::double precision, 'after a minute peek sees a token');
select is(guestpass.take_rate_limit('test:a', 2, 1.0 / 60), 0::double precision, 'and take takes it');

update guestpass.rate_limits set updated_at = updated_at - interval '1 day' where bucket = 'test:a';
select is(
    array[guestpass.take_rate_limit('test:a', 2, 1.0 / 60) = 0, guestpass.take_rate_limit('test:a', 2, 1.0 / 60) = 0,
          guestpass.take_rate_limit('test:a', 2, 1.0 / 60) = 0],
    array[true, true, false],
    'a long pause refills up to the capacity only'
);
select is(guestpass.peek_rate_limit('test:never', 2, 1), 0::double precision, 'peek at an unknown bucket: full');
select is(
    (select count(*)::int from guestpass.rate_limits where bucket = 'test:never'), 0, 'and peek writes nothing'
);

select throws_ok(
    $$select guestpass.take_rate_limit('test:c', 0, 1)$$, '22023', 'rate limit capacity must be at least 1',
    'a capacity below 1 is refused'
);
select throws_ok(
    $$select guestpass.take_rate_limit('test:c', 2, 0)$$, '22023',
    'rate limit refill rate must be a positive finite number', 'a zero refill rate is refused'
);
select throws_ok(
    $$select guestpass.take_rate_limit('test:c', 2, 'NaN')$$, '22023',
    'rate limit refill rate must be a positive finite number', 'a NaN refill rate is refused'
);
select throws_ok(
    $$select guestpass.take_rate_limit('', 2, 1)$$, '22023', 'rate limit bucket must be a non-empty name',
    'an empty bucket name is refused'
);

update guestpass.rate_limits set updated_at = now() - interval '25 hours' where bucket = 'test:b';
select is(
    (select removed from guestpass.prune_batch('rate_limits', 100, false, array['public'])), 1,
    'guestpass prune deletes buckets idle over a day'
);

-- The sharded bucket (the per-app sign-up bucket, 0024): capacity 100 is 12 shards <bucket>:<k> of 9 or 8 tokens, each
-- refilled at a 12th of the rate (here one token a minute in all, so a shard gains one in 12 minutes).

select is(
    (select count(*)::int from generate_series(1, 100) where guestpass.sharded_rate_limit('test:s', 100, 1.0 / 60, true) = 0),
    100, 'a sharded bucket of 100 gives 100 tokens in a row'
);
select ok(
    guestpass.sharded_rate_limit('test:s', 100, 1.0 / 60, true) between 719 and 720,
    'the 101st is refused: 12 minutes until a shard holds a whole token again'
);
select results_eq(
    $$select count(*)::int, sum(round(tokens))::int from guestpass.rate_limits where bucket like 'test:s:%'$$,
    $$values (12, 0)$$,
    'the bucket is 12 rows, all empty'
);
select ok(
    guestpass.sharded_rate_limit('test:s', 100, 1.0 / 60, false) between 719 and 720, 'peek gives the same answer'
);
update guestpass.rate_limits set updated_at = updated_at - interval '12 minutes' where bucket like 'test:s:%';
select is(
    (select count(*)::int from generate_series(1, 13) where guestpass.sharded_rate_limit('test:s', 100, 1.0 / 60, false) = 0
       and guestpass.sharded_rate_limit('test:s', 100, 1.0 / 60, true) = 0),
    12, '12 minutes later each shard holds one token again: 12 takes, the 13th refused'
);
select is(
    guestpass.sharded_rate_limit('test:small', 15, 1, true), 0::double precision, 'capacity 15: a token taken'
);
select is(
    array(select bucket from guestpass.rate_limits where bucket like 'test:small%'), array['test:small:0'],
    'a capacity below 16 is one shard'
);
select throws_ok(
    $$select guestpass.sharded_rate_limit('test:s', 0, 1, true)$$, '22023', 'rate limit capacity must be at least 1',
    'the arguments are checked as for one bucket'
);

-- Sign-up per IP, as anon in app X: capacity 2, one token a minute.

select from pg_temp.as_anon();

select lives_ok(
    $$select guestpass_server.sign_up_guest(null, null, null, '192.0.2.1', 2, 1.0 / 60, null, null, null,
      gen_random_uuid(), encode(sha256('ip 1'), 'hex'))$$,
    'sign-up 1 from an IP'
);
select lives_ok(
    $$select guestpass_server.sign_up_guest(null, null, null, '192.0.2.1', 2, 1.0 / 60, null, null, null,
      gen_random_uuid(), encode(sha256('ip 2'), 'hex'))$$,
    'sign-up 2 from the IP'
);
select throws_ok(
    $$select guestpass_server.sign_up_guest(null, null, null, '192.0.2.1', 2, 1.0 / 60, null, null, null,
      gen_random_uuid(), encode(sha256('ip 3'), 'hex'))$$,
    'PT429', 'rate limit exceeded', 'sign-up 3 from the IP is refused with PT429'
);
select is(
    pg_temp.error_of(
        $$select guestpass_server.sign_up_guest(null, null, null, '192.0.2.1', 2, 1.0 / 60, null, null, null,
          gen_random_uuid(), encode(sha256('ip 4'), 'hex'))$$
    ),
    'PT429 60',
    'the refusal''s detail is the whole seconds to wait (rounded up)'
);
select lives_ok(
    $$select guestpass_server.sign_up_guest(null, null, null, '192.0.2.2', 2, 1.0 / 60, null, null, null,
      gen_random_uuid(), encode(sha256('ip 5'), 'hex'))$$,
    'another IP may still sign up'
);

-- Sign-up per app: capacity 1. A refusal by the app limit gives the IP's token back.

select lives_ok(
    $$select guestpass_server.sign_up_guest(null, null, null, '198.51.100.1', 5, 1, 1, 1.0 / 3600, null,
      gen_random_uuid(), encode(sha256('app 1'), 'hex'))$$,
    'sign-up 1 in the app'
);
select is(
    pg_temp.error_of(
        $$select guestpass_server.sign_up_guest(null, null, null, '198.51.100.2', 5, 1, 1, 1.0 / 3600, null,
          gen_random_uuid(), encode(sha256('app 2'), 'hex'))$$
    ),
    'PT429 3600',
    'sign-up 2 in the app, from another IP, is refused by the app limit'
);
select from pg_temp.as_anon('00000000-0000-4000-8000-0000000000f2');
select lives_ok(
    $$select guestpass_server.sign_up_guest(null, null, null, '198.51.100.2', 5, 1, 1, 1.0 / 3600, null,
      gen_random_uuid(), encode(sha256('app 3'), 'hex'))$$,
    'another app has its own limit'
);
reset role;

select results_eq(
    $$select bucket, round(tokens)::int from guestpass.rate_limits where bucket like 'signup:%' order by bucket$$,
    $$values ('signup:app:00000000-0000-4000-8000-0000000000f1:0', 0),
             ('signup:app:00000000-0000-4000-8000-0000000000f2:0', 0),
             ('signup:ip:192.0.2.1', 0),
             ('signup:ip:192.0.2.2', 1),
             ('signup:ip:198.51.100.1', 4),
             ('signup:ip:198.51.100.2', 4)$$,
    'each bucket holds what its successful sign-ups left; refused sign-ups took nothing'
);
select is(
    (select count(*)::int from guestpass.sessions), 5, 'only the five accepted sign-ups wrote a session'
);

-- A refused take locks nothing (0029): a caller taking from several buckets in turn holds only rows it took from.

select is(
    (select count(*)::int from generate_series(1, 3) where guestpass.take_rate_limit('test:nolock', 2, 1.0 / 3600) = 0),
    2,
    'capacity 2: two takes, the third refused'
);
select is(
    (select xmax::text from guestpass.rate_limits where bucket = 'test:nolock'),
    '0',
    'the refused take left the row unlocked (no xmax)'
);

-- The bucket name of a client: a dotted quad answers from a pattern (no cast, no subtransaction), the same as the cast.

select is(
    (select count(*)::int
     from (select (floor(random() * 256))::int || '.' || (floor(random() * 256))::int || '.'
                  || (floor(random() * 256))::int || '.' || (floor(random() * 256))::int as a
           from generate_series(1, 500)) as q
     where guestpass.client_address_key(q.a) is distinct from host(q.a::inet)),
    0,
    '500 random dotted quads: each is its own key, as host(inet) gives it'
);
select is(guestpass.client_address_key(' 203.0.113.9 '), '203.0.113.9', 'a dotted quad is trimmed');
select is(guestpass.client_address_key('010.0.0.1'), '10.0.0.1', 'a leading zero goes the cast''s way');
select is(
    array[guestpass.client_address_key('256.1.1.1'), guestpass.client_address_key('::ffff:10.0.0.1'),
          guestpass.client_address_key('2001:db8::1')],
    array['256.1.1.1', '10.0.0.1', '2001:db8::/64'],
    'no address, an IPv4-mapped address and an IPv6 address answer as before'
);

-- Sign-up finds the app's random shard empty and another one full: the exact way takes from the fullest, until the
-- bucket is empty. Capacity 32 is 4 shards of 8; shards 0-2 are drained (one token an hour each).

select from pg_temp.as_anon('00000000-0000-4000-8000-0000000000f2');
reset role;
insert into guestpass.rate_limits (bucket, tokens, updated_at)
select 'signup:app:00000000-0000-4000-8000-0000000000f2:' || k, 0, guestpass.clock() from generate_series(0, 2) as k
on conflict (bucket) do update set tokens = 0, updated_at = excluded.updated_at;
select from pg_temp.as_anon('00000000-0000-4000-8000-0000000000f2');
select is(
    (select count(*)::int from generate_series(1, 9) as i
     where pg_temp.error_of(format(
         $$select guestpass_server.sign_up_guest(null, null, null, '198.51.100.3', 100, 1, 32, 4.0 / 3600, null,
           gen_random_uuid(), encode(sha256('shard %s'), 'hex'))$$, i)) is null),
    8,
    'with one shard of four full, 8 sign-ups in a row succeed and the 9th is refused'
);
reset role;
select is(
    (select round(tokens)::int from guestpass.rate_limits
     where bucket = 'signup:app:00000000-0000-4000-8000-0000000000f2:3'),
    0,
    'they all took from the full shard'
);

select * from finish();
rollback;
