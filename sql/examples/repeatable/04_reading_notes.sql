-- public.reading_notes: row-level security, grants and policies per command and per role, as public.readings
-- (01_readings.sql): authenticated reads and writes only its own notes in its own app, and attaches a note only to one
-- of its own readings; service_role (the app's backend) reads and writes the notes of its app only, each on a reading
-- of the note's user in that app; anon gets nothing.

alter table public.reading_notes enable row level security, force row level security;

-- Grants: the first wall. Clients may change only the body; never the owner columns or the reading.

grant select, insert, delete on table public.reading_notes to authenticated;
grant update (body) on table public.reading_notes to authenticated;
grant select, insert, update, delete on table public.reading_notes to service_role;

-- Policies: the second wall, per command and role. The reading checks read public.readings under the caller's own
-- policies (readings_select_own, readings_select_app), so they can only ever find a reading the caller may see.

drop policy if exists reading_notes_select_own on public.reading_notes;
create policy reading_notes_select_own on public.reading_notes for select to authenticated
    using (user_id = (select auth.uid()) and app_id = (select auth.app_id()));

comment on policy reading_notes_select_own on public.reading_notes is 'A user reads only its own notes, in its own app.';

drop policy if exists reading_notes_insert_own on public.reading_notes;
create policy reading_notes_insert_own on public.reading_notes for insert to authenticated
    with check (
        user_id = (select auth.uid()) and app_id = (select auth.app_id())
        and exists (
            select 1 from public.readings as r
            where r.id = reading_notes.reading_id and r.user_id = (select auth.uid()) and r.app_id = (select auth.app_id())
        )
    );

comment on policy reading_notes_insert_own on public.reading_notes is
    'A user adds notes only as itself, in its own app, and only to one of its own readings (anything else is 42501).';

drop policy if exists reading_notes_update_own on public.reading_notes;
create policy reading_notes_update_own on public.reading_notes for update to authenticated
    using (user_id = (select auth.uid()) and app_id = (select auth.app_id()))
    with check (user_id = (select auth.uid()) and app_id = (select auth.app_id()));

comment on policy reading_notes_update_own on public.reading_notes is
    'A user changes only its own notes, in its own app (only the body: the reading is not granted).';

drop policy if exists reading_notes_delete_own on public.reading_notes;
create policy reading_notes_delete_own on public.reading_notes for delete to authenticated
    using (user_id = (select auth.uid()) and app_id = (select auth.app_id()));

comment on policy reading_notes_delete_own on public.reading_notes is
    'A user deletes only its own notes, in its own app.';

drop policy if exists reading_notes_select_app on public.reading_notes;
create policy reading_notes_select_app on public.reading_notes for select to service_role
    using (app_id = (select auth.app_id()));

comment on policy reading_notes_select_app on public.reading_notes is
    'An app''s backend reads every note of its app only.';

drop policy if exists reading_notes_insert_app on public.reading_notes;
create policy reading_notes_insert_app on public.reading_notes for insert to service_role
    with check (
        app_id = (select auth.app_id())
        and exists (
            select 1 from public.readings as r
            where r.id = reading_notes.reading_id and r.user_id = reading_notes.user_id and r.app_id = (select auth.app_id())
        )
    );

comment on policy reading_notes_insert_app on public.reading_notes is
    'An app''s backend adds notes only in its own app, each on a reading of the note''s user in that app.';

drop policy if exists reading_notes_update_app on public.reading_notes;
create policy reading_notes_update_app on public.reading_notes for update to service_role
    using (app_id = (select auth.app_id()))
    with check (
        app_id = (select auth.app_id())
        and exists (
            select 1 from public.readings as r
            where r.id = reading_notes.reading_id and r.user_id = reading_notes.user_id and r.app_id = (select auth.app_id())
        )
    );

comment on policy reading_notes_update_app on public.reading_notes is
    'An app''s backend changes notes of its app only, cannot move one to another app, and keeps each on a reading of '
    'the note''s user.';

drop policy if exists reading_notes_delete_app on public.reading_notes;
create policy reading_notes_delete_app on public.reading_notes for delete to service_role
    using (app_id = (select auth.app_id()));

comment on policy reading_notes_delete_app on public.reading_notes is
    'An app''s backend deletes notes of its app only.';
