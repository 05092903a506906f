-- Example app: the Storage policies of its buckets, as an app writes them on Supabase (storage.objects, RLS).
-- Repeatable (re-applied whenever this file changes): drop and create policies only.
--
-- Buckets belong to one app each and are made with the app's secret key (`storage.create_bucket("photos")`); these
-- policies apply to every app's bucket of that name. GuestPass's own rules hold whatever they say: each request
-- sees only its app's buckets and objects, and the secret key may do anything inside its app (16_storage.sql).
--
-- photos: a guest (or any signed-in user) writes, reads, replaces and removes only under `<its user id>/…`, the
-- seed app's `StorageService.uploadImage` flow; its backend reads any of its users' photos with the secret key.
-- device-notes: only the device that uploaded an object reads or removes it (auth.device_id(), which Supabase cannot
-- offer), under the same user folder rule.

drop policy if exists photos_select_own on storage.objects;
create policy photos_select_own on storage.objects for select to authenticated
    using (bucket_id = 'photos' and (storage.foldername(name))[1] = (select auth.uid())::text);

drop policy if exists photos_insert_own on storage.objects;
create policy photos_insert_own on storage.objects for insert to authenticated
    with check (bucket_id = 'photos' and (storage.foldername(name))[1] = (select auth.uid())::text);

drop policy if exists photos_update_own on storage.objects;
create policy photos_update_own on storage.objects for update to authenticated
    using (bucket_id = 'photos' and (storage.foldername(name))[1] = (select auth.uid())::text)
    with check (bucket_id = 'photos' and (storage.foldername(name))[1] = (select auth.uid())::text);

drop policy if exists photos_delete_own on storage.objects;
create policy photos_delete_own on storage.objects for delete to authenticated
    using (bucket_id = 'photos' and (storage.foldername(name))[1] = (select auth.uid())::text);

drop policy if exists device_notes_insert on storage.objects;
create policy device_notes_insert on storage.objects for insert to authenticated
    with check (bucket_id = 'device-notes' and (storage.foldername(name))[1] = (select auth.uid())::text
                and device_id = (select auth.device_id()));

drop policy if exists device_notes_select on storage.objects;
create policy device_notes_select on storage.objects for select to authenticated
    using (bucket_id = 'device-notes' and device_id = (select auth.device_id()));

drop policy if exists device_notes_delete on storage.objects;
create policy device_notes_delete on storage.objects for delete to authenticated
    using (bucket_id = 'device-notes' and device_id = (select auth.device_id()));
