-- guest creation over RPC: public.create_guest_user takes the sign-up buckets (per client address, per app) before
-- it creates a guest, takes nothing for a device it already knows, is not limited for service_role, treats an IPv6
-- /64 as one client, and accepts only version 4 uuids. Limits come from the guestpass.signup_* session settings the
-- server sets at connect time (set local here); the client address from request.client_ip (the request framing).
begin;
select plan(17);

\ir lib/fixtures.sql
\ir lib/roles.sql

select from pg_temp.make_apps_xy();

set local guestpass.signup_ip_burst = 3;
set local guestpass.signup_ip_rate_per_hour = 1;

-- Runs create_guest_user as anon of app X from client address p_address; answers the SQLSTATE, or 'ok'.
create function pg_temp.create_guest(p_device uuid, p_address text, p_app uuid default '00000000-0000-4000-8000-0000000000f1')
returns text
language plpgsql
as $$
begin
    perform set_config('request.client_ip', p_address, true);
    perform pg_temp.as_anon(p_app);
    perform public.create_guest_user(p_device);
    reset role;
    return 'ok';
exception when others then
    reset role;
    return sqlstate;
end
$$;

select is(pg_temp.create_guest(gen_random_uuid(), '203.0.113.7'), 'ok', 'a first new guest from one address');
select is(pg_temp.create_guest(gen_random_uuid(), '203.0.113.7'), 'ok', 'a second');
select is(pg_temp.create_guest('6f1ed002-ab5d-4c94-a4d9-1c3b4a3a0b7e', '203.0.113.7'), 'ok', 'a third (burst 3)');
select is(pg_temp.create_guest(gen_random_uuid(), '203.0.113.7'), 'PT429', 'the fourth new guest is refused: PT429');
select is(
    (select count(*)::integer from public.users where app_id = '00000000-0000-4000-8000-0000000000f1'), 3,
    'and created nothing'
);
select is(
    pg_temp.create_guest('6f1ed002-ab5d-4c94-a4d9-1c3b4a3a0b7e', '203.0.113.7'), 'ok',
    'an existing device is still found from the exhausted address (it creates nothing, so it takes nothing)'
);

-- The refusal carries the wait, as sign-up's does.
select from set_config('request.client_ip', '203.0.113.7', true);
select from pg_temp.as_anon();
select throws_ok(
    'select public.create_guest_user(gen_random_uuid())', 'PT429', 'rate limit exceeded',
    'create_guest_user raises PT429 ''rate limit exceeded'''
);
reset role;

select is(pg_temp.create_guest(gen_random_uuid(), '198.51.100.1'), 'ok', 'another address has its own bucket');

-- IPv6: one /64 is one client.
select is(pg_temp.create_guest(gen_random_uuid(), '2001:db8:aa:bb::1'), 'ok', 'IPv6 host 1 of a /64');
select is(pg_temp.create_guest(gen_random_uuid(), '2001:db8:aa:bb::2'), 'ok', 'host 2 of the same /64');
select is(pg_temp.create_guest(gen_random_uuid(), '2001:db8:aa:bb:ffff:1:2:3'), 'ok', 'host 3 of the same /64');
select is(pg_temp.create_guest(gen_random_uuid(), '2001:db8:aa:bb::4'), 'PT429', 'host 4 of the /64 shares its bucket');
select is(pg_temp.create_guest(gen_random_uuid(), '2001:db8:aa:cc::1'), 'ok', 'the next /64 is another client');

-- The per-app bucket.
set local guestpass.signup_ip_burst = 1000;
set local guestpass.signup_app_burst = 2;
select is(
    array[pg_temp.create_guest(gen_random_uuid(), '192.0.2.1', '00000000-0000-4000-8000-0000000000f2'),
          pg_temp.create_guest(gen_random_uuid(), '192.0.2.2', '00000000-0000-4000-8000-0000000000f2'),
          pg_temp.create_guest(gen_random_uuid(), '192.0.2.3', '00000000-0000-4000-8000-0000000000f2')],
    array['ok', 'ok', 'PT429'],
    'the app''s bucket (burst 2) refuses the third guest from three addresses'
);

-- service_role (the app's backend) is not limited.
select from pg_temp.as_service_role('00000000-0000-4000-8000-0000000000f2');
select isnt(public.create_guest_user(gen_random_uuid()), null, 'service_role creates guests past the app''s bucket');
reset role;

-- Only random (version 4) uuids.
select is(
    pg_temp.create_guest('6f1ed002-ab5d-1c94-a4d9-1c3b4a3a0b7e', '198.51.100.9'), '22023', 'a version 1 uuid is 22023'
);
select is(
    pg_temp.create_guest('6f1ed002-ab5d-4c94-04d9-1c3b4a3a0b7e', '198.51.100.9'), '22023',
    'a version 4 uuid of another variant is 22023'
);

select * from finish();
rollback;
