-- constraints: what the core tables refuse whoever writes to them (device secrets unique per app, a device always in
-- its user's app, only hashes stored, email unique per app), and that deleting an app removes everything it owns.
begin;
select plan(11);

\ir lib/fixtures.sql

select from pg_temp.make_apps_xy();
select from pg_temp.make_user(
    '00000000-0000-4000-8000-00000000000a', '00000000-0000-4000-8000-0000000000f1', p_email => 'a@example.com'
);
select from pg_temp.make_user('00000000-0000-4000-8000-00000000000c', '00000000-0000-4000-8000-0000000000f2');
select from pg_temp.make_device(gen_random_uuid(), '00000000-0000-4000-8000-00000000000a', 'secret');
insert into guestpass.api_keys (app_id, kind, key_hash, key_prefix) values
    ('00000000-0000-4000-8000-0000000000f1', 'publishable', encode(sha256('gp_pub_x'), 'hex'), 'gp_pub_');

select throws_ok(
    $$insert into public.devices (app_id, user_id, secret_hash) values ('00000000-0000-4000-8000-0000000000f1',
      '00000000-0000-4000-8000-00000000000a', encode(sha256('secret'), 'hex'))$$,
    '23505', null, 'a device secret is unique per app (devices_app_secret_key)'
);
select lives_ok(
    $$insert into public.devices (app_id, user_id, secret_hash) values ('00000000-0000-4000-8000-0000000000f2',
      '00000000-0000-4000-8000-00000000000c', encode(sha256('secret'), 'hex'))$$,
    'the same device secret may exist in another app'
);
select throws_ok(
    $$insert into public.devices (app_id, user_id, secret_hash) values ('00000000-0000-4000-8000-0000000000f2',
      '00000000-0000-4000-8000-00000000000a', encode(sha256('other secret'), 'hex'))$$,
    '23503', null, 'a device cannot sit in another app than its user'
);
select throws_ok(
    $$insert into public.devices (app_id, user_id, secret_hash) values ('00000000-0000-4000-8000-0000000000f1',
      '00000000-0000-4000-8000-00000000000a', '6f1ed002-ab5d-4c94-a4d9-1c3b4a3a0b7e')$$,
    '23514', null, 'secret_hash only takes a lowercase hex SHA-256, never a raw secret'
);
select throws_ok(
    $$insert into public.users (app_id, email) values ('00000000-0000-4000-8000-0000000000f1', 'A@Example.com')$$,
    '23505', null, 'an email is unique per app, case-insensitively'
);
select lives_ok(
    $$insert into public.users (app_id, email) values ('00000000-0000-4000-8000-0000000000f2', 'a@example.com')$$,
    'the same email may exist in another app'
);
select lives_ok(
    $$insert into public.users (app_id) select '00000000-0000-4000-8000-0000000000f1' from generate_series(1, 2)$$,
    'any number of users may have no email'
);
select throws_ok(
    $$insert into guestpass.api_keys (app_id, kind, key_hash, key_prefix)
      values ('00000000-0000-4000-8000-0000000000f1', 'admin', encode(sha256('k'), 'hex'), 'k')$$,
    '23514', null, 'an API key is publishable or secret'
);
select throws_ok(
    $$insert into guestpass.api_keys (app_id, kind, key_hash, key_prefix)
      values ('00000000-0000-4000-8000-0000000000f2', 'secret', encode(sha256('gp_pub_x'), 'hex'), 'gp_pub_')$$,
    '23505', null, 'an API key hash is unique across apps'
);

delete from guestpass.apps where id = '00000000-0000-4000-8000-0000000000f1';
select is(
    (select count(*)::int from public.users where app_id = '00000000-0000-4000-8000-0000000000f1')
    + (select count(*)::int from public.devices where app_id = '00000000-0000-4000-8000-0000000000f1')
    + (select count(*)::int from guestpass.api_keys where app_id = '00000000-0000-4000-8000-0000000000f1'),
    0,
    'deleting an app deletes its users, devices and API keys'
);
select is(
    (select count(*)::int from public.devices where app_id = '00000000-0000-4000-8000-0000000000f2'),
    1,
    'deleting an app leaves other apps'' devices alone'
);

select * from finish();
rollback;
