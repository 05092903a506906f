-- constraints: what the core tables refuse whoever writes to them (device secrets unique per app and one per device,
-- in guestpass.device_secrets, a device always in its user's app, only hashes stored, email unique per app), and that
-- deleting a device removes its secret and deleting an app everything it owns.
begin;
select plan(15);

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
    $$select pg_temp.make_device(gen_random_uuid(), '00000000-0000-4000-8000-00000000000a', 'secret')$$,
    '23505', null, 'a device secret is unique per app (device_secrets_app_secret_key)'
);
select lives_ok(
    $$select pg_temp.make_device(gen_random_uuid(), '00000000-0000-4000-8000-00000000000c', 'secret')$$,
    'the same device secret may exist in another app'
);
select throws_ok(
    $$insert into public.devices (app_id, user_id) values ('00000000-0000-4000-8000-0000000000f2',
      '00000000-0000-4000-8000-00000000000a')$$,
    '23503', null, 'a device cannot sit in another app than its user'
);
select throws_ok(
    $$with d as (
          insert into public.devices (app_id, user_id)
          values ('00000000-0000-4000-8000-0000000000f1', '00000000-0000-4000-8000-00000000000a') returning id, app_id
      )
      insert into guestpass.device_secrets (device_id, app_id, secret_hash)
      select d.id, d.app_id, '6f1ed002-ab5d-4c94-a4d9-1c3b4a3a0b7e' from d$$,
    '23514', null, 'secret_hash only takes a lowercase hex SHA-256, never a raw secret'
);
select throws_ok(
    $$insert into guestpass.device_secrets (device_id, app_id, secret_hash)
      values (gen_random_uuid(), '00000000-0000-4000-8000-0000000000f1', encode(sha256('no device'), 'hex'))$$,
    '23503', null, 'a device secret belongs to an existing device'
);
select throws_ok(
    $$insert into guestpass.device_secrets (device_id, app_id, secret_hash)
      select s.device_id, s.app_id, encode(sha256('second secret'), 'hex') from guestpass.device_secrets as s
      where s.app_id = '00000000-0000-4000-8000-0000000000f1'$$,
    '23505', null, 'a device has one secret (device_secrets_pkey)'
);
delete from public.devices where app_id = '00000000-0000-4000-8000-0000000000f2';
select is(
    (select count(*)::int from guestpass.device_secrets where app_id = '00000000-0000-4000-8000-0000000000f2'),
    0,
    'deleting a device deletes its secret'
);
select lives_ok(
    $$select pg_temp.make_device(gen_random_uuid(), '00000000-0000-4000-8000-00000000000c', 'secret')$$,
    'and frees the secret for a new device'
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
    + (select count(*)::int from guestpass.device_secrets where app_id = '00000000-0000-4000-8000-0000000000f1')
    + (select count(*)::int from guestpass.api_keys where app_id = '00000000-0000-4000-8000-0000000000f1'),
    0,
    'deleting an app deletes its users, devices, device secrets and API keys'
);
select is(
    (select count(*)::int from public.devices where app_id = '00000000-0000-4000-8000-0000000000f2'),
    1,
    'deleting an app leaves other apps'' devices alone'
);

select * from finish();
rollback;
