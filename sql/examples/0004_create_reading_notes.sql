-- create public.reading_notes, notes on a reading: the example app's child table, for the table API's embedding
-- A note belongs to one reading (reading_notes_reading_id_fkey, the foreign key the table API follows to embed notes
-- in a reading, select=*,reading_notes(*), or the reading in a note) and, like the reading, to one user of one app
-- (owner columns filled from the verified claims by default, a composite foreign key to the user in its app).
-- Its row-level security, grants and policies are in repeatable/04_reading_notes.sql. Deleting a reading (or the
-- user) deletes its notes.

create table if not exists public.reading_notes (
    id uuid not null default gen_random_uuid(),
    reading_id uuid not null,
    app_id uuid not null default auth.app_id(),
    user_id uuid not null default auth.uid(),
    body text not null,
    created_at timestamptz not null default now(),
    constraint reading_notes_pkey primary key (id),
    constraint reading_notes_reading_id_fkey foreign key (reading_id) references public.readings (id) on delete cascade,
    -- Composite, so a note and its user can never sit in different apps; deleting the user deletes its notes.
    constraint reading_notes_user_id_fkey foreign key (user_id, app_id)
        references public.users (id, app_id) on delete cascade,
    constraint reading_notes_body_check check (char_length(body) <= 1000)
);

comment on table public.reading_notes is
    'Example app: notes on a reading (body up to 1000 characters), each on one of its user''s readings. app_id and '
    'user_id default to the caller''s claims. A user sees and changes only its own notes, its app''s backend '
    '(service_role) those of its app. Deleting the reading deletes its notes.';

-- The foreign key's column (embedding, and the cascade from a deleted reading), and the owner columns the policies
-- filter on: per user, and per app for service_role.
create index if not exists reading_notes_reading_id_idx on public.reading_notes (reading_id);
create index if not exists reading_notes_user_id_idx on public.reading_notes (user_id);
create index if not exists reading_notes_app_id_idx on public.reading_notes (app_id);
