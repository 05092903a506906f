-- create public.readings, the example app's face, palm and coffee readings, each owned by one user of one app
-- An example of an app's own table on GuestPass: owner columns filled from the verified claims by default, and a
-- composite foreign key so a reading always sits in its user's app. Its row-level security, grants, policies and
-- functions are in repeatable/01_readings.sql.

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
