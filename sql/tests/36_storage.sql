-- storage: the tenant wall, the example app's photo policies, the secret key's reach, the limits trigger, the bytes'
-- bookkeeping (reservations, replaced and removed versions), account deletion and merge, and the grants
-- (repeatable/16_storage.sql, examples/repeatable/07_storage_photos.sql). Fixtures: apps X and Y, users A, B (X) and
-- C (Y), devices A1, A2, B1, C1 (lib/fixtures.sql). Uploads are written as the server writes them: a reservation by
-- guestpass_server.storage_upload_begin, then the row, in the caller's role.
begin;
select plan(33);

\ir lib/fixtures.sql
\ir lib/roles.sql
\ir lib/errors.sql

select from pg_temp.make_apps_xy();
select from pg_temp.make_users_abc();
insert into storage.buckets (app_id, id, name) values
    ('00000000-0000-4000-8000-0000000000f1', 'photos', 'photos'),
    ('00000000-0000-4000-8000-0000000000f2', 'photos', 'photos');

-- An upload as the server makes it, in the current role: reserve a version, then write the row with that version.
create function pg_temp.put(p_bucket text, p_name text, p_size bigint default 10, p_upsert boolean default false)
returns uuid
language plpgsql as $$
declare
    v_version text := gen_random_uuid()::text;
    v_id uuid;
begin
    perform guestpass_server.storage_upload_begin(p_bucket, v_version, 'file:/pgtap', 'image/png', null, 3600);
    if p_upsert then
        insert into storage.objects as o (bucket_id, name, owner, device_id, version, store, metadata)
        values (p_bucket, p_name, auth.uid(), auth.device_id(), v_version, 'file:/pgtap', jsonb_build_object('size', p_size))
        on conflict (app_id, bucket_id, name) do update set version = excluded.version, metadata = excluded.metadata
        returning o.id into v_id;
    else
        insert into storage.objects (bucket_id, name, owner, device_id, version, store, metadata)
        values (p_bucket, p_name, auth.uid(), auth.device_id(), v_version, 'file:/pgtap', jsonb_build_object('size', p_size));
    end if;
    return v_id;
end
$$;
grant execute on function pg_temp.put(text, text, bigint, boolean) to anon, authenticated, service_role;

-- 1. Supabase's helpers.
select is(storage.foldername('a/b/c.png'), array['a', 'b'], 'foldername: every segment but the last');
select is(storage.filename('a/b/c.png'), 'c.png', 'filename: the last segment');
select is(storage.extension('a/b.tar.gz'), 'gz', 'extension: after the last dot');

-- 2. The example photo policies: a user writes and reads only under its own id.
select from pg_temp.as_user('00000000-0000-4000-8000-00000000000a', p_device => '00000000-0000-4000-8000-0000000000a1');
select lives_ok($$ select pg_temp.put('photos', '00000000-0000-4000-8000-00000000000a/me.png') $$, 'A uploads under its own folder');
select throws_ok($$ select pg_temp.put('photos', '00000000-0000-4000-8000-00000000000b/x.png') $$, '42501', null,
    'A cannot upload under B''s folder');
select is((select owner from storage.objects where name like '%/me.png'), '00000000-0000-4000-8000-00000000000a'::uuid,
    'the owner is the caller');
select is((select owner_id from storage.objects where name like '%/me.png'), '00000000-0000-4000-8000-00000000000a',
    'owner_id is its text, as Supabase has it');
select is((select device_id from storage.objects where name like '%/me.png'), '00000000-0000-4000-8000-0000000000a1'::uuid,
    'device_id is the caller''s device');
select from pg_temp.as_user('00000000-0000-4000-8000-00000000000b', p_device => '00000000-0000-4000-8000-0000000000b1');
select is((select count(*)::int from storage.objects), 0, 'B sees none of A''s photos');
select results_eq($$ with gone as (delete from storage.objects returning 1) select count(*)::int from gone $$, array[0], 'B removes none');
select lives_ok($$ select pg_temp.put('photos', '00000000-0000-4000-8000-00000000000b/b.png') $$, 'B uploads its own');
reset role;

-- 3. The secret key reads every object of its app and nothing of another; another app's users see nothing.
select from pg_temp.as_service_role();
select is((select count(*)::int from storage.objects), 2, 'app X''s secret key sees both of its users'' photos');
reset role;
select from pg_temp.as_service_role('00000000-0000-4000-8000-0000000000f2');
select is((select count(*)::int from storage.objects), 0, 'app Y''s secret key sees none of app X''s objects');
select is((select count(*)::int from storage.buckets), 1, 'app Y sees its own bucket only');
select throws_ok(
    $$ insert into storage.objects (app_id, bucket_id, name, version, store) values
       ('00000000-0000-4000-8000-0000000000f1', 'photos', 'planted.png', gen_random_uuid()::text, 'file:/pgtap') $$,
    '42501', null, 'app Y''s secret key cannot write a row into app X, whatever it names');
reset role;
select from pg_temp.as_user('00000000-0000-4000-8000-00000000000c', '00000000-0000-4000-8000-0000000000f2');
select is((select count(*)::int from storage.objects), 0, 'a user of app Y sees nothing of app X, whatever the folder');
reset role;
select from pg_temp.as_anon();
select is((select count(*)::int from storage.objects), 0, 'anon sees nothing (no policy grants it)');
select throws_ok($$ select pg_temp.put('photos', 'anon.png') $$, '42501', null, 'anon cannot upload');
reset role;

-- 4. The bytes' bookkeeping: a row needs its reservation; a replaced or removed version is queued for the sweep.
select from pg_temp.as_user('00000000-0000-4000-8000-00000000000a', p_device => '00000000-0000-4000-8000-0000000000a1');
select throws_ok(
    $$ insert into storage.objects (bucket_id, name, owner, version, store) values
       ('photos', '00000000-0000-4000-8000-00000000000a/unreserved.png', auth.uid(), gen_random_uuid()::text, 'file:/pgtap') $$,
    'PT408', 'the upload''s reservation has expired', 'a row cannot name bytes no upload reserved');
reset role;
select is((select count(*)::int from guestpass.storage_sweep where kind = 'upload'), 0, 'written rows took their reservations');
create temporary table old_version as select version from storage.objects where name like '%/me.png';
select from pg_temp.as_user('00000000-0000-4000-8000-00000000000a', p_device => '00000000-0000-4000-8000-0000000000a1');
select isnt(pg_temp.put('photos', '00000000-0000-4000-8000-00000000000a/me.png', 20, true), null, 'A replaces its photo (upsert)');
reset role;
select is((select kind from guestpass.storage_sweep where key = '00000000-0000-4000-8000-0000000000f1/' || (select version from old_version)),
    'replaced', 'the replaced version is queued for deletion');

-- 5. Limits: exact per user, on new bytes only.
select is((select bytes || '/' || objects from guestpass.storage_usage where user_id = '00000000-0000-4000-8000-00000000000a'),
    '20/1', 'usage follows the replacement: 20 bytes in 1 object');
update guestpass.apps set storage_user_objects_limit = 1, storage_user_bytes_limit = 50 where id = '00000000-0000-4000-8000-0000000000f1';
select from pg_temp.as_user('00000000-0000-4000-8000-00000000000a', p_device => '00000000-0000-4000-8000-0000000000a1');
select throws_ok($$ select pg_temp.put('photos', '00000000-0000-4000-8000-00000000000a/second.png') $$,
    'PT413', 'storage quota exceeded', 'a second object passes the objects limit of 1');
select throws_ok($$ select pg_temp.put('photos', '00000000-0000-4000-8000-00000000000a/me.png', 51, true) $$,
    'PT413', 'storage quota exceeded', 'a replacement of 51 bytes passes the bytes limit of 50');
reset role;

-- 6. A public bucket's name is unique across apps (its URLs name no app).
update storage.buckets set public = true where app_id = '00000000-0000-4000-8000-0000000000f1' and id = 'photos';
select throws_ok(
    $$ update storage.buckets set public = true where app_id = '00000000-0000-4000-8000-0000000000f2' and id = 'photos' $$,
    '23505', null, 'a second app cannot make a public bucket of a name another app''s public bucket has');

-- 7. A merge moves the guest's objects to the account (and its usage); a deletion removes them and queues their bytes.
select ok(exists (select 1 from guestpass.user_references(null) where schema_name = 'storage' and table_name = 'objects'),
    'storage.objects.owner is a user reference: merges move it, prune keeps a guest who has objects');
update storage.objects set owner = '00000000-0000-4000-8000-00000000000b' where owner = '00000000-0000-4000-8000-00000000000a';
select is((select bytes || '/' || objects from guestpass.storage_usage where user_id = '00000000-0000-4000-8000-00000000000b'),
    '30/2', 'moved objects count for their new owner, past no limit (a merge never fails on it)');
delete from public.users where id = '00000000-0000-4000-8000-00000000000b';
select is((select count(*)::int from storage.objects where app_id = '00000000-0000-4000-8000-0000000000f1'), 0,
    'deleting the account deletes its objects');
select is((select count(*)::int from guestpass.storage_sweep where kind = 'replaced'), 3,
    'and queues the bytes of both objects (and the replaced version) for the sweep');

-- 8. A sweeper takes only its own store's keys.
insert into guestpass.storage_sweep (key, app_id, kind, store, not_before)
values ('00000000-0000-4000-8000-0000000000f1/00000000-0000-4000-8000-000000000099', '00000000-0000-4000-8000-0000000000f1',
        'replaced', 's3:http://elsewhere/bucket', now() - interval '1 minute');
select is(
    (select count(*)::int from guestpass_server.storage_sweep_claim('s3:http://elsewhere/bucket', 100, 60, true)), 1,
    'the other store''s sweeper takes its key');
select is(
    (select count(*)::int from guestpass_server.storage_sweep_claim('file:/pgtap', 100, 60, true)
     where key like '%000000000099'), 0,
    'and this store''s sweeper never does');

-- 9. Grants: the request roles reach the usage and the sweep only through the server's functions.
select is(
    (select count(*)::int from (values ('anon'), ('authenticated'), ('service_role')) as r (role)
     cross join (values ('guestpass.storage_usage'), ('guestpass.storage_sweep')) as t (name)
     where has_table_privilege(r.role, t.name, 'select, insert, update, delete')),
    0, 'no request role holds a privilege on storage_usage or storage_sweep');

select * from finish();
rollback;
