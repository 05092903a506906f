-- create public.users, one row per guest or signed-in user of an app, and keep updated_at current
-- Email is optional (guests have none) and unique per app only: a global unique key would tell one tenant that an
-- address exists in another. Row-level security is enabled and forced here; grants and policies come in 0006.

create table if not exists public.users (
    id uuid not null default gen_random_uuid(),
    app_id uuid not null,
    email text,
    is_anonymous boolean not null default true,
    onboarding_completed boolean not null default false,
    timezone text not null default 'UTC',
    language text,
    notification_enabled boolean not null default false,
    user_metadata jsonb not null default '{}',
    app_metadata jsonb not null default '{}',
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now(),
    constraint users_pkey primary key (id),
    -- Lets public.devices reference (user_id, app_id), so a device always belongs to its user's app.
    constraint users_id_app_id_key unique (id, app_id),
    constraint users_app_id_fkey foreign key (app_id) references guestpass.apps (id) on delete cascade,
    constraint users_user_metadata_check check (jsonb_typeof(user_metadata) = 'object'),
    constraint users_app_metadata_check check (jsonb_typeof(app_metadata) = 'object')
);

comment on table public.users is
    'GuestPass: users of an app, anonymous guests first (is_anonymous). Clients read their own row and may change '
    'only onboarding_completed, timezone, language and notification_enabled. user_metadata is client-editable '
    'data; authorization data belongs in app_metadata.';

create unique index if not exists users_app_email_key on public.users (app_id, lower(email)) where email is not null;
create index if not exists users_app_id_idx on public.users (app_id);

create or replace function guestpass.set_updated_at()
returns trigger
language plpgsql
set search_path = ''
as $$
begin
    new.updated_at := pg_catalog.now();
    return new;
end
$$;

comment on function guestpass.set_updated_at() is
    'GuestPass: BEFORE UPDATE trigger that sets updated_at to the transaction time.';

create or replace trigger users_set_updated_at
    before update on public.users
    for each row
    execute function guestpass.set_updated_at();

alter table public.users enable row level security;
alter table public.users force row level security;
