-- create public.tags and public.reading_tags, the example app's many-to-many: a user's own tags on its own readings
-- reading_tags is a junction table: a foreign key to the reading and one to the tag, both inside its primary key, so
-- the table API embeds tags in a reading (select=*,tags(name)) and readings in a tag through it, as PostgREST does.
-- Every row belongs to one user of one app (owner columns filled from the verified claims by default, a composite
-- foreign key to the user in its app). Row-level security, grants and policies are in repeatable/06_tags.sql.
-- Deleting a reading or a tag (or the user) deletes its links.

create table public.tags (
    id uuid not null default gen_random_uuid(),
    app_id uuid not null default auth.app_id(),
    user_id uuid not null default auth.uid(),
    name text not null,
    constraint tags_pkey primary key (id),
    constraint tags_user_id_name_key unique (user_id, name),
    constraint tags_user_id_fkey foreign key (user_id, app_id) references public.users (id, app_id) on delete cascade,
    constraint tags_name_check check (char_length(name) between 1 and 40)
);

comment on table public.tags is
    'Example app: a user''s tags (names unique per user, 1 to 40 characters), put on its readings through '
    'public.reading_tags. A user sees and changes only its own tags, its app''s backend (service_role) those of its app.';

create index tags_app_id_idx on public.tags (app_id);

create table public.reading_tags (
    reading_id uuid not null,
    tag_id uuid not null,
    app_id uuid not null default auth.app_id(),
    user_id uuid not null default auth.uid(),
    created_at timestamptz not null default now(),
    constraint reading_tags_pkey primary key (reading_id, tag_id),
    constraint reading_tags_reading_id_fkey foreign key (reading_id) references public.readings (id) on delete cascade,
    constraint reading_tags_tag_id_fkey foreign key (tag_id) references public.tags (id) on delete cascade,
    constraint reading_tags_user_id_fkey foreign key (user_id, app_id) references public.users (id, app_id) on delete cascade
);

comment on table public.reading_tags is
    'Example app: a tag on a reading (the junction of readings and tags), both its user''s own in its app.';

-- The primary key serves reading → tags; these serve tag → readings and the owner columns the policies filter on.
create index reading_tags_tag_id_idx on public.reading_tags (tag_id);
create index reading_tags_user_id_idx on public.reading_tags (user_id);
create index reading_tags_app_id_idx on public.reading_tags (app_id);
