-- create the internal guestpass schema with the tenants (apps) and their API keys
-- This schema is never exposed to clients: app-facing roles get no usage on it and no grants on its tables.
-- Row-level security is enabled and forced on each table at birth, with no policies, so even a future grant
-- by mistake reads nothing. Keys are stored only as a hex SHA-256; the key itself is shown once and forgotten.

create schema if not exists guestpass;

comment on schema guestpass is
    'GuestPass internals: apps (tenants), API keys and server-side functions. Never exposed to clients.';

create table if not exists guestpass.apps (
    id uuid not null default gen_random_uuid(),
    name text not null,
    settings jsonb not null default '{}',
    created_at timestamptz not null default now(),
    constraint apps_pkey primary key (id),
    constraint apps_name_check check (name <> ''),
    constraint apps_settings_check check (jsonb_typeof(settings) = 'object')
);

comment on table guestpass.apps is
    'GuestPass: one row per app (tenant). Each app has its own API keys, settings, users and devices.';

alter table guestpass.apps enable row level security;
alter table guestpass.apps force row level security;

create table if not exists guestpass.api_keys (
    id uuid not null default gen_random_uuid(),
    app_id uuid not null,
    kind text not null,
    key_hash text not null,
    key_prefix text not null,
    created_at timestamptz not null default now(),
    revoked_at timestamptz,
    constraint api_keys_pkey primary key (id),
    constraint api_keys_app_id_fkey foreign key (app_id) references guestpass.apps (id) on delete cascade,
    constraint api_keys_kind_check check (kind in ('publishable', 'secret')),
    constraint api_keys_key_hash_key unique (key_hash),
    constraint api_keys_key_hash_check check (key_hash ~ '^[0-9a-f]{64}$')
);

comment on table guestpass.api_keys is
    'GuestPass: API keys per app. publishable = anon role, secret = service_role. key_hash is the lowercase hex '
    'SHA-256 of the key (the key is never stored); key_prefix is its first characters, for display. '
    'A key with revoked_at set is refused.';

create index if not exists api_keys_app_id_idx on guestpass.api_keys (app_id);

alter table guestpass.api_keys enable row level security;
alter table guestpass.api_keys force row level security;
