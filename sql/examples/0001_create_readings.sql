-- create public.readings, the example app's face, palm and coffee readings, each owned by one user of one app
-- An example of an app's own table on GuestPass: owner columns filled from the verified claims by default, a
-- composite foreign key so a reading always sits in its user's app, row-level security enabled and forced, policies
-- per command and per role. authenticated reads and writes only its own rows in its own app; service_role (the app's
-- backend, holding the secret key) reads and writes every row of its own app and no other; anon gets nothing.
-- service_role gets select, insert, update and delete but not TRUNCATE, REFERENCES or TRIGGER: TRUNCATE ignores
-- row-level security, so one app's backend could empty every app's readings.

create table if not exists public.readings (
    id uuid not null default gen_random_uuid(),
    app_id uuid not null default auth.app_id(),
    user_id uuid not null default auth.uid(),
    kind text not null,
    content jsonb not null default '{}',
    created_at timestamptz not null default now(),
    constraint readings_pkey primary key (id),
    -- Composite, so a reading and its user can never sit in different apps; deleting the user deletes its readings.
    constraint readings_user_id_fkey foreign key (user_id, app_id)
        references public.users (id, app_id) on delete cascade,
    constraint readings_kind_check check (kind in ('face', 'palm', 'coffee')),
    constraint readings_content_check check (jsonb_typeof(content) = 'object')
);

comment on table public.readings is
    'Example app: a user''s readings (kind face, palm or coffee; content is a JSON object). app_id and user_id '
    'default to the caller''s claims. A user sees and changes only its own readings, its app''s backend '
    '(service_role) those of its app.';

-- The owner columns the policies filter on: per user (newest first, as listed), and per app for service_role.
create index if not exists readings_user_id_created_at_idx on public.readings (user_id, created_at desc);
create index if not exists readings_app_id_idx on public.readings (app_id);

alter table public.readings enable row level security;
alter table public.readings force row level security;

-- Grants: the first wall. Clients may change only kind and content; never the owner columns.

grant select, insert, delete on table public.readings to authenticated;
grant update (kind, content) on table public.readings to authenticated;
grant select, insert, update, delete on table public.readings to service_role;

-- Policies: the second wall, per command and role.

drop policy if exists readings_select_own on public.readings;
create policy readings_select_own on public.readings for select to authenticated
    using (user_id = (select auth.uid()) and app_id = (select auth.app_id()));

comment on policy readings_select_own on public.readings is 'A user reads only its own readings, in its own app.';

drop policy if exists readings_insert_own on public.readings;
create policy readings_insert_own on public.readings for insert to authenticated
    with check (user_id = (select auth.uid()) and app_id = (select auth.app_id()));

comment on policy readings_insert_own on public.readings is
    'A user adds readings only as itself, in its own app (anything else is 42501).';

drop policy if exists readings_update_own on public.readings;
create policy readings_update_own on public.readings for update to authenticated
    using (user_id = (select auth.uid()) and app_id = (select auth.app_id()))
    with check (user_id = (select auth.uid()) and app_id = (select auth.app_id()));

comment on policy readings_update_own on public.readings is 'A user changes only its own readings, in its own app.';

drop policy if exists readings_delete_own on public.readings;
create policy readings_delete_own on public.readings for delete to authenticated
    using (user_id = (select auth.uid()) and app_id = (select auth.app_id()));

comment on policy readings_delete_own on public.readings is 'A user deletes only its own readings, in its own app.';

drop policy if exists readings_select_app on public.readings;
create policy readings_select_app on public.readings for select to service_role
    using (app_id = (select auth.app_id()));

comment on policy readings_select_app on public.readings is 'An app''s backend reads every reading of its app only.';

drop policy if exists readings_insert_app on public.readings;
create policy readings_insert_app on public.readings for insert to service_role
    with check (app_id = (select auth.app_id()));

comment on policy readings_insert_app on public.readings is
    'An app''s backend adds readings only in its own app (and, by the foreign key, only for that app''s users).';

drop policy if exists readings_update_app on public.readings;
create policy readings_update_app on public.readings for update to service_role
    using (app_id = (select auth.app_id()))
    with check (app_id = (select auth.app_id()));

comment on policy readings_update_app on public.readings is
    'An app''s backend changes readings of its app only and cannot move one to another app.';

drop policy if exists readings_delete_app on public.readings;
create policy readings_delete_app on public.readings for delete to service_role
    using (app_id = (select auth.app_id()));

comment on policy readings_delete_app on public.readings is 'An app''s backend deletes readings of its app only.';
