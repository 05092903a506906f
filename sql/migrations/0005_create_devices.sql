-- create public.devices, the devices a user signs in from, identified by a hash of a client-held secret
-- The client keeps a random device secret in its Keychain; only its hex SHA-256 is stored, unique per app, so the
-- same app + secret always finds the same device (and guest). `id` is the public device id that goes into tokens
-- as the device_id claim. Row-level security is enabled and forced here; grants and policies come in 0006.

create table if not exists public.devices (
    id uuid not null default gen_random_uuid(),
    app_id uuid not null,
    user_id uuid not null,
    secret_hash text not null,
    model text,
    os_version text,
    app_version text,
    build_number text,
    is_simulator boolean not null default false,
    created_at timestamptz not null default now(),
    last_seen_at timestamptz not null default now(),
    constraint devices_pkey primary key (id),
    constraint devices_app_id_fkey foreign key (app_id) references guestpass.apps (id) on delete cascade,
    -- Composite, so a device and its user can never sit in different apps.
    constraint devices_user_id_fkey foreign key (user_id, app_id)
        references public.users (id, app_id) on delete cascade,
    constraint devices_app_secret_key unique (app_id, secret_hash),
    constraint devices_secret_hash_check check (secret_hash ~ '^[0-9a-f]{64}$')
);

comment on table public.devices is
    'GuestPass: a user''s devices. secret_hash is the lowercase hex SHA-256 of the client-held device secret (the '
    'secret is never stored); id is the public device id used as the device_id claim. Clients may only read '
    'their own devices; the server writes through SECURITY DEFINER functions.';

create index if not exists devices_user_id_idx on public.devices (user_id);

alter table public.devices enable row level security;
alter table public.devices force row level security;
